package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// methodCallTool is the method of a tool call.
const methodCallTool = "tools/call"

// directCalls answers one session's plain execute_code calls in the
// transport, with the handler the SDK's server calls and the response it
// would write, but without passing through the SDK's session on the way
// in and out. There, a call is handed between three goroutines and its
// parameters decoded twice more with the SDK's decoder, which allocates
// 32 KB each time; after a sandboxed run has left the caches cold, that
// was 0.2 ms of every call (p50, measured in coderunner mcp and serve on
// 2 cores).
//
// Only what the SDK would answer the same way is taken: a call (with an
// id) of tools/call whose parameters are exactly a name, execute_code,
// and arguments, once the session's initialize has been answered.
// Anything with _meta (a progress token, the per-request protocol), any
// other field or tool, a batch over HTTP (whose answers go back together
// in one body), and everything before initialization goes to the SDK;
// over stdio, a batch's answers go one per line anyway, and its plain
// calls are taken. A cancellation notification naming a call taken here
// cancels it (and still reaches the SDK, for which the id is unknown).
type directCalls struct {
	srv *Server
	// base ends with the session: every call's context derives from it.
	base context.Context
	end  context.CancelFunc

	mu sync.Mutex
	// initID is the id of the initialize request the SDK is answering;
	// ready is set once it answered it with a result.
	initID  jsonrpc.ID
	ready   bool
	running map[jsonrpc.ID]context.CancelFunc
}

// newDirectCalls takes the calls of one session, whose contexts carry the
// values of parent (the session's owner: see session.WithOwner), not its
// end.
func newDirectCalls(srv *Server, parent context.Context) *directCalls {
	base, end := context.WithCancel(context.WithoutCancel(parent))
	return &directCalls{srv: srv, base: base, end: end, running: make(map[jsonrpc.ID]context.CancelFunc)}
}

// directCall is a call taken by directCalls.
type directCall struct {
	id   jsonrpc.ID
	args json.RawMessage
}

// callParams are the only parameters of a call taken here.
type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// take returns the call msg is, when this path answers it. It also
// follows what the SDK is given: the initialize request, and the
// cancellation of a call taken here.
func (d *directCalls) take(msg jsonrpc.Message) (*directCall, bool) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return nil, false
	}
	switch {
	case req.Method == methodInitialize && req.IsCall():
		d.mu.Lock()
		d.initID = req.ID
		d.mu.Unlock()
		return nil, false
	case req.Method == methodCancelled && !req.IsCall():
		d.cancel(req.Params)
		return nil, false
	case req.Method != methodCallTool || !req.IsCall():
		return nil, false
	}
	d.mu.Lock()
	ready := d.ready
	d.mu.Unlock()
	if !ready || !bytes.Contains(req.Params, []byte(`"execute_code"`)) {
		return nil, false
	}
	var p callParams
	dec := json.NewDecoder(bytes.NewReader(req.Params))
	dec.DisallowUnknownFields()
	if dec.Decode(&p) != nil || dec.More() || p.Name != ToolExecuteCode {
		return nil, false
	}
	return &directCall{id: req.ID, args: p.Arguments}, true
}

// sent follows what the SDK writes: the answer to initialize opens this
// path.
func (d *directCalls) sent(msg jsonrpc.Message) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil {
		return
	}
	d.mu.Lock()
	if d.initID.IsValid() && resp.ID == d.initID {
		d.ready = true
	}
	d.mu.Unlock()
}

// cancel cancels the call a cancellation notification names, if it was
// taken here.
func (d *directCalls) cancel(params json.RawMessage) {
	var p mcp.CancelledParams
	if json.Unmarshal(params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	d.mu.Lock()
	stop := d.running[id]
	d.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// run answers c with write, in the calling goroutine; ctx also ends the
// call (the HTTP request that carries it, the session's reading). A
// cancelled call is answered with an error, as the SDK answers it.
func (d *directCalls) run(ctx context.Context, c *directCall, write func(*jsonrpc.Response)) {
	callCtx, cancel := context.WithCancel(d.base)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	d.mu.Lock()
	if _, dup := d.running[c.id]; dup {
		// The SDK, which does not know of the running call, cannot
		// refuse its id.
		d.mu.Unlock()
		write(&jsonrpc.Response{ID: c.id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: idInUse(c.id)}})
		return
	}
	d.running[c.id] = cancel
	d.mu.Unlock()

	res, err := d.srv.executeCode(callCtx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: ToolExecuteCode, Arguments: c.args}})
	answer := &jsonrpc.Response{ID: c.id}
	if err == nil {
		answer.Result, err = marshalResult(res)
	}
	if err != nil {
		answer.Result, answer.Error = nil, wireError(err)
	}
	// The client may use the id again once it has the answer: it is
	// free before the answer goes.
	d.mu.Lock()
	delete(d.running, c.id)
	d.mu.Unlock()
	write(answer)
}

// idInUse is the refusal of a call whose id a running call has.
func idInUse(id jsonrpc.ID) string {
	return fmt.Sprintf("request id %v is already in use by a call in progress", id.Raw())
}

// wireError is the error response the SDK makes of a handler's error (a
// cancelled call's included): its text, with the code of the JSON-RPC
// error it wraps, if any, else 0.
func wireError(err error) *jsonrpc.Error {
	e := &jsonrpc.Error{Message: err.Error()}
	var wrapped *jsonrpc.Error
	if errors.As(err, &wrapped) {
		e.Code = wrapped.Code
	}
	return e
}

// marshalResult encodes a tool's result as the SDK does, content never
// null.
func marshalResult(res *mcp.CallToolResult) (json.RawMessage, error) {
	if data, ok, err := appendResult(nil, res); ok || err != nil {
		return data, err
	}
	if res.Content == nil {
		r := *res
		r.Content = []mcp.Content{}
		res = &r
	}
	data, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("marshaling the result: %w", err)
	}
	return data, nil
}

// appendResult appends the wire form of a result of the shape this
// package's tools make (one text, and structured content that structured
// encoded), the bytes json.Marshal gives, in one pass over the text and
// one over the structured content; false for any other shape, which
// json.Marshal encodes. json.Marshal takes three passes: the result, the
// text content, and the result again to compact what their MarshalJSON
// methods returned, a fifth of the CPU of a call over /mcp, client and
// server, with a runner that answers at once (httpapi's
// BenchmarkMCPOverHTTP).
func appendResult(b []byte, res *mcp.CallToolResult) ([]byte, bool, error) {
	if res.Meta != nil || res.InputRequests != nil || res.RequestState != "" || len(res.Content) != 1 {
		return b, false, nil
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok || tc.Meta != nil || tc.Annotations != nil {
		return b, false, nil
	}
	sc, ok := res.StructuredContent.(encodedJSON)
	if res.StructuredContent != nil && (!ok || len(sc) == 0) {
		return b, false, nil
	}
	// A string, encoded as json.Marshal encodes it, HTML escaped.
	text, err := json.Marshal(tc.Text)
	if err != nil {
		return b, false, fmt.Errorf("marshaling the result: %w", err)
	}
	b = slices.Grow(b, len(text)+len(sc)+64)
	b = append(b, `{"content":[{"type":"text","text":`...)
	b = append(b, text...)
	b = append(b, `}]`...)
	if sc != nil {
		b = append(b, `,"structuredContent":`...)
		b = appendHTMLEscaped(b, sc)
	}
	if res.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, '}'), true, nil
}

// encodedJSON is structured content that structured encoded: compact JSON,
// which appendResult can copy as it is, where json.Marshal would scan a
// json.RawMessage to compact it.
type encodedJSON []byte

// MarshalJSON returns the JSON as it is.
func (e encodedJSON) MarshalJSON() ([]byte, error) {
	if e == nil {
		return []byte("null"), nil
	}
	return e, nil
}

// appendHTMLEscaped appends compact JSON with <, >, &, U+2028 and U+2029
// escaped in its strings, as json.Marshal writes a json.Marshaler's JSON
// (json.HTMLEscape, without a bytes.Buffer). Outside strings JSON has none
// of them.
func appendHTMLEscaped(b, src []byte) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c == '<' || c == '>' || c == '&' {
			b = append(b, src[start:i]...)
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			start = i + 1
		}
		// U+2028 and U+2029 are E2 80 A8 and E2 80 A9.
		if c == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8 {
			b = append(b, src[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[src[i+2]&0xF])
			start = i + 3
			i += 2
		}
	}
	return append(b, src[start:]...)
}

// close cancels the running calls: the session ended.
func (d *directCalls) close() { d.end() }
