package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/outstream"
)

// DefaultHeartbeat is how long an event stream may stay silent before
// the server sends a keep-alive comment, so that proxies that cut idle
// connections leave a quiet run's stream alone.
const DefaultHeartbeat = 15 * time.Second

// errClientUnreachable cancels a streamed run whose client can no longer
// be written to.
var errClientUnreachable = errors.New("the client stopped taking the event stream")

// wantsEventStream reports whether the request's Accept header names
// text/event-stream (with a non-zero quality).
func wantsEventStream(r *http.Request) bool {
	for _, h := range r.Header.Values("Accept") {
		for _, part := range strings.Split(h, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || mt != "text/event-stream" {
				continue
			}
			if q, ok := params["q"]; ok {
				if v, err := strconv.ParseFloat(q, 64); err != nil || v <= 0 {
					continue
				}
			}
			return true
		}
	}
	return false
}

// eventStream is the server-sent events answer of one /v1/run. Its
// headers go out with the first event or keep-alive, so that a request
// refused before its program printed anything is still answered with
// its status code and a JSON error.
type eventStream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	cancel  context.CancelCauseFunc
	started bool
	buf     bytes.Buffer
}

func newEventStream(w http.ResponseWriter, cancel context.CancelCauseFunc) *eventStream {
	return &eventStream{w: w, rc: http.NewResponseController(w), cancel: cancel}
}

// start writes the headers once.
func (es *eventStream) start() {
	if es.started {
		return
	}
	es.started = true
	h := es.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	// Proxies such as nginx would otherwise hold the events back.
	h.Set("X-Accel-Buffering", "no")
	es.w.WriteHeader(http.StatusOK)
}

// writeAhead is how much encoded output is written out, without a
// flush, before more is encoded: the buffer stays small whatever the
// output.
const writeAhead = 64 << 10

// chunks encodes chunks as stdout and stderr events, writing them out as
// the buffer fills; what is left in it is for send.
func (es *eventStream) chunks(chunks []outstream.Chunk) error {
	for _, c := range chunks {
		es.buf.WriteString("event: ")
		es.buf.WriteString(c.Stream.String())
		es.buf.WriteString("\ndata: ")
		// A JSON string holds no raw line break: the data is one line.
		es.buf.Write(appendJSONString(es.buf.AvailableBuffer(), c.Data))
		es.buf.WriteString("\n\n")
		if es.buf.Len() >= writeAhead {
			err := es.write(es.buf.Bytes())
			es.buf.Reset()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// send writes what is encoded and flushes it. A failure (the client went
// away, or stopped reading for the write timeout) cancels the run.
func (es *eventStream) send() error {
	err := es.write(es.buf.Bytes())
	es.buf.Reset()
	if err != nil {
		return err
	}
	if err := es.rc.Flush(); err != nil {
		es.cancel(errClientUnreachable)
		return err
	}
	return nil
}

// deliver is the pump's delivery: the chunks as events, at once.
func (es *eventStream) deliver(chunks []outstream.Chunk) error {
	if err := es.chunks(chunks); err != nil {
		return err
	}
	return es.send()
}

// keepAlive is a comment line, which clients ignore.
func (es *eventStream) keepAlive() error {
	es.buf.WriteString(": keep-alive\n\n")
	return es.send()
}

// result ends the stream with the rest of the output and the result
// event, whose data is v as the JSON answer would carry it.
func (es *eventStream) result(rest []outstream.Chunk, v any) {
	if es.chunks(rest) != nil {
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		data = []byte(`{"error":{"code":"internal_error","message":"unable to encode the answer","request_id":""}}`)
	}
	es.buf.WriteString("event: result\ndata: ")
	// The result, as large as the output, goes out as it is rather than
	// copied into the buffer.
	if es.write(es.buf.Bytes()) == nil && es.write(data) == nil {
		es.buf.Reset()
		es.buf.WriteString("\n\n")
		_ = es.send()
	}
}

// write writes b without flushing; a failure cancels the run.
func (es *eventStream) write(b []byte) error {
	es.start()
	_, err := es.w.Write(b)
	if err != nil {
		es.cancel(errClientUnreachable)
	}
	return err
}

// streamRun runs req with its output sent as server-sent events as the
// program writes it (stdout and stderr events, each a JSON string), and
// its result as the last event. ctx holds the request's running slot.
func (s *Server) streamRun(ctx context.Context, w http.ResponseWriter, r *http.Request, req execute.Request, viaTimeout bool) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	es := newEventStream(w, cancel)
	pump := outstream.New(es.deliver, outstream.Options{Idle: s.heartbeat, OnIdle: es.keepAlive})
	req.Stdout, req.Stderr = pump.Writer(outstream.Stdout), pump.Writer(outstream.Stderr)
	start := time.Now()
	res, err := s.runner.Execute(ctx, req)
	rest, perr := pump.Close()
	// The pump's goroutine is done: from here this one writes.
	switch {
	case perr != nil || ctx.Err() != nil && s.runCtx.Err() == nil:
		// The client is gone: no one reads an answer.
		s.log.Info("client left before its answer", "event", "client_gone", "request_id", requestID(r.Context()))
	case ctx.Err() != nil:
		if !es.started {
			s.cancelled(w, r)
			return
		}
		s.streamRefusal(es, rest, r, req, http.StatusServiceUnavailable, errorDetail{
			Code: CodeShuttingDown, Message: "the executor is shutting down", RequestID: requestID(r.Context())})
	case err != nil:
		if !es.started {
			s.refuseRun(w, r, err, viaTimeout)
			return
		}
		rec := &bufferedAnswer{header: http.Header{}}
		s.refuseRun(rec, r, err, viaTimeout)
		var eb errorBody
		if json.Unmarshal(rec.body.Bytes(), &eb) != nil {
			eb.Error = errorDetail{Code: CodeInternal, Message: "internal error; quote request id " + requestID(r.Context()), RequestID: requestID(r.Context())}
		}
		s.streamRefusal(es, rest, r, req, rec.status, eb.Error)
	default:
		s.metrics.finished("run", string(res.Status), runReason(res), time.Since(start))
		es.result(rest, res)
	}
}

// streamRefusal ends a stream whose request was refused, or cut by the
// shutdown, once its headers were out (a keep-alive during a long
// compile): the result event is a setup_error result with the error
// object the JSON answer would have carried beside its fields, so that
// clients of either shape understand it.
func (s *Server) streamRefusal(es *eventStream, rest []outstream.Chunk, r *http.Request, req execute.Request, status int, detail errorDetail) {
	res := execute.SetupErrorResult(req, s.backend, errors.New(detail.Message))
	res.ErrorMessage = &detail.Message
	m, err := withError(res, detail)
	if err != nil {
		s.log.Error("unable to encode a refusal", "request_id", requestID(r.Context()), "error", err)
		es.result(rest, errorBody{Error: detail})
		return
	}
	s.log.Info("streamed run refused", "event", "run_refused", "request_id", requestID(r.Context()),
		"status", status, "code", detail.Code)
	es.result(rest, m)
}

// withError is v's JSON object with "error" added.
func withError(v any, detail errorDetail) (map[string]json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["error"], err = json.Marshal(detail)
	return m, err
}

// bufferedAnswer keeps an answer that can no longer be sent as one (the
// event stream started), to be told in the stream's last event.
type bufferedAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedAnswer) Header() http.Header { return b.header }

func (b *bufferedAnswer) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

func (b *bufferedAnswer) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}
