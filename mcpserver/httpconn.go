package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errRejected tells the SDK that a message could not be delivered without
// the connection being broken: the SDK's jsonrpc2 layer recognises its code
// (-32005) and keeps the session.
var errRejected = &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}

// errSessionEnded is what a POST gets when its session ends under it.
var errSessionEnded = errors.New("the MCP session ended")

// httpConn is the mcp.Connection of one streamable HTTP session. Messages
// arrive in POST bodies, which the handler decodes once and hands to Read;
// each response goes back to the POST that carried its request, found by
// JSON-RPC id, and the progress notifications of a request whose POST is an
// event stream go to that stream, found by progress token. Nothing else can
// reach the client, since the handler offers no standalone event stream.
type httpConn struct {
	id string
	// direct answers plain execute_code calls without the SDK.
	direct    *directCalls
	incoming  chan jsonrpc.Message
	closed    chan struct{}
	closeOnce sync.Once
	onClose   func()

	mu       sync.Mutex
	pending  map[jsonrpc.ID]*answer
	progress map[any]*answer
}

func newHTTPConn(ctx context.Context, srv *Server, id string, onClose func()) *httpConn {
	return &httpConn{
		id:       id,
		direct:   newDirectCalls(srv, ctx),
		incoming: make(chan jsonrpc.Message),
		closed:   make(chan struct{}),
		onClose:  onClose,
		pending:  make(map[jsonrpc.ID]*answer),
		progress: make(map[any]*answer),
	}
}

// httpTransport hands the SDK a session's connection.
type httpTransport struct{ conn *httpConn }

var (
	_ mcp.Transport                = httpTransport{}
	_ mcp.ProtocolVersionSupporter = httpTransport{}
	_ mcp.Connection               = (*httpConn)(nil)
)

func (t httpTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }

// SupportsProtocolVersion keeps the SDK from offering the stateless
// protocol (2026-07-28 and later), which this transport does not serve.
func (httpTransport) SupportsProtocolVersion(v string) bool {
	return slices.Contains(legacyVersions, v)
}

func (c *httpConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.incoming:
		return m, nil
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// push hands m to Read. It fails when the session ends first, or when done
// is closed (the POST went away).
func (c *httpConn) push(done <-chan struct{}, m jsonrpc.Message) error {
	select {
	case c.incoming <- m:
		return nil
	case <-c.closed:
		return errSessionEnded
	case <-done:
		return context.Canceled
	}
}

func (c *httpConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.direct.sent(msg)
	switch m := msg.(type) {
	case *jsonrpc.Response:
		c.mu.Lock()
		w := c.pending[m.ID]
		if w != nil {
			delete(c.pending, m.ID)
			if w.token != nil && c.progress[w.token] == w {
				delete(c.progress, w.token)
			}
		}
		c.mu.Unlock()
		if w == nil {
			// Its POST is gone: the client cancelled the call or went away.
			return nil
		}
		buf := getBuf()
		data, err := appendResponse(*buf, m)
		if err != nil {
			putBuf(buf)
			return fmt.Errorf("marshaling response: %w", err)
		}
		*buf = data
		w.deliver(buf, true, m.Error != nil)
		return nil
	case *jsonrpc.Request:
		if m.Method == methodProgress && !m.IsCall() {
			if tok := notifiedToken(m.Params); tok != nil {
				c.mu.Lock()
				w := c.progress[tok]
				c.mu.Unlock()
				if w != nil {
					data, err := jsonrpc.EncodeMessage(m)
					if err != nil {
						return fmt.Errorf("marshaling notification: %w", err)
					}
					buf := getBuf()
					*buf = append(*buf, data...)
					if w.deliver(buf, false, false) {
						return nil
					}
				}
			}
		}
		return fmt.Errorf("%w: no stream to carry %s: this server has no standalone event stream", errRejected, m.Method)
	}
	return fmt.Errorf("%w: unexpected message %T", errRejected, msg)
}

func (c *httpConn) Close() error {
	c.closeOnce.Do(func() {
		c.direct.close()
		close(c.closed)
		if c.onClose != nil {
			c.onClose()
		}
	})
	return nil
}

// SessionID is the Mcp-Session-Id, which the SDK's ServerSession.ID
// reports.
func (c *httpConn) SessionID() string { return c.id }

// serve carries the messages of one POST to the session and answers it:
// 202 when they hold no request; otherwise the response as one JSON body,
// the responses of a batch as one JSON array, or, for a request that asks
// for progress and a client that accepts it, an event stream of its
// progress notifications and then its response. onAnswered, if set, is
// called before the response's headers are written, with whether the
// response is an error.
func (c *httpConn) serve(w http.ResponseWriter, r *http.Request, p *post, accepts acceptance, onAnswered func(failed bool)) {
	done := r.Context().Done()
	if p.calls == 0 {
		for _, m := range p.msgs {
			c.direct.take(m) // a cancellation of a call it runs
			if err := c.push(done, m); err != nil {
				if errors.Is(err, errSessionEnded) {
					writeNotFound(w, err.Error())
				}
				return
			}
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	kind := answerJSON
	switch {
	case p.batch:
		kind = answerBatch
	case p.token != nil && accepts.sse || !accepts.json:
		kind = answerStream
	}
	a := newAnswer(w, kind, p.calls)
	a.onAnswered = onAnswered
	ids := p.ids()
	c.mu.Lock()
	for i, id := range ids {
		if _, dup := c.pending[id]; dup {
			for _, prev := range ids[:i] {
				delete(c.pending, prev)
			}
			c.mu.Unlock()
			writeRPCError(w, http.StatusBadRequest, id, jsonrpc.CodeInvalidRequest, idInUse(id), nil)
			return
		}
		c.pending[id] = a
	}
	if kind == answerStream && p.token != nil {
		if _, dup := c.progress[p.token]; !dup {
			c.progress[p.token] = a
			a.token = p.token
		}
	}
	c.mu.Unlock()

	if kind == answerStream {
		a.startStream()
	}
	for _, m := range p.msgs {
		if call, ok := c.direct.take(m); ok && !p.batch {
			// Answered in this goroutine, which waits for the answer
			// anyway: a dropped request or the session's end cancels it.
			c.direct.run(r.Context(), call, func(resp *jsonrpc.Response) { _ = c.Write(r.Context(), resp) })
			continue
		}
		if err := c.push(done, m); err != nil {
			c.abandon(a, ids, "")
			if a.giveUp() && errors.Is(err, errSessionEnded) && kind != answerStream {
				writeNotFound(w, err.Error())
			}
			return
		}
	}
	select {
	case <-a.done:
		if a.broken {
			c.abandon(a, ids, "the HTTP request of the call went away")
		}
	case <-done:
		if a.giveUp() {
			c.abandon(a, ids, "the HTTP request of the call went away")
		}
	case <-c.closed:
		if a.giveUp() {
			c.abandon(a, ids, "")
			// An event stream that ends without the response tells the
			// client the call will get none.
			if kind != answerStream {
				writeNotFound(w, errSessionEnded.Error())
			}
		}
	}
}

// abandon forgets the calls of a POST that will not read their answers and,
// with a reason, asks the server to cancel those still running, as the
// client would with notifications/cancelled.
func (c *httpConn) abandon(wt *answer, ids []jsonrpc.ID, reason string) {
	var running []jsonrpc.ID
	c.mu.Lock()
	for _, id := range ids {
		if c.pending[id] == wt {
			delete(c.pending, id)
			running = append(running, id)
		}
	}
	if wt.token != nil && c.progress[wt.token] == wt {
		delete(c.progress, wt.token)
	}
	c.mu.Unlock()
	if reason == "" {
		return
	}
	for _, id := range running {
		params, err := json.Marshal(mcp.CancelledParams{RequestID: id.Raw(), Reason: reason})
		if err != nil {
			continue
		}
		if c.push(nil, &jsonrpc.Request{Method: methodCancelled, Params: params}) != nil {
			return
		}
	}
}

// appendEvent appends data as one server-sent event. JSON from the SDK
// has no line breaks, but a data line must not hold one, so any there is
// starts a new data line.
func appendEvent(b, data []byte) []byte {
	b = append(b, "event: message\n"...)
	for {
		line, rest, more := bytes.Cut(data, []byte{'\n'})
		b = append(b, "data: "...)
		b = append(b, bytes.TrimSuffix(line, []byte{'\r'})...)
		b = append(b, '\n')
		if !more {
			break
		}
		data = rest
	}
	return append(b, '\n')
}

// appendResponse appends the wire form of r, as jsonrpc.EncodeMessage
// gives it, without marshaling the result a second time: the SDK has
// marshaled it already, and re-encoding would only scan it again.
func appendResponse(b []byte, r *jsonrpc.Response) ([]byte, error) {
	if r.Error == nil && len(r.Result) > 0 {
		switch id := r.ID.Raw().(type) {
		case int64:
			b = append(b, `{"jsonrpc":"2.0","id":`...)
			b = strconv.AppendInt(b, id, 10)
			b = append(b, `,"result":`...)
			b = append(b, r.Result...)
			return append(b, '}'), nil
		case string:
			// As the SDK writes it, without escaping HTML.
			var q bytes.Buffer
			enc := json.NewEncoder(&q)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(id); err != nil {
				return b, err
			}
			b = append(b, `{"jsonrpc":"2.0","id":`...)
			b = append(b, bytes.TrimSuffix(q.Bytes(), []byte{'\n'})...)
			b = append(b, `,"result":`...)
			b = append(b, r.Result...)
			return append(b, '}'), nil
		}
	}
	data, err := jsonrpc.EncodeMessage(r)
	if err != nil {
		return b, err
	}
	return append(b, data...), nil
}

// notifiedToken is the progress token of a progress notification's params.
func notifiedToken(params json.RawMessage) any {
	var p struct {
		Token any `json:"progressToken"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	return tokenKey(p.Token)
}

// tokenKey keeps the tokens the protocol allows, a string or a number, and
// drops others, which could not be map keys.
func tokenKey(v any) any {
	switch v.(type) {
	case string, float64:
		return v
	}
	return nil
}

// bufPool holds the buffers of bodies read and messages written.
var bufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 4<<10)
	return &b
}}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if b == nil || cap(*b) > 1<<20 {
		return
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}

var (
	contentJSON = []string{"application/json"}
	contentSSE  = []string{"text/event-stream"}
	noCache     = []string{"no-cache"}
)

const (
	methodInitialize = "initialize"
	methodProgress   = "notifications/progress"
	methodCancelled  = "notifications/cancelled"
)
