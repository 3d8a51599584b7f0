package httpapi

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// loopbackAddr is what a request served on a loopback listener carries as
// its local address.
var loopbackAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}

// doAt sends one request to s as if it arrived on the listener local,
// with the given Host, and checks the answer against the OpenAPI
// document.
func doAt(t *testing.T, s *Server, local net.Addr, host, method, path, body string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Host = host
	req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, local))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	checkContract(t, method, path, rec)
	return rec
}

// TestWebPageRefused attacks every route the way a web page in the
// caller's browser can: under a name that resolves to the loopback
// listener (DNS rebinding), from another site's Origin, and with a body
// sent as text/plain, a form or multipart (no CORS preflight). None may
// reach a handler: the fake executor must not see a single run.
func TestWebPageRefused(t *testing.T) {
	s, fe := newTestServer(t, func(o *Options) {
		o.Sessions = &fakeSessions{live: map[string]bool{"s1": true}}
	})
	const run = `{"language":"python","code":"print(1)"}`
	judgeBody := `{"code":"x","language":"python","test_cases":[{"input":"","expected_output":""}]}`
	routes := []struct{ method, path, body string }{
		{"POST", "/execute", validExecute},
		{"POST", "/v1/run", run},
		{"POST", "/v1/judge", judgeBody},
		{"DELETE", "/v1/sessions/s1", ""},
		{"GET", "/health", ""},
		{"GET", "/metrics", ""},
		{"GET", "/openapi.yaml", ""},
		{"PUT", "/v1/run", ""},
	}
	jsonCT := map[string]string{"Content-Type": "application/json"}
	for _, rt := range routes {
		for _, host := range []string{"attacker.example", "attacker.example:8080", "10.0.0.5:8080"} {
			rec := doAt(t, s, loopbackAddr, host, rt.method, rt.path, rt.body, jsonCT)
			if rec.Code != http.StatusForbidden || errOf(t, rec).Code != CodeForbidden || !strings.Contains(rec.Body.String(), "Host") {
				t.Errorf("%s %s with Host %s: %d %s, want 403 naming the Host", rt.method, rt.path, host, rec.Code, rec.Body)
			}
		}
		for _, origin := range []string{"https://attacker.example", "http://127.0.0.1:3000", "null"} {
			h := map[string]string{"Content-Type": "application/json", "Origin": origin}
			rec := doAt(t, s, loopbackAddr, "127.0.0.1:8080", rt.method, rt.path, rt.body, h)
			if rec.Code != http.StatusForbidden || errOf(t, rec).Code != CodeForbidden || !strings.Contains(rec.Body.String(), "Origin") {
				t.Errorf("%s %s with Origin %s: %d %s, want 403 naming the Origin", rt.method, rt.path, origin, rec.Code, rec.Body)
			}
		}
	}
	for _, rt := range routes[:3] {
		for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "", "application/json; charset=latin1"} {
			rec := doAt(t, s, loopbackAddr, "127.0.0.1:8080", rt.method, rt.path, rt.body, map[string]string{"Content-Type": ct})
			if rec.Code != http.StatusUnsupportedMediaType || errOf(t, rec).Code != CodeUnsupportedMedia || !strings.Contains(rec.Body.String(), "application/json") {
				t.Errorf("%s %s as %q: %d %s, want 415 naming application/json", rt.method, rt.path, ct, rec.Code, rec.Body)
			}
		}
	}
	fe.mu.Lock()
	runs := len(fe.runs)
	fe.mu.Unlock()
	if runs != 0 {
		t.Fatalf("%d refused requests reached the executor", runs)
	}

	// What a local client sends is served: a loopback name, the server's
	// own Origin, JSON with a charset.
	for _, host := range []string{"127.0.0.1:8080", "localhost:8080", "[::1]:8080"} {
		h := map[string]string{"Content-Type": "application/json; charset=utf-8", "Origin": "http://" + host}
		for _, rt := range routes[:3] {
			if rec := doAt(t, s, loopbackAddr, host, rt.method, rt.path, rt.body, h); rec.Code != http.StatusOK {
				t.Errorf("%s %s from %s: %d %s", rt.method, rt.path, host, rec.Code, rec.Body)
			}
		}
	}
}

// TestAllowedHosts: names in AllowedHosts are served on a loopback
// listener; on a wide listener with the list set, other names are refused,
// and without it any name is served (the token guards such a listener).
func TestAllowedHosts(t *testing.T) {
	s, _ := newTestServer(t, func(o *Options) { o.AllowedHosts = []string{"runner.internal"} })
	wide := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 8080}
	for _, tc := range []struct {
		local net.Addr
		host  string
		want  int
	}{
		{loopbackAddr, "runner.internal:8080", 200},
		{wide, "runner.internal", 200},
		{wide, "127.0.0.1:8080", 200},
		{wide, "attacker.example", 403},
		{wide, "10.0.0.5:8080", 403},
	} {
		if rec := doAt(t, s, tc.local, tc.host, "GET", "/health", "", nil); rec.Code != tc.want {
			t.Errorf("Host %s on %s: %d, want %d", tc.host, tc.local, rec.Code, tc.want)
		}
	}
	open, _ := newTestServer(t, nil)
	if rec := doAt(t, open, wide, "anything.example", "GET", "/health", "", nil); rec.Code != 200 {
		t.Errorf("any Host on a wide listener without a list: %d", rec.Code)
	}
}

// TestRebindingOverTheWire is the attack of the review against a real
// loopback listener: a request with Host attacker.example and a text/plain
// body is refused, and /mcp refuses it too.
func TestRebindingOverTheWire(t *testing.T) {
	s, ts := newMCPServer(t, nil)
	_ = s
	for _, path := range []string{"/v1/run", "/execute", "/mcp"} {
		req, err := http.NewRequest("POST", ts.URL+path, strings.NewReader(`{"language":"python","code":"print(1)"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "attacker.example"
		req.Header.Set("Content-Type", "text/plain")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), CodeForbidden) {
			t.Errorf("%s from attacker.example: %d %s", path, resp.StatusCode, b)
		}
	}
}

// wideListener is a loopback listener that says it listens on every
// address, as one bound to 0.0.0.0 does.
type wideListener struct{ net.Listener }

func (wideListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4zero, Port: 8080} }

// TestServeNeedsToken: Serve refuses, before answering anything, a
// listener that is not loopback, or a control plane, without an API token.
func TestServeNeedsToken(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Options)
		wide bool
		want string
	}{
		{"wide listener", nil, true, "not a loopback address and no API token"},
		{"control plane", func(o *Options) { o.Reporter = nopReporter{} }, false, "control plane is configured and no API token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestServer(t, tc.edit)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			l := ln
			if tc.wide {
				l = wideListener{ln}
			}
			// Were it to serve, Serve would return only at the end of ctx,
			// without an error; the bound is for that failure only.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := s.Serve(ctx, l); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Serve: %v, want %q", err, tc.want)
			}
		})
	}
	// With a token, a wide listener serves.
	s, _ := newTestServer(t, func(o *Options) { o.APITokens = []string{"t1"}; o.Reporter = nopReporter{} })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := s.Serve(ctx, wideListener{ln}); done <- err }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve with a token: %v", err)
	}
}

// nopReporter is a control plane that takes everything.
type nopReporter struct{}

func (nopReporter) Start() int                                { return 0 }
func (nopReporter) Ready(int)                                 {}
func (nopReporter) Heartbeat(string) func()                   { return func() {} }
func (nopReporter) Result(string, any) error                  { return nil }
func (nopReporter) Flush(context.Context) error               { return nil }
func (nopReporter) Exited(context.Context, int, string) error { return nil }
func (nopReporter) Close() error                              { return nil }
