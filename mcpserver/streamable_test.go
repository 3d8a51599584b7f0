package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawServer drives an HTTPHandler with hand-written requests, straight
// through ServeHTTP, so that what is on the wire is exactly what the test
// says.
type rawServer struct {
	t  *testing.T
	h  *HTTPHandler
	fr *fakeRunner
}

func newRawServer(t *testing.T, opts HTTPOptions) *rawServer {
	t.Helper()
	s, fr := newServer(t)
	h := s.NewHTTPHandler(opts)
	t.Cleanup(func() { _ = h.Close() })
	return &rawServer{t: t, h: h, fr: fr}
}

// request builds a POST of body (or another method), with the headers a
// client of the spec sends; header values replace them, "" removes one.
func request(ctx context.Context, method, session, body string, header map[string]string) *http.Request {
	req := httptest.NewRequestWithContext(ctx, method, "/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set(headerSession, session)
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return req
}

func (rs *rawServer) do(method, session, body string, header map[string]string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	rs.h.ServeHTTP(rec, request(context.Background(), method, session, body, header))
	return rec
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// open initializes a session and returns its id.
func (rs *rawServer) open() string {
	rs.t.Helper()
	rec := rs.do(http.MethodPost, "", initializeBody, nil)
	id := rec.Header().Get(headerSession)
	if rec.Code != http.StatusOK || id == "" {
		rs.t.Fatalf("initialize: %d, session %q, %s", rec.Code, id, rec.Body)
	}
	if rec := rs.do(http.MethodPost, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil); rec.Code != http.StatusAccepted || rec.Body.Len() != 0 {
		rs.t.Fatalf("notifications/initialized: %d %q", rec.Code, rec.Body)
	}
	return id
}

type rpcResponse struct {
	ID     any             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func decodeResponse(t *testing.T, rec *httptest.ResponseRecorder) rpcResponse {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json; body %s", ct, rec.Body)
	}
	var r rpcResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
		t.Fatalf("body %s: %v", rec.Body, err)
	}
	return r
}

func TestHTTPRawCalls(t *testing.T) {
	rs := newRawServer(t, HTTPOptions{})
	id := rs.open()
	tests := []struct {
		name, body string
		check      func(t *testing.T, result string)
	}{
		{"tools/list", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, func(t *testing.T, result string) {
			for _, name := range []string{ToolExecuteCode, ToolJudgeCode, ToolListLanguages} {
				if !strings.Contains(result, `"name":"`+name+`"`) {
					t.Errorf("no tool %s in %s", name, result)
				}
			}
		}},
		{"tools/call", `{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"print hello"}}}`, func(t *testing.T, result string) {
			if !strings.Contains(result, `"stdout":"hello\n"`) || strings.Contains(result, `"isError":true`) {
				t.Errorf("result %s", result)
			}
		}},
		{"ping", `{"jsonrpc":"2.0","id":4,"method":"ping"}`, func(t *testing.T, result string) {
			if result != "{}" {
				t.Errorf("result %s", result)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := rs.do(http.MethodPost, id, tt.body, map[string]string{headerProtocol: "2025-06-18"})
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			r := decodeResponse(t, rec)
			var sent struct{ ID any }
			_ = json.Unmarshal([]byte(tt.body), &sent)
			if r.Error != nil || r.ID != sent.ID {
				t.Fatalf("response %s to id %v", rec.Body, sent.ID)
			}
			tt.check(t, string(r.Result))
		})
	}
}

// flushErrorWriter wraps a ResponseWriter as middleware often does (as
// httpapi's does): it has FlushError and Unwrap, for
// http.ResponseController, and no Flush method.
type flushErrorWriter struct{ http.ResponseWriter }

func (w flushErrorWriter) FlushError() error {
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w flushErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestHTTPAnswerFlushedThroughWrapper checks that a JSON answer is sent
// before the handler returns even behind a wrapper without Flush, as
// coderunner serve mounts the handler: otherwise the client waits for
// everything the middleware does on its way out.
func TestHTTPAnswerFlushedThroughWrapper(t *testing.T) {
	rs := newRawServer(t, HTTPOptions{})
	id := rs.open()
	for _, body := range []string{
		// Answered by the transport itself.
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"print hello"}}}`,
		// Answered through the SDK's session.
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_languages","arguments":{}}}`,
		// A batch, under a protocol version that has them.
		`[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","id":6,"method":"ping"}]`,
	} {
		rec := httptest.NewRecorder()
		version := "2025-06-18"
		if strings.HasPrefix(body, "[") {
			version = "2025-03-26"
		}
		rs.h.ServeHTTP(flushErrorWriter{rec}, request(context.Background(), http.MethodPost, id, body, map[string]string{headerProtocol: version}))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"result"`) {
			t.Fatalf("%s: status %d: %s", body, rec.Code, rec.Body)
		}
		if !rec.Flushed {
			t.Errorf("%s: the answer was not flushed through the wrapper", body)
		}
	}
}

// sseEvents splits an event stream into the data of its events.
func sseEvents(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	for ev := range strings.SplitSeq(strings.TrimSpace(body), "\n\n") {
		var data []string
		for line := range strings.SplitSeq(ev, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				data = append(data, d)
			}
		}
		if len(data) == 0 {
			t.Fatalf("an event without data: %q", ev)
		}
		out = append(out, strings.Join(data, "\n"))
	}
	return out
}

func TestHTTPProgressStream(t *testing.T) {
	rs := newRawServer(t, HTTPOptions{})
	id := rs.open()
	const body = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"progressToken":"p1"},"name":"judge_code","arguments":{"language":"python","code":"echo","test_cases":[{"input":"1\n","expected_output":"1\n"},{"input":"2\n","expected_output":"2\n"}]}}}`
	tests := []struct {
		accept     string
		wantStream bool
	}{
		{"application/json, text/event-stream", true},
		{"text/event-stream", true},
		// A client that takes only JSON gets the response alone.
		{"application/json", false},
	}
	for _, tt := range tests {
		t.Run(tt.accept, func(t *testing.T) {
			rec := rs.do(http.MethodPost, id, body, map[string]string{"Accept": tt.accept})
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			if !tt.wantStream {
				if r := decodeResponse(t, rec); r.Error != nil || r.ID != float64(7) {
					t.Fatalf("response %s", rec.Body)
				}
				return
			}
			if ct := rec.Header().Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("Content-Type %q: %s", ct, rec.Body)
			}
			events := sseEvents(t, rec.Body.String())
			// ready, one per test, then the response
			if len(events) != 4 {
				t.Fatalf("%d events, want 4: %q", len(events), events)
			}
			for i, ev := range events[:3] {
				var n struct {
					Method string
					Params struct {
						ProgressToken any
						Progress      float64
						Total         float64
					}
				}
				if err := json.Unmarshal([]byte(ev), &n); err != nil || n.Method != "notifications/progress" || n.Params.ProgressToken != "p1" || n.Params.Progress != float64(i) || n.Params.Total != 2 {
					t.Errorf("event %d: %s (%v)", i, ev, err)
				}
			}
			var r rpcResponse
			if err := json.Unmarshal([]byte(events[3]), &r); err != nil || r.ID != float64(7) || r.Error != nil || !strings.Contains(string(r.Result), `"all_passed"`) {
				t.Errorf("last event %s (%v)", events[3], err)
			}
		})
	}
}

func TestHTTPRefusals(t *testing.T) {
	rs := newRawServer(t, HTTPOptions{MaxBodyBytes: 64 << 10})
	id := rs.open()
	const list = `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`
	const batch = `[{"jsonrpc":"2.0","id":5,"method":"tools/list"},{"jsonrpc":"2.0","id":6,"method":"ping"}]`
	big := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"` + strings.Repeat("x", 100<<10) + `"}}}`
	tests := []struct {
		name          string
		method        string
		session       string
		body          string
		header        map[string]string
		wantStatus    int
		wantCode      int64 // the JSON-RPC error code; 0 for a body that is not one
		wantInMessage string
	}{
		{"no session", http.MethodPost, "", list, nil, 400, -32600, "initialize"},
		{"unknown session", http.MethodPost, "nope", list, nil, 404, 0, "not open"},
		{"bad JSON", http.MethodPost, id, `{"jsonrpc":`, nil, 400, -32700, ""},
		{"empty body", http.MethodPost, id, ``, nil, 400, -32700, "empty"},
		{"not JSON-RPC 2.0", http.MethodPost, id, `{"jsonrpc":"1.0","id":1,"method":"ping"}`, nil, 400, -32600, "2.0"},
		{"empty batch", http.MethodPost, id, `[]`, nil, 400, -32600, "batch"},
		{"batch under 2025-06-18", http.MethodPost, id, batch, map[string]string{headerProtocol: "2025-06-18"}, 400, -32600, "batch"},
		{"initialize in a batch", http.MethodPost, "", `[` + initializeBody + `]`, nil, 400, -32600, "batch"},
		{"oversized body", http.MethodPost, id, big, nil, 413, -32600, "larger than 65536"},
		{"not JSON content", http.MethodPost, id, list, map[string]string{"Content-Type": "text/plain"}, 415, -32600, "text/plain"},
		{"accepts neither", http.MethodPost, id, list, map[string]string{"Accept": "text/html"}, 406, -32600, "Accept"},
		{"unknown protocol version", http.MethodPost, id, list, map[string]string{headerProtocol: "1999-01-01"}, 400, -32600, "1999-01-01"},
		{"stateless protocol version", http.MethodPost, "", `{"jsonrpc":"2.0","id":1,"method":"server/discover"}`, map[string]string{headerProtocol: "2026-07-28"}, 400, mcp.CodeUnsupportedProtocolVersion, "2025-06-18"},
		{"GET", http.MethodGet, id, "", nil, 405, -32600, "no standalone event stream"},
		{"PUT", http.MethodPut, id, list, nil, 405, -32600, ""},
		{"DELETE without session", http.MethodDelete, "", "", nil, 400, -32600, headerSession},
		{"DELETE unknown session", http.MethodDelete, "nope", "", nil, 404, 0, "not open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := rs.do(tt.method, tt.session, tt.body, tt.header)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var r struct {
				JSONRPC string `json:"jsonrpc"`
				Error   json.RawMessage
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
				t.Fatalf("body %s is not JSON: %v", rec.Body, err)
			}
			var e struct {
				Code    int64
				Message string
			}
			if tt.wantCode == 0 {
				if r.JSONRPC != "" {
					t.Errorf("a 404 with a JSON-RPC body, which the SDK's client would not read as the session's end: %s", rec.Body)
				}
				_ = json.Unmarshal(r.Error, &e.Message)
			} else if err := json.Unmarshal(r.Error, &e); err != nil || r.JSONRPC != "2.0" || e.Code != tt.wantCode {
				t.Errorf("body %s, want JSON-RPC error %d", rec.Body, tt.wantCode)
			}
			if !strings.Contains(e.Message, tt.wantInMessage) {
				t.Errorf("message %q does not say %q", e.Message, tt.wantInMessage)
			}
		})
	}
	// The session is still there after all that.
	if rec := rs.do(http.MethodPost, id, list, nil); rec.Code != http.StatusOK {
		t.Errorf("tools/list after the refusals: %d %s", rec.Code, rec.Body)
	}
}

func TestHTTPBatch(t *testing.T) {
	rs := newRawServer(t, HTTPOptions{})
	id := rs.open()
	for _, version := range []string{"", "2025-03-26"} {
		t.Run("version "+version, func(t *testing.T) {
			rec := rs.do(http.MethodPost, id, `[{"jsonrpc":"2.0","id":10,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/whatever"},{"jsonrpc":"2.0","id":11,"method":"tools/list"}]`,
				map[string]string{headerProtocol: version})
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			var rs []rpcResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &rs); err != nil {
				t.Fatalf("body %s: %v", rec.Body, err)
			}
			ids := map[any]bool{}
			for _, r := range rs {
				if r.Error != nil {
					t.Errorf("error in %s", rec.Body)
				}
				ids[r.ID] = true
			}
			if len(rs) != 2 || !ids[float64(10)] || !ids[float64(11)] {
				t.Errorf("responses %s, want ids 10 and 11", rec.Body)
			}
		})
	}
	// A batch of notifications only.
	if rec := rs.do(http.MethodPost, id, `[{"jsonrpc":"2.0","method":"notifications/a"},{"jsonrpc":"2.0","method":"notifications/b"}]`, nil); rec.Code != http.StatusAccepted || rec.Body.Len() != 0 {
		t.Errorf("notifications: %d %q", rec.Code, rec.Body)
	}
}

func TestHTTPDuplicateID(t *testing.T) {
	rs := newRawServer(t, HTTPOptions{})
	id := rs.open()
	done := make(chan *httptest.ResponseRecorder)
	go func() {
		done <- rs.do(http.MethodPost, id, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"block"}}}`, nil)
	}()
	<-rs.fr.started
	rec := rs.do(http.MethodPost, id, `{"jsonrpc":"2.0","id":9,"method":"ping"}`, nil)
	if r := decodeResponse(t, rec); rec.Code != http.StatusBadRequest || r.Error == nil || !strings.Contains(r.Error.Message, "already in use") || r.ID != float64(9) {
		t.Errorf("a second call with id 9: %d %s", rec.Code, rec.Body)
	}
	rs.do(http.MethodPost, id, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`, nil)
	<-done
}

func TestHTTPHostCheck(t *testing.T) {
	rs := newRawServer(t, HTTPOptions{})
	tests := []struct {
		local  string
		host   string
		status int
	}{
		{"127.0.0.1:8080", "evil.example:8080", http.StatusForbidden},
		{"127.0.0.1:8080", "evil.example", http.StatusForbidden},
		{"[::1]:8080", "10.0.0.1:8080", http.StatusForbidden},
		{"127.0.0.1:8080", "localhost:8080", http.StatusOK},
		{"127.0.0.1:8080", "127.0.0.1:8080", http.StatusOK},
		{"[::1]:8080", "[::1]:8080", http.StatusOK},
		// A listener on a public address is reached by names the
		// operator chose; authentication is what guards it.
		{"10.0.0.5:8080", "mcp.example", http.StatusOK},
	}
	origins := []struct {
		host, origin string
		status       int
	}{
		{"127.0.0.1:8080", "https://evil.example", http.StatusForbidden},
		{"127.0.0.1:8080", "null", http.StatusForbidden},
		{"127.0.0.1:8080", "http://127.0.0.1:8080", http.StatusOK},
	}
	for _, tt := range origins {
		t.Run("origin "+tt.origin, func(t *testing.T) {
			addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
			ctx := context.WithValue(context.Background(), http.LocalAddrContextKey, addr)
			req := request(ctx, http.MethodPost, "", initializeBody, map[string]string{"Origin": tt.origin})
			req.Host = tt.host
			rec := httptest.NewRecorder()
			rs.h.ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Errorf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
		})
	}
	for _, tt := range tests {
		t.Run(tt.local+"/"+tt.host, func(t *testing.T) {
			addr, err := net.ResolveTCPAddr("tcp", tt.local)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.WithValue(context.Background(), http.LocalAddrContextKey, addr)
			req := request(ctx, http.MethodPost, "", initializeBody, nil)
			req.Host = tt.host
			rec := httptest.NewRecorder()
			rs.h.ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Errorf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
		})
	}
}

func TestHTTPDeleteEndsSession(t *testing.T) {
	rs := newRawServer(t, HTTPOptions{})
	id := rs.open()
	other := rs.open()
	// A call in progress when the session ends is cancelled, and its
	// POST answered.
	done := make(chan *httptest.ResponseRecorder)
	go func() {
		done <- rs.do(http.MethodPost, id, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"block"}}}`, nil)
	}()
	<-rs.fr.started
	if rec := rs.do(http.MethodDelete, id, "", nil); rec.Code != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", rec.Code, rec.Body)
	}
	select {
	case <-rs.fr.canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the call in progress was not cancelled")
	}
	if rec := <-done; rec.Code != http.StatusNotFound && rec.Code != http.StatusOK {
		t.Errorf("the POST of the cancelled call: %d %s", rec.Code, rec.Body)
	}
	for _, method := range []string{http.MethodPost, http.MethodDelete} {
		if rec := rs.do(method, id, `{"jsonrpc":"2.0","id":4,"method":"ping"}`, nil); rec.Code != http.StatusNotFound {
			t.Errorf("%s after DELETE: %d %s", method, rec.Code, rec.Body)
		}
	}
	if rec := rs.do(http.MethodPost, other, `{"jsonrpc":"2.0","id":4,"method":"ping"}`, nil); rec.Code != http.StatusOK {
		t.Errorf("another session after DELETE: %d %s", rec.Code, rec.Body)
	}
}

func TestHTTPSessionCap(t *testing.T) {
	rs := newRawServer(t, HTTPOptions{MaxSessions: 2})
	a := rs.open()
	rs.open()
	rec := rs.do(http.MethodPost, "", initializeBody, nil)
	if r := decodeResponse(t, rec); rec.Code != http.StatusServiceUnavailable || r.Error == nil || !strings.Contains(r.Error.Message, "2 MCP sessions are open") {
		t.Fatalf("a third session: %d %s", rec.Code, rec.Body)
	}
	if rec.Header().Get("Retry-After") == "" {
		t.Error("a 503 without Retry-After")
	}
	if rec.Header().Get(headerSession) != "" {
		t.Error("a refused initialize got a session id")
	}
	rs.do(http.MethodDelete, a, "", nil)
	rs.open()
}

// TestHTTPFailedInitialize checks that an initialize the server refuses
// leaves no session behind.
func TestHTTPFailedInitialize(t *testing.T) {
	rs := newRawServer(t, HTTPOptions{MaxSessions: 1})
	rec := rs.do(http.MethodPost, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":"nonsense"}`, nil)
	if r := decodeResponse(t, rec); r.Error == nil || rec.Header().Get(headerSession) != "" {
		t.Fatalf("a bad initialize: %d %s, session %q", rec.Code, rec.Body, rec.Header().Get(headerSession))
	}
	rs.open() // the one slot is free
}

func TestHTTPIdleSessionCloses(t *testing.T) {
	rs := newRawServer(t, HTTPOptions{IdleTimeout: 20 * time.Millisecond})
	id := rs.open()
	for i := 0; ; i++ {
		rec := rs.do(http.MethodPost, id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, nil)
		if rec.Code == http.StatusNotFound {
			break
		}
		if i == 500 {
			t.Fatal("an idle session was not closed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHTTPIdleTimerSparesBusySession(t *testing.T) {
	rs := newRawServer(t, HTTPOptions{IdleTimeout: 10 * time.Millisecond})
	id := rs.open()
	done := make(chan *httptest.ResponseRecorder)
	go func() {
		done <- rs.do(http.MethodPost, id, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"block"}}}`, nil)
	}()
	<-rs.fr.started
	// Several idle periods pass with the call in progress.
	time.Sleep(100 * time.Millisecond)
	select {
	case <-rs.fr.canceled:
		t.Fatal("a session with a call in progress was closed as idle")
	default:
	}
	rs.do(http.MethodPost, id, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`, nil)
	<-rs.fr.canceled
	<-done
}

func TestHTTPCancel(t *testing.T) {
	tests := []struct {
		name   string
		cancel func(rs *rawServer, session string, stopRequest context.CancelFunc)
	}{
		{"notifications/cancelled", func(rs *rawServer, session string, _ context.CancelFunc) {
			if rec := rs.do(http.MethodPost, session, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"test"}}`, nil); rec.Code != http.StatusAccepted {
				rs.t.Errorf("notifications/cancelled: %d %s", rec.Code, rec.Body)
			}
		}},
		{"client gone", func(_ *rawServer, _ string, stopRequest context.CancelFunc) { stopRequest() }},
	}
	for _, tt := range tests {
		for _, progress := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/progress=%v", tt.name, progress), func(t *testing.T) {
				rs := newRawServer(t, HTTPOptions{})
				id := rs.open()
				meta := ""
				if progress {
					meta = `"_meta":{"progressToken":1},`
				}
				ctx, stop := context.WithCancel(context.Background())
				defer stop()
				done := make(chan struct{})
				go func() {
					defer close(done)
					rs.h.ServeHTTP(httptest.NewRecorder(), request(ctx, http.MethodPost, id,
						`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{`+meta+`"name":"execute_code","arguments":{"language":"python","code":"block"}}}`, nil))
				}()
				<-rs.fr.started
				tt.cancel(rs, id, stop)
				select {
				case <-rs.fr.canceled:
				case <-time.After(10 * time.Second):
					t.Fatal("the call was not cancelled")
				}
				stop()
				<-done
				// The session goes on.
				if rec := rs.do(http.MethodPost, id, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"print ok"}}}`, nil); rec.Code != http.StatusOK {
					t.Errorf("a call after the cancellation: %d %s", rec.Code, rec.Body)
				}
			})
		}
	}
}

// TestHTTPNoGoroutineLeft checks that ending sessions, with calls in
// progress, leaves none of their goroutines behind.
func TestHTTPNoGoroutineLeft(t *testing.T) {
	rs := newRawServer(t, HTTPOptions{})
	before := runtime.NumGoroutine()
	var ids []string
	done := make(chan struct{}, 3)
	for range 3 {
		id := rs.open()
		ids = append(ids, id)
		rs.do(http.MethodPost, id, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, nil)
		go func() {
			rs.do(http.MethodPost, id, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"progressToken":"x"},"name":"execute_code","arguments":{"language":"python","code":"block"}}}`, nil)
			done <- struct{}{}
		}()
		<-rs.fr.started
	}
	if n := runtime.NumGoroutine(); n <= before {
		t.Fatalf("%d goroutines with 3 sessions open, %d before: the count tells nothing", n, before)
	}
	for _, id := range ids {
		if rec := rs.do(http.MethodDelete, id, "", nil); rec.Code != http.StatusNoContent {
			t.Fatalf("DELETE: %d", rec.Code)
		}
	}
	for range ids {
		<-done
	}
	var n int
	for range 500 {
		if n = runtime.NumGoroutine(); n <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 1<<20)
	t.Fatalf("%d goroutines after the sessions ended, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
}

// TestHTTPSDKClientSeesSessionEnd checks that when the server ends a
// session the SDK's client learns it as such (ErrSessionMissing), from
// the 404.
func TestHTTPSDKClientSeesSessionEnd(t *testing.T) {
	s, _ := newServer(t)
	h := s.NewHTTPHandler(HTTPOptions{})
	ts := httptest.NewServer(h)
	defer ts.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	_ = h.Close()
	_, err = cs.ListTools(context.Background(), nil)
	if !errors.Is(err, mcp.ErrSessionMissing) {
		t.Errorf("after the session ended: %v, want ErrSessionMissing", err)
	}
}
