package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/strictjson"
	"github.com/coderunner/coderunner/interp"
	"github.com/coderunner/coderunner/invoke"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/multifile"
	"github.com/coderunner/coderunner/session"
)

// tracked remembers the error of the body it reads, so that a body cut at
// MaxBytesReader's limit is told apart from malformed JSON whatever the
// decoder made of it.
type tracked struct {
	r   io.Reader
	err error
}

func (t *tracked) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		t.err = err
	}
	return n, err
}

// body caps r's body and returns it tracked.
func (s *Server) body(w http.ResponseWriter, r *http.Request) *tracked {
	r.Body = http.MaxBytesReader(w, r.Body, s.maxBody)
	return &tracked{r: r.Body}
}

// tooLarge answers 413 when the body went over its limit, and 408 when
// it did not arrive within the read timeout (the connection is closed
// after the answer, since the rest of the body is not read).
func (s *Server) tooLarge(w http.ResponseWriter, r *http.Request, t *tracked) bool {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(t.err, &mbe):
		writeError(w, r, http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
			fmt.Sprintf("body: more than %d bytes", mbe.Limit))
		return true
	case bodyTimedOut(t.err):
		writeError(w, r, http.StatusRequestTimeout, CodeRequestTimeout,
			fmt.Sprintf("body: not received within %s (server.read_timeout)", s.rt))
		return true
	}
	return false
}

// handleExecute is POST /execute: a handler or a script. The execution
// does not depend on the client's connection: once accepted it runs to its
// end (or to the shutdown) and its result goes to the control plane.
func (s *Server) handleExecute(w http.ResponseWriter, r *http.Request) {
	body := s.body(w, r)
	req, err := invoke.DecodeRequest(body)
	if err != nil {
		if s.tooLarge(w, r, body) {
			return
		}
		status, code := http.StatusBadRequest, CodeBadRequest
		if errors.Is(err, invoke.ErrTooLarge) {
			status, code = http.StatusRequestEntityTooLarge, CodePayloadTooLarge
		}
		writeError(w, r, status, code, err.Error())
		return
	}
	if s.spool.refuse(w, r) {
		return
	}
	held, ok := s.hold(w, r, 1)
	if !ok {
		return
	}
	defer held()
	done, ok := s.admit(w, r)
	if !ok {
		return
	}
	defer done()

	ctx := s.runCtx
	release, err := s.gate.acquire(ctx)
	switch {
	case errors.Is(err, errQueueFull):
		s.metrics.refused.Inc()
		s.queueFull(w, r)
		return
	case err != nil:
		// Shut down while it waited: it is owed a result all the same.
		res := invoke.CrashedResult(req.ExecutionID, fmt.Sprintf("execution interrupted: %v", context.Cause(ctx)))
		s.finishExecute(w, r, res, 0)
		return
	}
	start := time.Now()
	stopHeartbeats := func() {}
	if s.rep != nil {
		stopHeartbeats = s.rep.Heartbeat(req.ExecutionID)
	}
	res := s.exec.Run(ctx, req)
	stopHeartbeats()
	release()
	s.finishExecute(w, r, res, time.Since(start))
}

// finishExecute counts, reports and answers one /execute result. The
// result is handed to the reporter, which stores and sends it in the
// background: the answer never waits for the control plane.
func (s *Server) finishExecute(w http.ResponseWriter, r *http.Request, res *invoke.Result, took time.Duration) {
	s.metrics.finished("execute", string(res.Status), res.Reason, took)
	if s.rep != nil {
		if err := s.rep.Result(res.ExecutionID, res); err != nil {
			s.log.Error("unable to report a result", "event", "report_failed", "execution_id", res.ExecutionID,
				"request_id", requestID(r.Context()), "error", err)
		}
	}
	writeJSON(w, http.StatusOK, res)
}

// runRequest is the /v1/run body: the fields every front end takes, and
// the limits as an object (timeout standing for limits.time_limit).
type runRequest struct {
	execute.RunFields
	Limits execute.ExecutionLimits `json:"limits"`
}

// handleRun is POST /v1/run: one program, its result in the response.
func (s *Server) handleRun(w http.ResponseWriter, r *http.Request) {
	body := s.body(w, r)
	var rr runRequest
	if err := decodeJSON(body, &rr); err != nil {
		if !s.tooLarge(w, r, body) {
			writeError(w, r, http.StatusBadRequest, CodeBadRequest, err.Error())
		}
		return
	}
	req, viaTimeout, ok := s.runOf(w, r, &rr)
	if !ok {
		return
	}
	held, ok := s.hold(w, r, 1)
	if !ok {
		return
	}
	defer held()
	ctx, release, ok := s.clientRun(w, r, s.runner != nil, "/v1/run")
	if !ok {
		return
	}
	defer release()
	if wantsEventStream(r) {
		s.streamRun(ctx, w, r, req, viaTimeout)
		return
	}
	start := time.Now()
	res, err := s.runner.Execute(ctx, req)
	switch {
	case ctx.Err() != nil:
		s.cancelled(w, r)
	case err != nil:
		s.refuseRun(w, r, err, viaTimeout)
	default:
		s.metrics.finished("run", string(res.Status), runReason(res), time.Since(start))
		writeJSON(w, http.StatusOK, res)
	}
}

// runOf makes the executor's request of a /v1/run body (of /v1/run and
// /v1/run/ws alike), its time limit taken from timeout when limits has
// none, and checks what can be checked before a slot is taken; ok is
// false when it answered w with the refusal. viaTimeout says the time
// limit came from timeout, for the errors that name it.
func (s *Server) runOf(w http.ResponseWriter, r *http.Request, rr *runRequest) (req execute.Request, viaTimeout, ok bool) {
	req, viaTimeout = rr.Request(rr.Limits), rr.Timeout != nil
	if viaTimeout && req.Limits.TimeLimit == 0 {
		req.Limits.TimeLimit = *rr.Timeout
	}
	if err := precheckRun(req); err != nil {
		s.refuseRun(w, r, err, viaTimeout)
		return req, viaTimeout, false
	}
	if rr.SessionTTLSeconds != nil {
		ttl, err := s.sessionTTL(*rr.SessionTTLSeconds, req.SessionID != nil)
		if err != nil {
			writeError(w, r, http.StatusBadRequest, CodeBadRequest, "session_ttl_seconds: "+err.Error())
			return req, viaTimeout, false
		}
		req.SessionTTL = ttl
	}
	return req, viaTimeout, true
}

// sessionTTL checks a request's session_ttl_seconds.
func (s *Server) sessionTTL(secs int64, hasSession bool) (time.Duration, error) {
	switch {
	case !hasSession:
		return 0, errors.New("needs a session_id: it is the idle timeout of that session")
	case secs < 1:
		return 0, fmt.Errorf("%d must be at least 1", secs)
	case s.sessions != nil && secs > int64(s.sessions.MaxIdleTimeout()/time.Second):
		return 0, fmt.Errorf("%d is more than the %d this server allows (sessions.max_idle_timeout)",
			secs, int64(s.sessions.MaxIdleTimeout()/time.Second))
	case secs > int64(math.MaxInt64/time.Second):
		return 0, fmt.Errorf("%d is out of range", secs)
	}
	return time.Duration(secs) * time.Second, nil
}

// runReason is the failure reason of a result, for the metrics; empty
// for a success.
func runReason(res *execute.Result) string {
	switch {
	case res.Status == execute.StatusSuccess:
		return ""
	case res.Verdict != "":
		return string(res.Verdict)
	}
	return string(res.Status)
}

// precheckRun refuses what can be refused before taking a slot; the
// language is checked by the runner.
func precheckRun(req execute.Request) error {
	if _, err := execute.CheckRequest(req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Language) == "" {
		return fmt.Errorf("%w: language is required", lang.ErrUnknownLanguage)
	}
	switch req.Mode {
	case "":
		return nil
	case execute.ModeInterpreter:
		if req.SessionID == nil {
			return fmt.Errorf("%w: %q needs a session_id: the session keeps the interpreter", execute.ErrInvalidMode, req.Mode)
		}
		return interp.Check(req)
	}
	return fmt.Errorf("%w %q: it is either absent or %q", execute.ErrInvalidMode, req.Mode, execute.ModeInterpreter)
}

// refuseRun answers a refused /v1/run request naming the field.
func (s *Server) refuseRun(w http.ResponseWriter, r *http.Request, err error, viaTimeout bool) {
	var le *execute.LimitError
	var oe *lang.OptionError
	var fe *multifile.Error
	status, code, field := http.StatusBadRequest, CodeBadRequest, ""
	switch {
	case errors.As(err, &oe):
		field, err = oe.Field, errors.New(oe.Reason)
	case errors.As(err, &fe):
		field, err = fe.Field, errors.New(fe.Reason)
	case errors.Is(err, execute.ErrInvalidArtifacts):
		field = "artifacts"
	case errors.Is(err, execute.ErrInvalidMode):
		field = "mode"
	case errors.As(err, &le):
		field = "limits." + le.Field
		if le.Field == "time_limit" && viaTimeout {
			field = "timeout"
		}
		err = errors.New(le.Reason)
	case errors.Is(err, execute.ErrEmptyCode):
		field = "code"
	case errors.Is(err, execute.ErrCodeTooLarge):
		status, code, field = http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "code"
	case errors.Is(err, execute.ErrStdinTooLarge):
		status, code, field = http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "stdin"
	case errors.Is(err, execute.ErrInvalidSessionID), errors.Is(err, session.ErrDisabled):
		field = "session_id"
	case errors.Is(err, session.ErrInvalidTTL):
		field = "session_ttl_seconds"
	case errors.Is(err, session.ErrExpired):
		status, code, field = http.StatusNotFound, CodeSessionExpired, "session_id"
	case errors.Is(err, session.ErrNotFound):
		status, code, field = http.StatusNotFound, CodeNotFound, "session_id"
	case errors.Is(err, session.ErrTooManySessions):
		s.sessionLimited(w, r, err, "session_id")
		return
	case errors.Is(err, session.ErrSessionFull), errors.Is(err, session.ErrDiskFull):
		status, code, field = http.StatusInsufficientStorage, CodeStorageFull, "session_id"
	case errors.Is(err, session.ErrClosed):
		status, code, field = http.StatusServiceUnavailable, CodeShuttingDown, "session_id"
	case errors.Is(err, lang.ErrUnknownLanguage):
		field = "language"
	default:
		s.log.Error("run failed", "event", "run_failed", "request_id", requestID(r.Context()), "error", err)
		writeError(w, r, http.StatusInternalServerError, CodeInternal, "internal error; quote request id "+requestID(r.Context()))
		return
	}
	writeError(w, r, status, code, field+": "+err.Error())
}

// clientRun admits a request to endpoint whose work ends when its client
// leaves or the server drains, and takes a slot for it; configured false
// answers that the server does not serve endpoint. ok is false when the
// request was answered already.
func (s *Server) clientRun(w http.ResponseWriter, r *http.Request, configured bool, endpoint string) (ctx context.Context, release func(), ok bool) {
	if !configured {
		writeError(w, r, http.StatusServiceUnavailable, CodeUnavailable, endpoint+" is not configured on this server")
		return nil, nil, false
	}
	ctx, release, err := s.enter(r.Context())
	switch {
	case err == nil:
		return ctx, release, true
	case errors.Is(err, errQueueFull):
		s.queueFull(w, r)
	case errors.Is(err, errShuttingDown):
		writeError(w, r, http.StatusServiceUnavailable, CodeShuttingDown, err.Error())
	case errors.Is(err, errStarting):
		writeError(w, r, http.StatusServiceUnavailable, CodeUnavailable, err.Error())
	default:
		s.cancelled(w, r)
	}
	return nil, nil, false
}

// Errors of enter besides errQueueFull and the context's.
var (
	errShuttingDown = errors.New("the executor is shutting down")
	errStarting     = errors.New("the executor is starting")
)

// enter admits work whose context is parent, ended too when the server
// drains, and takes a slot for it, waiting in the queue. release must be
// called when the work is done. It fails with errStarting or
// errShuttingDown when the server takes no executions, errQueueFull when
// there is no room, or the context's error when it ends while waiting.
func (s *Server) enter(parent context.Context) (ctx context.Context, release func(), err error) {
	switch s.countIn() {
	case stateDraining:
		return nil, nil, errShuttingDown
	case stateStarting:
		return nil, nil, errStarting
	}
	ctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(s.runCtx, func() { cancel(context.Cause(s.runCtx)) })
	free, err := s.gate.acquire(ctx)
	if err != nil {
		stop()
		cancel(nil)
		s.inflight.Done()
		if errors.Is(err, errQueueFull) {
			s.metrics.refused.Inc()
			err = fmt.Errorf("%w: all %d running slots are busy and %d requests are waiting; retry later", err, s.slots, s.queue)
		} else if s.runCtx.Err() != nil {
			err = fmt.Errorf("%w: %w", errShuttingDown, err)
		}
		return nil, nil, err
	}
	return ctx, func() {
		free()
		stop()
		cancel(nil)
		s.inflight.Done()
	}, nil
}

// cancelled answers a request whose work was stopped: by the shutdown
// (503), or by its client, who is gone and reads nothing.
func (s *Server) cancelled(w http.ResponseWriter, r *http.Request) {
	if s.runCtx.Err() != nil {
		writeError(w, r, http.StatusServiceUnavailable, CodeShuttingDown, "the executor is shutting down")
		return
	}
	s.log.Info("client left before its answer", "event", "client_gone", "request_id", requestID(r.Context()))
}

// judgeRefusal is a refused judge request: the judge's ExecutionResult
// (sandbox_error, VALIDATION_ERROR) with the service's error object beside
// its fields, so that clients of either shape understand it.
func judgeRefusal(r *http.Request, res judge.ExecutionResult, msg string) (map[string]json.RawMessage, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["error"], err = json.Marshal(errorDetail{Code: CodeValidation, Message: msg, RequestID: requestID(r.Context())})
	return m, err
}

// handleJudge is POST /v1/judge: compile once, run every test case,
// judge.
func (s *Server) handleJudge(w http.ResponseWriter, r *http.Request) {
	body := s.body(w, r)
	req, callbackURL, err := decodeJudge(body)
	if err != nil {
		if s.tooLarge(w, r, body) {
			return
		}
		if errors.Is(err, judge.ErrRequestTooLarge) {
			writeError(w, r, http.StatusRequestEntityTooLarge, CodePayloadTooLarge, err.Error())
			return
		}
		s.refuseJudge(w, r, req.RequestID, err)
		return
	}
	if err := req.WithDefaults().Validate(); err != nil {
		s.refuseJudge(w, r, req.RequestID, err)
		return
	}
	if callbackURL != "" {
		s.submit(w, r, req, callbackURL)
		return
	}
	held, ok := s.hold(w, r, 1)
	if !ok {
		return
	}
	defer held()
	ctx, release, ok := s.clientRun(w, r, s.judge != nil, "/v1/judge")
	if !ok {
		return
	}
	defer release()
	start := time.Now()
	res := s.judge.Execute(ctx, req)
	if ctx.Err() != nil {
		s.cancelled(w, r)
		return
	}
	if res.ErrorInfo != nil && res.ErrorInfo.Code == judge.CodeValidationError {
		// Refused by the engine, which alone knows the language's rules
		// (its compiler flags): a bad request all the same.
		s.refuseJudgeResult(w, r, res)
		return
	}
	reason := ""
	if res.Status != judge.StatusAllPassed {
		reason = string(res.Status)
	}
	s.metrics.finished("judge", string(res.Status), reason, time.Since(start))
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) refuseJudge(w http.ResponseWriter, r *http.Request, id string, err error) {
	s.refuseJudgeResult(w, r, judge.InvalidRequestResult(id, err, 0))
}

// refuseJudgeResult answers 400 with res, a refusal.
func (s *Server) refuseJudgeResult(w http.ResponseWriter, r *http.Request, res judge.ExecutionResult) {
	msg := res.ErrorInfo.Message
	m, merr := judgeRefusal(r, res, msg)
	if merr != nil {
		writeError(w, r, http.StatusBadRequest, CodeValidation, msg)
		return
	}
	writeJSON(w, http.StatusBadRequest, m)
}

// decodeJSON reads one JSON object into v, naming the field of a type
// error by its path ("files[1].path: must be a string, not a JSON
// number"). A field v does not have is refused with its path: a client
// written for another system would otherwise get an answer to a question
// it did not ask.
func decodeJSON(r io.Reader, v any) error {
	doc, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("body: %w", err)
	}
	dec := strictjson.NewDecoder(bytes.NewReader(doc))
	err = dec.Decode(v)
	if errors.Is(err, io.EOF) {
		return errors.New("body: empty; a JSON object is expected")
	}
	if err != nil {
		err = strictjson.Explain(err, doc, v)
		var te *strictjson.TypeError
		var uf *strictjson.UnknownFieldError
		switch {
		case errors.As(err, &te) && te.Path == "":
			return fmt.Errorf("body: %w", err)
		case errors.As(err, &te), errors.As(err, &uf):
			return err
		}
		return fmt.Errorf("body: malformed JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("body: unexpected data after the JSON object")
	}
	return nil
}
