package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/outstream"
	"github.com/coderunner/coderunner/internal/strictjson"
)

// MaxInteractiveMessageBytes bounds each message an interactive client
// sends after its run request (a stdin or eof message).
const MaxInteractiveMessageBytes = 1 << 20

// Why an interactive run ends early.
var (
	errClientGone    = errors.New("the client closed the connection")
	errClientUnheard = errors.New("the client stopped answering")
)

// wsMessage is a message of the interactive protocol, both ways: stdin
// and eof from the client; stdout, stderr, result and error from the
// server.
type wsMessage struct {
	Type   string       `json:"type"`
	Data   *string      `json:"data,omitempty"`
	Result any          `json:"result,omitempty"`
	Error  *errorDetail `json:"error,omitempty"`
}

// clientMessage is what the client may send once the run request is in.
type clientMessage struct {
	Type string  `json:"type"`
	Data *string `json:"data"`
}

// stdinBuffer is the program's standard input: what the client sends is
// appended, never blocking the connection's reader (which must go on
// reading to see pings answered and the client leave), and read by the
// sandbox as the program reads. Its size is bounded by the stdin cap.
type stdinBuffer struct {
	mu     sync.Mutex
	cond   *sync.Cond
	buf    []byte
	err    error // io.EOF once the client said eof, or why it was cut
	closed bool
}

func newStdinBuffer() *stdinBuffer {
	b := &stdinBuffer{}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// write appends p, unless the input is already over.
func (b *stdinBuffer) write(p []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.buf = append(b.buf, p...)
		b.cond.Broadcast()
	}
}

// close ends the input with err once the buffered bytes are read
// (io.EOF), or at once for any other error.
func (b *stdinBuffer) close(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.closed, b.err = true, err
		if !errors.Is(err, io.EOF) {
			b.buf = nil
		}
		b.cond.Broadcast()
	}
}

func (b *stdinBuffer) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.buf) == 0 && !b.closed {
		b.cond.Wait()
	}
	if len(b.buf) == 0 {
		return 0, b.err
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	if len(b.buf) == 0 {
		b.buf = nil // let the backing array go
	}
	return n, nil
}

// hijackWriter hands the connection over without the deadlines the HTTP
// server put on it: the socket lives as long as its run, and its own
// timeouts (the first message's, the pings', each write's) bound it.
type hijackWriter struct {
	http.ResponseWriter
}

func (h hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err == nil {
		err = conn.SetDeadline(time.Time{})
		if err != nil {
			_ = conn.Close()
			return nil, nil, err
		}
	}
	return conn, rw, err
}

// interactive is one /v1/run/ws connection.
type interactive struct {
	s     *Server
	c     *websocket.Conn
	r     *http.Request
	stdin *stdinBuffer
	// stdinCap bounds the stdin of a run, the request's included: the
	// bound of /v1/run's, whose stdin comes in a body of at most
	// server.max_body_mb.
	stdinCap int
	// room is how many more stdin bytes the client may send.
	room int
	// final is set by the first of the last messages (result or error):
	// the connection's reader and the run may both end it, and what
	// comes after is not sent.
	final atomic.Bool
}

// errFinal is a send refused because the last message went out.
var errFinal = errors.New("the connection's last message was sent")

// handleRunWS is GET /v1/run/ws: a run whose standard input comes from
// the client as the program runs, over a WebSocket. The first message is
// the /v1/run request; stdin and eof messages follow; the output comes
// back as it is produced, then the result, then a normal close.
func (s *Server) handleRunWS(w http.ResponseWriter, r *http.Request) {
	if s.runner == nil {
		writeError(w, r, http.StatusServiceUnavailable, CodeUnavailable, "/v1/run/ws is not configured on this server")
		return
	}
	if !handshake(w, r) {
		return
	}
	// The Host and Origin were checked by guard, whose rules (the allowed
	// hosts included) are the only ones: the library's own Origin check
	// would refuse the hosts allowed beside this server's.
	c, err := websocket.Accept(hijackWriter{w}, r, &websocket.AcceptOptions{
		InsecureSkipVerify: true,
		CompressionMode:    websocket.CompressionDisabled,
	})
	if err != nil {
		// Accept answered the handshake's error itself.
		s.log.Info("websocket handshake refused", "request_id", requestID(r.Context()), "error", err)
		return
	}
	defer func() { _ = c.CloseNow() }()
	// The request's context ends with the handler, not with the
	// connection: conn's ends when the client goes away.
	conn, leave := context.WithCancelCause(context.WithoutCancel(r.Context()))
	defer leave(nil)
	r = r.WithContext(conn)
	in := &interactive{s: s, c: c, r: r, stdin: newStdinBuffer()}
	defer in.stdin.close(errClientGone)
	in.serve(conn, leave)
}

// handshake answers, with a JSON error, a request that is not a
// WebSocket handshake this server speaks: 426 without the upgrade, 400
// for a version or key the protocol refuses. ok is false when answered.
func handshake(w http.ResponseWriter, r *http.Request) (ok bool) {
	if !headerHas(r.Header, "Connection", "upgrade") || !headerHas(r.Header, "Upgrade", "websocket") {
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", "websocket")
		writeError(w, r, http.StatusUpgradeRequired, CodeBadRequest,
			"/v1/run/ws is a WebSocket endpoint: send a handshake (Connection: Upgrade, Upgrade: websocket)")
		return false
	}
	if v := r.Header.Get("Sec-WebSocket-Version"); v != "13" {
		w.Header().Set("Sec-WebSocket-Version", "13")
		writeError(w, r, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("Sec-WebSocket-Version %q: only 13 is spoken", v))
		return false
	}
	if key, err := base64.StdEncoding.DecodeString(r.Header.Get("Sec-WebSocket-Key")); err != nil || len(key) != 16 {
		writeError(w, r, http.StatusBadRequest, CodeBadRequest, "Sec-WebSocket-Key: must be 16 bytes in base64")
		return false
	}
	return true
}

// headerHas reports whether h's field name lists token (comma-separated,
// without regard to case).
func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// serve reads the run request, admits it and runs it.
func (in *interactive) serve(conn context.Context, leave context.CancelCauseFunc) {
	s, r := in.s, in.r
	c := in.c
	c.SetReadLimit(s.maxBody)
	// A Read whose context ends closes the connection: the timeout is a
	// timer instead, which tells the client before closing.
	late := time.AfterFunc(s.rt, func() {
		in.refuse(http.StatusRequestTimeout, CodeRequestTimeout,
			fmt.Sprintf("the run request: not received within %s (server.read_timeout)", s.rt))
	})
	typ, data, err := c.Read(conn)
	if !late.Stop() {
		return // the refusal went out, or is going
	}
	if err != nil {
		// A message over the read limit was answered by the library: a
		// close with 1009 (message too big).
		s.log.Info("client left before its run request", "event", "client_gone", "request_id", requestID(r.Context()), "error", err)
		return
	}
	if typ != websocket.MessageText {
		in.refuse(http.StatusBadRequest, CodeBadRequest, "the first message must be the run request as a JSON text message")
		return
	}
	req, viaTimeout, ok := in.request(data)
	if !ok {
		return
	}
	in.stdinCap = int(min(int64(execute.MaxStdinBytes), s.maxBody))
	in.room = in.stdinCap - len(req.Stdin)

	// From here the client's messages are read as they come, while the
	// run waits for its slot and while it runs.
	c.SetReadLimit(MaxInteractiveMessageBytes)
	readerDone := make(chan struct{})
	run := leave
	var runMu sync.Mutex
	cut := func(err error) {
		runMu.Lock()
		f := run
		runMu.Unlock()
		f(err)
	}
	go func() {
		defer close(readerDone)
		in.read(conn, cut)
	}()
	defer func() {
		leave(nil)
		<-readerDone
	}()

	var held func()
	ok = in.answered(func(w http.ResponseWriter) bool {
		var ok bool
		held, ok = s.hold(w, r, 1)
		return ok
	})
	if !ok {
		return
	}
	defer held()
	var ctx context.Context
	var release func()
	ok = in.answered(func(w http.ResponseWriter) bool {
		var ok bool
		ctx, release, ok = s.clientRun(w, r, true, "/v1/run/ws")
		return ok
	})
	if !ok {
		return
	}
	defer release()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	runMu.Lock()
	run = cancel
	runMu.Unlock()
	in.run(ctx, cancel, req, viaTimeout)
}

// request decodes and checks the run request; ok is false when it was
// refused.
func (in *interactive) request(data []byte) (req execute.Request, viaTimeout, ok bool) {
	s, r := in.s, in.r
	var rr runRequest
	if err := decodeJSON(bytes.NewReader(data), &rr); err != nil {
		in.refuse(http.StatusBadRequest, CodeBadRequest, err.Error())
		return req, false, false
	}
	if rr.Mode != "" {
		in.refuse(http.StatusBadRequest, CodeBadRequest, "mode: an interactive run is a program fed stdin; a cell of an interpreter (mode \"interpreter\") takes none: use POST /v1/run")
		return req, false, false
	}
	rec := &bufferedAnswer{header: http.Header{}}
	if req, viaTimeout, ok = s.runOf(rec, r, &rr); !ok {
		in.sendRefusal(rec)
	}
	return req, viaTimeout, ok
}

// run runs req with its output sent as it is produced and its result
// last, then closes the connection normally.
func (in *interactive) run(ctx context.Context, cancel context.CancelCauseFunc, req execute.Request, viaTimeout bool) {
	s, r := in.s, in.r
	deliver := func(chunks []outstream.Chunk) error {
		for _, ch := range chunks {
			if in.final.Load() {
				return errFinal
			}
			d := string(ch.Data)
			if err := in.send(ctx, wsMessage{Type: ch.Stream.String(), Data: &d}); err != nil {
				cancel(errClientUnreachable)
				return err
			}
		}
		return nil
	}
	ping := func() error {
		pctx, done := context.WithTimeout(ctx, s.heartbeat)
		defer done()
		if err := in.c.Ping(pctx); err != nil {
			cancel(errClientUnheard)
			return err
		}
		return nil
	}
	pump := outstream.New(deliver, outstream.Options{Idle: s.heartbeat, OnIdle: ping})
	req.Stdout, req.Stderr = pump.Writer(outstream.Stdout), pump.Writer(outstream.Stderr)
	req.StdinReader = in.stdin
	start := time.Now()
	res, err := s.runner.Execute(ctx, req)
	// A Read of the sandbox's still waiting for the client is let go.
	in.stdin.close(context.Canceled)
	rest, perr := pump.Close()
	switch {
	case perr != nil || ctx.Err() != nil && s.runCtx.Err() == nil:
		// The client is gone, or broke the protocol (and was told).
		s.log.Info("interactive run ended by its client", "event", "client_gone", "request_id", requestID(r.Context()),
			"cause", context.Cause(ctx))
		return
	case ctx.Err() != nil:
		_ = deliver(rest)
		in.refuse(http.StatusServiceUnavailable, CodeShuttingDown, "the executor is shutting down")
		return
	case err != nil:
		_ = deliver(rest)
		in.refuseWith(func(w http.ResponseWriter) { s.refuseRun(w, r, err, viaTimeout) })
		return
	}
	s.metrics.finished("run", string(res.Status), runReason(res), time.Since(start))
	if deliver(rest) != nil || !in.final.CompareAndSwap(false, true) ||
		in.send(ctx, wsMessage{Type: "result", Result: res}) != nil {
		return
	}
	_ = in.c.Close(websocket.StatusNormalClosure, "")
}

// read takes the client's messages until the connection ends: stdin into
// the program's input, eof to end it. A broken message ends the run
// (cut) with an error message and a policy close.
func (in *interactive) read(conn context.Context, cut context.CancelCauseFunc) {
	for {
		typ, data, err := in.c.Read(conn)
		if err != nil {
			cut(errClientGone)
			in.stdin.close(errClientGone)
			return
		}
		msg, err := in.message(typ, data)
		if err != nil {
			cut(err)
			in.stdin.close(err)
			in.refuse(http.StatusBadRequest, CodeBadRequest, err.Error())
			return
		}
		if msg.Type == "eof" {
			in.stdin.close(io.EOF)
			continue
		}
		in.stdin.write([]byte(*msg.Data))
	}
}

// message decodes and checks one client message.
func (in *interactive) message(typ websocket.MessageType, data []byte) (clientMessage, error) {
	var msg clientMessage
	if typ != websocket.MessageText {
		return msg, errors.New("messages must be JSON text messages")
	}
	if err := strictjson.NewDecoder(bytes.NewReader(data)).Decode(&msg); err != nil {
		return msg, fmt.Errorf("message: %w", err)
	}
	in.stdin.mu.Lock()
	ended := in.stdin.closed
	in.stdin.mu.Unlock()
	switch msg.Type {
	case "stdin":
		if msg.Data == nil {
			return msg, errors.New(`a stdin message needs "data", a string`)
		}
		if ended {
			return msg, errors.New("stdin after eof")
		}
		if len(*msg.Data) > in.room {
			return msg, fmt.Errorf("%w: more than %d bytes in all", execute.ErrStdinTooLarge, in.stdinCap)
		}
		in.room -= len(*msg.Data)
	case "eof":
		if msg.Data != nil {
			return msg, errors.New(`an eof message has no "data"`)
		}
		if ended {
			return msg, errors.New("eof after eof")
		}
	default:
		return msg, fmt.Errorf(`message type %q: must be "stdin" or "eof"`, msg.Type)
	}
	return msg, nil
}

// send writes one message within the write timeout.
func (in *interactive) send(ctx context.Context, m wsMessage) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	wctx, done := context.WithTimeout(context.WithoutCancel(ctx), in.s.wt)
	defer done()
	return in.c.Write(wctx, websocket.MessageText, b)
}

// answered runs f, which answers over HTTP only when it refuses; that
// answer is sent as an error message. It reports whether f went on.
func (in *interactive) answered(f func(w http.ResponseWriter) bool) bool {
	rec := &bufferedAnswer{header: http.Header{}}
	if f(rec) {
		return true
	}
	if rec.status != 0 {
		in.sendRefusal(rec)
	}
	return false
}

// refuseWith sends the HTTP error f writes as an error message.
func (in *interactive) refuseWith(f func(w http.ResponseWriter)) {
	rec := &bufferedAnswer{header: http.Header{}}
	f(rec)
	in.sendRefusal(rec)
}

func (in *interactive) refuse(status int, code, msg string) {
	in.refuseWith(func(w http.ResponseWriter) { writeError(w, in.r, status, code, msg) })
}

// sendRefusal sends the error an HTTP answer carries, then closes: 1008
// for the client's mistakes, 1013 when the server is busy or stopping,
// 1011 otherwise.
func (in *interactive) sendRefusal(rec *bufferedAnswer) {
	if !in.final.CompareAndSwap(false, true) {
		return
	}
	var eb errorBody
	if json.Unmarshal(rec.body.Bytes(), &eb) != nil || eb.Error.Code == "" {
		id := requestID(in.r.Context())
		eb.Error = errorDetail{Code: CodeInternal, Message: "internal error; quote request id " + id, RequestID: id}
	}
	code := websocket.StatusInternalError
	switch {
	case rec.status == http.StatusServiceUnavailable || rec.status == http.StatusTooManyRequests:
		code = websocket.StatusTryAgainLater
	case rec.status >= 400 && rec.status < 500:
		code = websocket.StatusPolicyViolation
	}
	in.s.log.Info("interactive run refused", "event", "run_refused", "request_id", requestID(in.r.Context()),
		"status", rec.status, "code", eb.Error.Code)
	if in.send(in.r.Context(), wsMessage{Type: "error", Error: &eb.Error}) == nil {
		// The reason of a close frame is at most 123 bytes: the message
		// above carries the whole.
		_ = in.c.Close(code, eb.Error.Code)
	}
}
