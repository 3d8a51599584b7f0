package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coderunner/coderunner/internal/httpguard"
	"github.com/coderunner/coderunner/session"
)

// Header names of the streamable HTTP transport.
const (
	headerSession  = "Mcp-Session-Id"
	headerProtocol = "Mcp-Protocol-Version"
)

// defaultMaxHTTPSessions is how many MCP sessions over HTTP may be open.
const defaultMaxHTTPSessions = 1024

// statelessProtocol is the first protocol version of stateless MCP
// (server/discover and no sessions), which this handler does not serve.
const statelessProtocol = "2026-07-28"

// legacyVersions are the protocol versions this handler serves: the SDK's,
// up to the stateless protocol.
var legacyVersions = slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v >= statelessProtocol })

// HTTPOptions configure an HTTPHandler; zero fields take the defaults.
type HTTPOptions struct {
	// IdleTimeout closes a session that no request has used for this
	// long; the default is an hour.
	IdleTimeout time.Duration
	// MaxSessions caps the open sessions; the default is 1024.
	MaxSessions int
	// MaxBodyBytes caps a POST body; the default is the largest arguments
	// a tool takes plus the JSON-RPC envelope.
	MaxBodyBytes int64
	// AllowedHosts are further names of the server, besides localhost and
	// the loopback addresses, that the Host and Origin headers may carry
	// (see httpguard.Hosts).
	AllowedHosts []string
}

// HTTPHandler serves MCP's streamable HTTP transport (protocol versions
// 2024-11-05 to 2025-11-25) for a Server, one MCP session per client.
//
// A POST carries one JSON-RPC message, or, under protocol versions before
// 2025-06-18, a batch of them. An initialize request without a session
// opens one, whose id comes back in the Mcp-Session-Id header; every other
// POST names it, and gets 400 without one and 404 once it has ended, which
// tells the client to initialize again. Notifications and responses get
// 202. A request gets its response as a JSON body, unless it carries a
// progress token (params._meta.progressToken) and the client accepts
// text/event-stream: then its progress notifications and its response
// come as server-sent events and the stream ends. GET gets 405: the
// server sends nothing that is not tied to a request, so it offers no
// standalone stream. DELETE ends a session, cancelling its calls.
//
// A call is cancelled by notifications/cancelled, by its session ending,
// and by its POST going away before the response.
//
// Every refusal is a JSON body: a JSON-RPC error (its id null when the
// request's is not known), except the 404 of a session that is not open,
// whose body is {"error": "..."} because the SDK's client reads a JSON-RPC
// error there as the failure of one call rather than the session's end.
// 403 refuses a Host that is not local on a loopback listener (DNS
// rebinding) or not one of HTTPOptions.AllowedHosts when they are set,
// and an Origin that is not the server's own (httpguard.Hosts), 413 a body over MaxBodyBytes, 415 a body that is not JSON,
// 406 an Accept header that takes neither JSON nor an event stream, 400 an
// unsupported Mcp-Protocol-Version (with the SDK's
// CodeUnsupportedProtocolVersion for the stateless protocol, so that its
// client falls back to initialize), and 503 an initialize beyond
// MaxSessions.
type HTTPHandler struct {
	srv  *Server
	opts HTTPOptions

	mu       sync.Mutex
	sessions map[string]*httpSession
	starting int // sessions being set up, counted against MaxSessions
	closed   bool
}

var _ http.Handler = (*HTTPHandler)(nil)

// NewHTTPHandler returns a handler of the streamable HTTP transport for s.
func (s *Server) NewHTTPHandler(opts HTTPOptions) *HTTPHandler {
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = idleHTTPSession
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = defaultMaxHTTPSessions
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = maxLineBytes
	}
	return &HTTPHandler{srv: s, opts: opts, sessions: make(map[string]*httpSession)}
}

// Handler returns the streamable HTTP handler to mount at /mcp, an
// HTTPHandler with the default options: one MCP session per client
// (Mcp-Session-Id), closed after an hour idle, at most 1024 open, bodies
// capped at the largest arguments a tool takes, and requests whose Host
// is not local refused on a local listener (DNS rebinding protection).
// Calls are answered with JSON bodies, and with an event stream only when
// they ask for progress. Authentication is the caller's.
func (s *Server) Handler() http.Handler { return s.NewHTTPHandler(HTTPOptions{}) }

// Close ends every session and refuses new ones.
func (h *HTTPHandler) Close() error {
	h.mu.Lock()
	h.closed = true
	all := make([]*httpSession, 0, len(h.sessions))
	for _, s := range h.sessions {
		all = append(all, s)
	}
	h.mu.Unlock()
	for _, s := range all {
		s.end()
	}
	return nil
}

// ServeHTTP serves one request of the transport.
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// DNS rebinding: a page in a browser may reach a loopback listener
	// under a name it controls; such a request carries that name as Host.
	// A cross-site page carries its own Origin.
	if err := (httpguard.Hosts{Allowed: h.opts.AllowedHosts}).Check(r); err != nil {
		writeRPCError(w, http.StatusForbidden, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, err.Error(), nil)
		return
	}
	version := r.Header.Get(headerProtocol)
	if version != "" && !slices.Contains(legacyVersions, version) {
		if version >= statelessProtocol {
			// As the SDK's handler answers, so that its client falls back
			// to initialize.
			data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: legacyVersions, Requested: version})
			writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, mcp.CodeUnsupportedProtocolVersion, fmt.Sprintf("protocol version %s is not supported here; initialize with one of %s", version, strings.Join(legacyVersions, ", ")), data)
			return
		}
		writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("unsupported %s %q; supported: %s", headerProtocol, version, strings.Join(legacyVersions, ", ")), nil)
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.servePost(w, r, version)
	case http.MethodDelete:
		h.serveDelete(w, r)
	default:
		w.Header().Set("Allow", "POST, DELETE")
		writeRPCError(w, http.StatusMethodNotAllowed, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("%s is not served: POST sends messages, DELETE ends a session; this server has no standalone event stream", r.Method), nil)
	}
}

func (h *HTTPHandler) servePost(w http.ResponseWriter, r *http.Request, version string) {
	if ct := r.Header.Get("Content-Type"); !httpguard.IsJSON(ct) {
		writeRPCError(w, http.StatusUnsupportedMediaType, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Content-Type %q is not application/json", ct), nil)
		return
	}
	acc := accepts(r.Header.Values("Accept"))
	if !acc.json && !acc.sse {
		writeRPCError(w, http.StatusNotAcceptable, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "Accept must include application/json or text/event-stream (the spec asks for both)", nil)
		return
	}
	body, err := h.readBody(w, r)
	if err != nil {
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			writeRPCError(w, http.StatusRequestEntityTooLarge, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, fmt.Sprintf("the body is larger than %d bytes", tooLarge.Limit), nil)
		case errors.Is(err, os.ErrDeadlineExceeded):
			// The read deadline the caller set (httpapi's read timeout).
			writeRPCError(w, http.StatusRequestTimeout, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "the body did not arrive in time", nil)
		}
		// Otherwise the client went away while sending.
		return
	}
	p, err := decodePost(*body)
	putBuf(body)
	if err != nil {
		var be *bodyError
		if errors.As(err, &be) {
			writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, be.code, be.msg, nil)
		}
		return
	}
	if p.batch {
		// Without the header the protocol is 2025-03-26 (spec 2025-06-18,
		// basic/transports, protocol version header), which has batches.
		if version != "" && version >= "2025-06-18" {
			writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, errBatchRefused.Error(), nil)
			return
		}
	}
	id := r.Header.Get(headerSession)
	if id == "" {
		if !p.init {
			writeRPCError(w, http.StatusBadRequest, firstID(p), jsonrpc.CodeInvalidRequest, "no "+headerSession+" header: send initialize first to open a session", nil)
			return
		}
		h.initialize(w, r, p, acc)
		return
	}
	s := h.lookup(r.Context(), id)
	if s == nil || !s.begin() {
		writeNotFound(w, fmt.Sprintf("session %q is not open here (it ended, or was never opened): initialize again", id))
		return
	}
	defer s.finish()
	s.conn.serve(w, r, p, acc, nil)
}

// initialize opens a session for an initialize request and answers it;
// the session stays only if the initialization succeeds.
func (h *HTTPHandler) initialize(w http.ResponseWriter, r *http.Request, p *post, acc acceptance) {
	s, err := h.open(r.Context())
	if err != nil {
		writeRPCError(w, http.StatusServiceUnavailable, firstID(p), jsonrpc.CodeInternalError, err.Error(), nil)
		return
	}
	s.begin()
	ok := false
	s.conn.serve(w, r, p, acc, func(failed bool) {
		if !failed {
			ok = true
			w.Header().Set(headerSession, s.id)
		}
	})
	s.finish()
	if !ok || s.ss.InitializeParams() == nil {
		s.end()
	}
}

// readBody reads the body whole, in a buffer of the pool, up to the cap.
func (h *HTTPHandler) readBody(w http.ResponseWriter, r *http.Request) (*[]byte, error) {
	if r.ContentLength > h.opts.MaxBodyBytes {
		return nil, &http.MaxBytesError{Limit: h.opts.MaxBodyBytes}
	}
	body := http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes)
	buf := getBuf()
	b := *buf
	if n := int(r.ContentLength); n > 0 && cap(b) < n+1 {
		b = make([]byte, 0, n+1)
	}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			*buf = b
			return buf, nil
		}
		if err != nil {
			*buf = b
			putBuf(buf)
			return nil, err
		}
	}
}

// lookup finds the session id if the request's owner opened it.
func (h *HTTPHandler) lookup(ctx context.Context, id string) *httpSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[id]
	if s == nil || s.owner != session.Owner(ctx) {
		return nil
	}
	return s
}

func (h *HTTPHandler) serveDelete(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(headerSession)
	if id == "" {
		writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "DELETE needs the "+headerSession+" header of the session to end", nil)
		return
	}
	s := h.lookup(r.Context(), id)
	if s == nil {
		writeNotFound(w, fmt.Sprintf("session %q is not open here", id))
		return
	}
	s.end()
	w.WriteHeader(http.StatusNoContent)
}

// open starts a session on the SDK's server.
func (h *HTTPHandler) open(ctx context.Context) (*httpSession, error) {
	h.mu.Lock()
	switch {
	case h.closed:
		h.mu.Unlock()
		return nil, errors.New("the MCP endpoint is shutting down")
	case len(h.sessions)+h.starting >= h.opts.MaxSessions:
		h.mu.Unlock()
		return nil, fmt.Errorf("%d MCP sessions are open, the most this server keeps; end one (DELETE /mcp) or retry later", h.opts.MaxSessions)
	}
	h.starting++
	h.mu.Unlock()

	s := &httpSession{h: h, id: rand.Text(), owner: session.Owner(ctx), last: time.Now()}
	s.conn = newHTTPConn(ctx, h.srv, s.id, s.forget)
	// The session outlives the request that opens it, but keeps its
	// context's values.
	ss, err := h.srv.mcp.Connect(context.WithoutCancel(ctx), httpTransport{s.conn}, nil)
	h.mu.Lock()
	h.starting--
	if err == nil {
		s.ss = ss
		h.sessions[s.id] = s
	}
	h.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("unable to start an MCP session: %w", err)
	}
	s.mu.Lock()
	s.timer = time.AfterFunc(h.opts.IdleTimeout, s.expire)
	s.mu.Unlock()
	return s, nil
}

// httpSession is one client's MCP session.
type httpSession struct {
	h  *HTTPHandler
	id string
	// owner is the credential that opened the session (session.Owner):
	// its calls run in that owner's sessions, and requests of another
	// owner do not find it.
	owner string
	conn  *httpConn
	ss    *mcp.ServerSession

	mu    sync.Mutex
	refs  int       // requests in progress
	last  time.Time // when the last one ended
	ended bool
	timer *time.Timer
}

// begin counts a request in; false once the session ended.
func (s *httpSession) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	s.refs++
	return true
}

func (s *httpSession) finish() {
	s.mu.Lock()
	s.refs--
	s.last = time.Now()
	s.mu.Unlock()
}

// expire ends the session if it has been idle long enough, or looks again
// when it could be. A timer per session that fires once per idle period
// costs less than one reset per request.
func (s *httpSession) expire() {
	idle := s.h.opts.IdleTimeout
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	if wait := idle - time.Since(s.last); s.refs > 0 || wait > 0 {
		if s.refs > 0 {
			wait = idle
		}
		s.timer.Reset(wait)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.end()
}

// end closes the session: its calls are cancelled, and it returns once
// they have.
func (s *httpSession) end() {
	s.mu.Lock()
	s.ended = true
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	// Closing the connection first makes the SDK cancel the calls in
	// progress; closing the session waits for them to return.
	_ = s.conn.Close()
	if s.ss != nil {
		_ = s.ss.Close()
	}
}

// forget removes the session from the handler once its connection closed.
func (s *httpSession) forget() {
	h := s.h
	h.mu.Lock()
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
	}
	h.mu.Unlock()
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
}

// firstID is the id of a post's first request, for an error about it.
func firstID(p *post) jsonrpc.ID {
	for _, m := range p.msgs {
		if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
			return r.ID
		}
	}
	return jsonrpc.ID{}
}

// writeRPCError answers with a JSON-RPC error. Its id is null when the
// request's is not known.
func writeRPCError(w http.ResponseWriter, status int, id jsonrpc.ID, code int64, msg string, data json.RawMessage) {
	body, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: msg, Data: data}})
	if err == nil && !id.IsValid() {
		// The SDK leaves the id out; JSON-RPC asks for null.
		body = append([]byte(`{"jsonrpc":"2.0","id":null,`), body[len(`{"jsonrpc":"2.0",`):]...)
	}
	if err != nil {
		body = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	w.Header()["Content-Type"] = contentJSON
	if status == http.StatusServiceUnavailable {
		// Every 503 of the service says when to come back.
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeNotFound answers 404 for a session that is not open. Its body is
// not a JSON-RPC error on purpose: the SDK's client reads such a body as
// the failure of one call, and only a 404 without one as the session's end,
// which makes it initialize again.
func writeNotFound(w http.ResponseWriter, msg string) {
	body, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	w.Header()["Content-Type"] = contentJSON
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write(body)
}
