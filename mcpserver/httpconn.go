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
	incoming  chan jsonrpc.Message
	closed    chan struct{}
	closeOnce sync.Once
	onClose   func()

	mu       sync.Mutex
	pending  map[jsonrpc.ID]*waiter
	progress map[any]*waiter
}

func newHTTPConn(onClose func()) *httpConn {
	return &httpConn{
		incoming: make(chan jsonrpc.Message),
		closed:   make(chan struct{}),
		onClose:  onClose,
		pending:  make(map[jsonrpc.ID]*waiter),
		progress: make(map[any]*waiter),
	}
}

// waiter is one POST waiting for what the server sends for its requests.
type waiter struct {
	out chan outgoing
	// done is the POST's context's: closed once its handler has returned,
	// so that a write never blocks on a POST that no longer reads.
	done <-chan struct{}
	// token is the progress token routed to this waiter, if any.
	token any
}

// outgoing is one encoded message on its way to a POST.
type outgoing struct {
	buf    *[]byte
	final  bool // a response, rather than a notification
	failed bool // an error response
}

// send hands o to the waiter's POST; it gives the buffer back when the POST
// is gone.
func (w *waiter) send(ctx context.Context, o outgoing) bool {
	select {
	case w.out <- o:
		return true
	case <-w.done:
	case <-ctx.Done():
	}
	putBuf(o.buf)
	return false
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
	switch m := msg.(type) {
	case *jsonrpc.Response:
		c.mu.Lock()
		w := c.pending[m.ID]
		if w != nil {
			delete(c.pending, m.ID)
			if w.token != nil {
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
		w.send(ctx, outgoing{buf: buf, final: true, failed: m.Error != nil})
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
					if w.send(ctx, outgoing{buf: buf}) {
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
		close(c.closed)
		if c.onClose != nil {
			c.onClose()
		}
	})
	return nil
}

// SessionID is empty: the SDK needs it only for its own transports.
func (c *httpConn) SessionID() string { return "" }

// serve carries the messages of one POST to the session and answers it:
// 202 when they hold no request; otherwise the response as one JSON body,
// the responses of a batch as one JSON array, or, for a request that asks
// for progress and a client that accepts it, an event stream of its
// progress notifications and then its response.
func (c *httpConn) serve(w http.ResponseWriter, r *http.Request, p *post, accepts acceptance, onAnswered func(failed bool)) {
	done := r.Context().Done()
	if p.calls == 0 {
		for _, m := range p.msgs {
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
	stream := p.token != nil && accepts.sse || !accepts.json
	slack := 0
	if stream {
		slack = 16
	}
	wt := &waiter{out: make(chan outgoing, p.calls+slack), done: done}
	ids := p.ids()
	c.mu.Lock()
	for i, id := range ids {
		if _, dup := c.pending[id]; dup {
			for _, prev := range ids[:i] {
				delete(c.pending, prev)
			}
			c.mu.Unlock()
			writeRPCError(w, http.StatusBadRequest, id, jsonrpc.CodeInvalidRequest, fmt.Sprintf("request id %v is already in use by a call in progress", id.Raw()), nil)
			return
		}
		c.pending[id] = wt
	}
	if stream && p.token != nil {
		if _, dup := c.progress[p.token]; !dup {
			c.progress[p.token] = wt
			wt.token = p.token
		}
	}
	c.mu.Unlock()

	for _, m := range p.msgs {
		if err := c.push(done, m); err != nil {
			c.abandon(wt, ids, "")
			if errors.Is(err, errSessionEnded) {
				writeNotFound(w, err.Error())
			}
			return
		}
	}
	if stream {
		c.stream(w, r, wt, ids, onAnswered)
		return
	}

	var single outgoing
	var all []outgoing
	for got := 0; got < p.calls; got++ {
		select {
		case o := <-wt.out:
			if p.batch {
				all = append(all, o)
			} else {
				single = o
			}
		case <-done:
			c.abandon(wt, ids, "the HTTP request of the call went away")
			releaseAll(all)
			return
		case <-c.closed:
			c.abandon(wt, ids, "")
			releaseAll(all)
			writeNotFound(w, errSessionEnded.Error())
			return
		}
	}
	h := w.Header()
	h["Content-Type"] = contentJSON
	if !p.batch {
		if onAnswered != nil {
			onAnswered(single.failed)
		}
		h["Content-Length"] = []string{strconv.Itoa(len(*single.buf))}
		_, _ = w.Write(*single.buf)
		putBuf(single.buf)
		return
	}
	body := getBuf()
	b := append(*body, '[')
	for i, o := range all {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, *o.buf...)
	}
	b = append(b, ']')
	*body = b
	releaseAll(all)
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	_, _ = w.Write(b)
	putBuf(body)
}

// stream answers one request with an event stream: what the server sends
// for it, its response last.
func (c *httpConn) stream(w http.ResponseWriter, r *http.Request, wt *waiter, ids []jsonrpc.ID, onAnswered func(failed bool)) {
	h := w.Header()
	h["Content-Type"] = contentSSE
	h["Cache-Control"] = noCache
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	ev := getBuf()
	defer putBuf(ev)
	for {
		select {
		case o := <-wt.out:
			if o.final && onAnswered != nil {
				onAnswered(o.failed)
			}
			*ev = appendEvent((*ev)[:0], *o.buf)
			putBuf(o.buf)
			_, err := w.Write(*ev)
			if err == nil {
				err = rc.Flush()
			}
			if err != nil {
				c.abandon(wt, ids, "the HTTP request of the call went away")
				return
			}
			if o.final {
				return
			}
		case <-r.Context().Done():
			c.abandon(wt, ids, "the HTTP request of the call went away")
			return
		case <-c.closed:
			// Ending the stream without the response tells the client that
			// the call will get none.
			c.abandon(wt, ids, "")
			return
		}
	}
}

// abandon forgets the calls of a POST that will not read their answers and,
// with a reason, asks the server to cancel those still running, as the
// client would with notifications/cancelled.
func (c *httpConn) abandon(wt *waiter, ids []jsonrpc.ID, reason string) {
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

func releaseAll(os []outgoing) {
	for _, o := range os {
		putBuf(o.buf)
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
			q, err := json.Marshal(id)
			if err != nil {
				return b, err
			}
			b = append(b, `{"jsonrpc":"2.0","id":`...)
			b = append(b, q...)
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
