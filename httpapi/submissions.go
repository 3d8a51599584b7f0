package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coderunner/coderunner/callback"
	"github.com/coderunner/coderunner/controlplane"
	"github.com/coderunner/coderunner/internal/egress"
	"github.com/coderunner/coderunner/internal/strictjson"
	"github.com/coderunner/coderunner/judge"
)

// Defaults of SubmissionOptions.
const (
	DefaultSubmissionTTL     = time.Hour
	DefaultMaxSubmissions    = 1000
	DefaultMaxCallbackResult = 1 << 20
	DefaultCallbackMaxAge    = 24 * time.Hour
	DefaultCallbackTimeout   = 10 * time.Second
	// callbackAnswerBytes bounds what is read of a receiver's answer.
	callbackAnswerBytes = 64 << 10
)

// Error codes of submissions.
const (
	CodeTooManySubmissions = "too_many_submissions"
	// CodeInterrupted is the error_info code of a submission the server
	// stopped judging when it shut down.
	CodeInterrupted = "INTERRUPTED"
	// CodeResultTooLarge is the error_info code of a result over
	// MaxResultBytes even without its outputs.
	CodeResultTooLarge = "RESULT_TOO_LARGE"
)

// SubmissionOptions configures asynchronous judge submissions: POST
// /v1/judge with a callback_url, answered 202 at once, judged in the
// background and its result POSTed, signed, to the callback.
type SubmissionOptions struct {
	// Secret signs the deliveries (server.callback_secret). Empty turns
	// asynchronous submissions off: a callback_url is then refused.
	Secret []byte
	// SpoolDir keeps the results not yet delivered, so that a restart
	// loses none; required with Secret.
	SpoolDir string
	// AllowedHosts are the operator's exceptions to the refusal of
	// loopback, private and link-local destinations (egress.Policy.Allow):
	// host names, addresses or CIDR prefixes.
	AllowedHosts []string
	// TTL is how long a finished submission stays visible to GET
	// /v1/judge/{id}; zero means DefaultSubmissionTTL.
	TTL time.Duration
	// Max bounds the submissions kept at once, queued, running or done;
	// zero means DefaultMaxSubmissions.
	Max int
	// MaxResultBytes bounds a result kept and delivered: past it the
	// tests' outputs are emptied; zero means DefaultMaxCallbackResult.
	MaxResultBytes int
	// MaxAge is how long a result is retried before its delivery is
	// given up; zero means DefaultCallbackMaxAge.
	MaxAge time.Duration
	// Timeout bounds one delivery attempt; zero means
	// DefaultCallbackTimeout.
	Timeout time.Duration
	// MaxSpool and MaxSpoolBytes bound the results waiting for delivery;
	// past either, new submissions are refused. Zero means the
	// controlplane defaults.
	MaxSpool      int
	MaxSpoolBytes int64
	// Backoff is the wait before each retry; empty means
	// controlplane.DefaultBackoff (1 s, 2 s, 4 s, then every 10 s).
	Backoff []time.Duration
	// Resolver resolves callback host names; nil means the system's.
	Resolver egress.Resolver
}

// Submission states.
const (
	SubmissionQueued  = "queued"
	SubmissionRunning = "running"
	SubmissionDone    = "done"
)

// Delivery states.
const (
	DeliveryWaiting   = "waiting" // no result yet
	DeliverySending   = "sending" // being sent, or waiting for a retry
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed" // given up
)

// submissionIDPattern is the form of the ids the server makes.
var submissionIDPattern = regexp.MustCompile(`^sub_[0-9a-f]{32}$`)

// SubmissionStatus is the GET /v1/judge/{id} body (and, with the fields
// a new submission has, the 202 body).
type SubmissionStatus struct {
	SubmissionID string     `json:"submission_id"`
	RequestID    string     `json:"request_id"`
	Status       string     `json:"status"`
	CreatedAt    time.Time  `json:"created_at"`
	StartedAt    *time.Time `json:"started_at,omitempty"`
	FinishedAt   *time.Time `json:"finished_at,omitempty"`
	// ExpiresAt is when the submission is forgotten (404 after), once
	// done.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Result is the judge's result once done, else null.
	Result   json.RawMessage `json:"result"`
	Callback CallbackStatus  `json:"callback"`
}

// CallbackStatus is the delivery of a submission's result.
type CallbackStatus struct {
	URL         string     `json:"url"`
	State       string     `json:"state"`
	Attempts    int        `json:"attempts"`
	LastError   string     `json:"last_error,omitempty"`
	DeliveredAt *time.Time `json:"delivered_at,omitempty"`
}

// submission is one asynchronous judge request. Its fields are guarded
// by submissions.mu.
type submission struct {
	owner string
	st    SubmissionStatus
}

// envelope is what the spool keeps of a result: all the delivery needs,
// and what GET shows of it after a restart.
type envelope struct {
	ID        string    `json:"submission_id"`
	URL       string    `json:"callback_url"`
	CreatedAt time.Time `json:"created_at"`
	// Owner is the submission's owner (a key's name or a digest of a
	// token, never the key).
	Owner      string          `json:"owner"`
	RequestID  string          `json:"request_id"`
	StartedAt  *time.Time      `json:"started_at,omitempty"`
	FinishedAt time.Time       `json:"finished_at"`
	Result     json.RawMessage `json:"result"`
}

// submissions holds the asynchronous submissions of a server.
type submissions struct {
	s         *Server
	secret    []byte
	policy    *egress.Policy
	client    *http.Client
	ttl       time.Duration
	max       int
	maxResult int
	maxAge    time.Duration
	outbox    *controlplane.Outbox
	outcomes  *prometheus.CounterVec
	dir       string

	mu   sync.Mutex
	byID map[string]*submission
	// stored are the ids an earlier process left in the spool, not seen
	// yet by this one: their first attempt makes them visible to GET
	// again.
	stored map[string]bool
}

// newSubmissions builds the submissions of s; nil when they are off.
func newSubmissions(s *Server, o SubmissionOptions) (*submissions, error) {
	if len(o.Secret) == 0 {
		return nil, nil
	}
	if err := egress.ParseAllow(o.AllowedHosts); err != nil {
		return nil, fmt.Errorf("callback allowed hosts: %w", err)
	}
	sb := &submissions{
		s: s, secret: o.Secret, ttl: o.TTL, max: o.Max, maxResult: o.MaxResultBytes, maxAge: o.MaxAge,
		policy: &egress.Policy{Allow: o.AllowedHosts, Resolver: o.Resolver},
		byID:   map[string]*submission{}, stored: map[string]bool{}, dir: o.SpoolDir,
	}
	if sb.ttl <= 0 {
		sb.ttl = DefaultSubmissionTTL
	}
	if sb.max <= 0 {
		sb.max = DefaultMaxSubmissions
	}
	if sb.maxResult <= 0 {
		sb.maxResult = DefaultMaxCallbackResult
	}
	if sb.maxAge <= 0 {
		sb.maxAge = DefaultCallbackMaxAge
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultCallbackTimeout
	}
	sb.client = sb.policy.Client(timeout)
	var err error
	sb.outbox, err = controlplane.NewOutbox(controlplane.OutboxOptions{
		Dir: o.SpoolDir, Send: sb.send, Backoff: o.Backoff,
		MaxItems: o.MaxSpool, MaxBytes: o.MaxSpoolBytes,
		Logger: s.log, IDKey: "submission_id", Kind: "callback",
		OnFailure: sb.failed, OnDone: sb.done,
	})
	if err != nil {
		return nil, fmt.Errorf("callback spool: %w", err)
	}
	sb.outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "coderunner_callback_attempts_total",
		Help: "Attempts to deliver a submission's result to its callback_url, by outcome (delivered, retry, failed).",
	}, []string{"outcome"})
	s.registry.MustRegister(sb.outcomes, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "coderunner_submissions",
		Help: "Asynchronous judge submissions kept: queued, running or done and not yet expired.",
	}, func() float64 {
		sb.mu.Lock()
		defer sb.mu.Unlock()
		return float64(len(sb.byID))
	}))
	return sb, nil
}

// judgeRequest is the /v1/judge body: the judge's request and, for an
// asynchronous submission, where to send its result.
type judgeRequest struct {
	judge.ExecutionRequest
	// CallbackURL makes the request asynchronous: 202 at once, the result
	// POSTed there, signed.
	CallbackURL string `json:"callback_url,omitempty"`
}

// decodeJudge reads a /v1/judge body as judge.DecodeRequest does, with
// the callback_url beside the judge's fields. Errors wrap
// judge.ErrRequestTooLarge or judge.ErrInvalidRequest.
func decodeJudge(r io.Reader) (judge.ExecutionRequest, string, error) {
	limit := int64(judge.MaxRequestBytes)
	doc, err := io.ReadAll(&io.LimitedReader{R: r, N: limit + 1})
	if int64(len(doc)) > limit {
		return judge.ExecutionRequest{}, "", fmt.Errorf("%w: more than %d bytes", judge.ErrRequestTooLarge, limit)
	}
	if err != nil {
		return judge.ExecutionRequest{}, "", fmt.Errorf("%w: %w", judge.ErrInvalidRequest, err)
	}
	dec := strictjson.NewDecoder(bytes.NewReader(doc))
	var req judgeRequest
	if err := dec.Decode(&req); err != nil {
		if errors.Is(err, io.EOF) {
			return judge.ExecutionRequest{}, "", fmt.Errorf("%w: empty body", judge.ErrInvalidRequest)
		}
		return judge.ExecutionRequest{}, "", fmt.Errorf("%w: %w", judge.ErrInvalidRequest, strictjson.Explain(err, doc, &req))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return judge.ExecutionRequest{}, "", fmt.Errorf("%w: unexpected data after the request object", judge.ErrInvalidRequest)
	}
	return req.ExecutionRequest, req.CallbackURL, nil
}

// newSubmissionID is an id no client can guess.
func newSubmissionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "sub_" + hex.EncodeToString(b[:])
}

// ownerOf is the owner of the request's submissions: its key's, as for
// sessions, or "" without credentials.
func ownerOf(ctx context.Context) string {
	if c := clientOf(ctx); c != nil {
		return c.owner
	}
	return ""
}

// submit answers an asynchronous /v1/judge request, validated already:
// the callback URL checked, a place in the queue taken, 202 with the
// submission's id; the judging goes on in the background.
func (s *Server) submit(w http.ResponseWriter, r *http.Request, req judge.ExecutionRequest, rawURL string) {
	sb := s.subs
	if sb == nil {
		writeError(w, r, http.StatusBadRequest, CodeBadRequest,
			"callback_url: asynchronous submissions are off on this server (no server.callback_secret)")
		return
	}
	if s.judge == nil {
		writeError(w, r, http.StatusServiceUnavailable, CodeUnavailable, "/v1/judge is not configured on this server")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	u, err := sb.policy.CheckURL(ctx, rawURL)
	cancel()
	if err != nil {
		writeError(w, r, http.StatusBadRequest, CodeBadRequest, "callback_url: "+err.Error())
		return
	}
	if sb.outbox.Full() {
		writeError(w, r, http.StatusServiceUnavailable, CodeTooManySubmissions,
			"too many results are waiting for their callbacks; retry later")
		return
	}
	release, ok := s.hold(w, r, 1)
	if !ok {
		return
	}
	switch s.countIn() {
	case stateReady:
	case stateDraining:
		release()
		writeError(w, r, http.StatusServiceUnavailable, CodeShuttingDown, "the executor is shutting down")
		return
	default:
		release()
		writeError(w, r, http.StatusServiceUnavailable, CodeUnavailable, "the executor is starting")
		return
	}
	// From here the inflight count and the key's hold belong to the
	// background work.
	finish := func() {
		release()
		s.inflight.Done()
	}
	now := time.Now().UTC()
	sub := &submission{owner: ownerOf(r.Context()), st: SubmissionStatus{
		SubmissionID: newSubmissionID(), RequestID: req.RequestID, Status: SubmissionQueued, CreatedAt: now,
		Result: json.RawMessage("null"), Callback: CallbackStatus{URL: u.String(), State: DeliveryWaiting},
	}}
	if !sb.add(sub, now) {
		finish()
		writeError(w, r, http.StatusServiceUnavailable, CodeTooManySubmissions,
			fmt.Sprintf("%d submissions are kept already (server.max_submissions); retry later", sb.max))
		return
	}
	wait, err := s.gate.reserve()
	if err != nil {
		sb.remove(sub.st.SubmissionID)
		finish()
		s.metrics.refused.Inc()
		s.queueFull(w, r)
		return
	}
	st := sb.status(sub)
	go func() {
		defer finish()
		sb.run(sub, req, wait)
	}()
	w.Header().Set("Location", "/v1/judge/"+st.SubmissionID)
	writeJSON(w, http.StatusAccepted, st)
}

// add keeps sub unless Max are kept; expired ones go first.
func (sb *submissions) add(sub *submission, now time.Time) bool {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.expire(now)
	if len(sb.byID) >= sb.max {
		return false
	}
	sb.byID[sub.st.SubmissionID] = sub
	return true
}

func (sb *submissions) remove(id string) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	delete(sb.byID, id)
}

// expire forgets the submissions past their time. sb.mu is held.
func (sb *submissions) expire(now time.Time) {
	for id, sub := range sb.byID {
		if e := sub.st.ExpiresAt; e != nil && !now.Before(*e) {
			delete(sb.byID, id)
		}
	}
}

// status is a copy of sub's status.
func (sb *submissions) status(sub *submission) SubmissionStatus {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sub.st
}

// run waits for a slot, judges, and hands the result to the outbox.
func (sb *submissions) run(sub *submission, req judge.ExecutionRequest, wait func(context.Context) (func(), error)) {
	s := sb.s
	ctx := s.runCtx
	var res judge.ExecutionResult
	free, err := wait(ctx)
	if err != nil {
		res = interruptedResult(req.RequestID, "the server shut down before judging started")
	} else {
		started := time.Now().UTC()
		sb.mu.Lock()
		sub.st.Status, sub.st.StartedAt = SubmissionRunning, &started
		sb.mu.Unlock()
		res = s.judge.Execute(ctx, req)
		free()
		if ctx.Err() != nil {
			res = interruptedResult(req.RequestID, "the server shut down before judging finished")
		}
		reason := ""
		if res.Status != judge.StatusAllPassed {
			reason = string(res.Status)
		}
		s.metrics.finished("judge", string(res.Status), reason, time.Since(started))
	}
	body := sb.bound(res)
	finished := time.Now().UTC()
	expires := finished.Add(sb.ttl)
	sb.mu.Lock()
	sub.st.Status, sub.st.FinishedAt, sub.st.ExpiresAt = SubmissionDone, &finished, &expires
	sub.st.Result = body
	sub.st.Callback.State = DeliverySending
	env := envelope{ID: sub.st.SubmissionID, URL: sub.st.Callback.URL, CreatedAt: sub.st.CreatedAt, Result: body,
		Owner: sub.owner, RequestID: sub.st.RequestID, StartedAt: sub.st.StartedAt, FinishedAt: finished}
	sb.mu.Unlock()
	b, err := json.Marshal(env)
	if err == nil {
		err = sb.outbox.Put(env.ID, b)
	}
	if err != nil {
		s.log.Error("unable to queue a callback", "event", "callback_failed", "submission_id", env.ID, "error", err)
		sb.update(env.ID, func(c *CallbackStatus) { c.State, c.LastError = DeliveryFailed, err.Error() })
	}
}

// interruptedResult is the result of a submission the shutdown stopped:
// the receiver learns of it rather than waiting for ever.
func interruptedResult(requestID, msg string) judge.ExecutionResult {
	return judge.ExecutionResult{
		RequestID: requestID, Status: judge.StatusSandboxError, TestResults: []judge.TestResult{},
		Summary:   "Interrupted: " + msg + "; submit it again",
		ErrorInfo: &judge.ExecutionError{Code: CodeInterrupted, Message: msg, Stage: judge.StageExecution},
	}
}

// bound encodes res within MaxResultBytes: over it, the tests' outputs
// and the compiler's output are emptied (verdicts, times and memory
// stay); still over, a sandbox_error saying so.
func (sb *submissions) bound(res judge.ExecutionResult) json.RawMessage {
	b, err := json.Marshal(res)
	if err == nil && len(b) <= sb.maxResult {
		return b
	}
	trimmed := res
	trimmed.TestResults = append([]judge.TestResult(nil), res.TestResults...)
	for i := range trimmed.TestResults {
		trimmed.TestResults[i].ActualOutput, trimmed.TestResults[i].ExpectedOutput = "", ""
	}
	if trimmed.CompilationOutput != nil {
		empty := ""
		trimmed.CompilationOutput = &empty
	}
	if b, err = json.Marshal(trimmed); err == nil && len(b) <= sb.maxResult {
		return b
	}
	msg := fmt.Sprintf("the result is larger than the %d bytes a callback carries (server.callback_max_result_kb)", sb.maxResult)
	b, _ = json.Marshal(judge.ExecutionResult{
		RequestID: res.RequestID, Status: judge.StatusSandboxError, TestResults: []judge.TestResult{},
		TotalTimeMS: res.TotalTimeMS, Summary: "Result too large: " + msg,
		ErrorInfo: &judge.ExecutionError{Code: CodeResultTooLarge, Message: msg, Stage: judge.StageExecution},
	})
	return b
}

// update changes the callback status of id, if it is still kept.
func (sb *submissions) update(id string, f func(*CallbackStatus)) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sub, ok := sb.byID[id]; ok {
		f(&sub.st.Callback)
	}
}

// send is one delivery attempt: the result POSTed to the callback URL,
// signed now. A destination the policy refuses, or a result past MaxAge,
// is given up.
func (sb *submissions) send(ctx context.Context, id string, stored []byte) error {
	var env envelope
	if err := json.Unmarshal(stored, &env); err != nil || env.ID != id || !submissionIDPattern.MatchString(id) {
		return controlplane.Permanent(fmt.Errorf("stored callback %s is damaged", id))
	}
	if time.Since(env.CreatedAt) > sb.maxAge {
		return controlplane.Permanent(fmt.Errorf("not delivered within %s (server.callback_max_age)", sb.maxAge))
	}
	sb.restore(env)
	sb.update(id, func(c *CallbackStatus) { c.Attempts++ })
	// The dialer checks the destination at every connection.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, env.URL, bytes.NewReader(env.Result))
	if err != nil {
		return controlplane.Permanent(fmt.Errorf("callback_url: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "coderunner-callback")
	req.Header.Set(callback.SubmissionHeader, id)
	req.Header.Set(callback.SignatureHeader, callback.Sign(sb.secret, time.Now(), env.Result))
	resp, err := sb.client.Do(req)
	if err != nil {
		if errors.Is(err, egress.ErrForbidden) {
			return controlplane.Permanent(err)
		}
		return fmt.Errorf("unable to reach the callback: %w", err)
	}
	defer resp.Body.Close()
	egress.Drain(resp.Body, callbackAnswerBytes)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &controlplane.StatusError{Code: resp.StatusCode}
	}
	return nil
}

// failed records a failed attempt; it will be retried.
func (sb *submissions) failed(id string, attempt int, err error) {
	sb.outcomes.WithLabelValues("retry").Inc()
	sb.update(id, func(c *CallbackStatus) { c.LastError = err.Error() })
	if sb.s.runCtx.Err() == nil {
		sb.s.log.Warn("callback failed; retrying", "event", "callback_failed", "submission_id", id, "attempt", attempt+1, "error", err)
	}
}

// done records a delivery, or its end.
func (sb *submissions) done(id string, _ int, err error) {
	now := time.Now().UTC()
	if err != nil {
		sb.outcomes.WithLabelValues("failed").Inc()
		sb.update(id, func(c *CallbackStatus) { c.State, c.LastError = DeliveryFailed, err.Error() })
		return
	}
	sb.outcomes.WithLabelValues("delivered").Inc()
	sb.update(id, func(c *CallbackStatus) { c.State, c.LastError, c.DeliveredAt = DeliveryDelivered, "", &now })
}

// restore makes a submission an earlier process left in the spool
// visible to GET again, for its TTL from now.
func (sb *submissions) restore(env envelope) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if !sb.stored[env.ID] {
		return
	}
	delete(sb.stored, env.ID)
	if _, ok := sb.byID[env.ID]; ok {
		return
	}
	finished := env.FinishedAt
	expires := time.Now().UTC().Add(sb.ttl)
	sb.byID[env.ID] = &submission{owner: env.Owner, st: SubmissionStatus{
		SubmissionID: env.ID, RequestID: env.RequestID, Status: SubmissionDone, CreatedAt: env.CreatedAt,
		StartedAt: env.StartedAt, FinishedAt: &finished, ExpiresAt: &expires, Result: env.Result,
		Callback: CallbackStatus{URL: env.URL, State: DeliverySending},
	}}
}

// start re-sends what an earlier process left undelivered.
func (sb *submissions) start() {
	if sb == nil {
		return
	}
	if ents, err := os.ReadDir(sb.dir); err == nil {
		sb.mu.Lock()
		for _, e := range ents {
			if id, ok := strings.CutSuffix(e.Name(), ".json"); ok && submissionIDPattern.MatchString(id) {
				sb.stored[id] = true
			}
		}
		sb.mu.Unlock()
	}
	if n := sb.outbox.Start(); n > 0 {
		sb.s.log.Info("re-sending callbacks of an earlier run", "event", "callback_resend", "count", n)
	}
}

// drain gives the deliveries until deadline, then stops them; what is
// left stays in the spool for the next start. The channel closes when
// done.
func (sb *submissions) drain(deadline time.Time) <-chan struct{} {
	done := make(chan struct{})
	if sb == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		if err := sb.outbox.Flush(ctx); err != nil {
			sb.s.log.Warn("callbacks left for the next start", "event", "callbacks_spooled", "error", err)
		}
		_ = sb.outbox.Close()
	}()
	return done
}

// handleSubmission is /v1/judge/{id}: GET (and HEAD) only.
func (s *Server) handleSubmission(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, r, http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			fmt.Sprintf("%s %s is not allowed; use GET, HEAD", r.Method, r.URL.Path))
		return
	}
	s.handleGetSubmission(w, r)
}

// handleGetSubmission is GET /v1/judge/{id}: one of the caller's
// submissions, until it expires. Another caller's is not found, as one
// that never was.
func (s *Server) handleGetSubmission(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !submissionIDPattern.MatchString(id) {
		writeError(w, r, http.StatusBadRequest, CodeBadRequest, "id: not a submission id (sub_ and 32 hex digits)")
		return
	}
	sb := s.subs
	if sb == nil {
		writeError(w, r, http.StatusNotFound, CodeNotFound, "id: asynchronous submissions are off on this server")
		return
	}
	sb.mu.Lock()
	sb.expire(time.Now())
	sub, ok := sb.byID[id]
	var st SubmissionStatus
	if ok {
		st = sub.st
		ok = sub.owner == ownerOf(r.Context())
	}
	sb.mu.Unlock()
	if !ok {
		writeError(w, r, http.StatusNotFound, CodeNotFound, "id: no submission "+id+" (unknown, another key's, or expired)")
		return
	}
	writeJSON(w, http.StatusOK, st)
}
