package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/mcpserver"
	"github.com/coderunner/coderunner/session"
)

// sessionRunner refuses a request as a session.Store would, by its
// session id; other requests go to fakeRunner.
type sessionRunner struct{}

func (sessionRunner) Execute(ctx context.Context, req execute.Request) (*execute.Result, error) {
	if req.SessionID == nil {
		return fakeRunner{}.Execute(ctx, req)
	}
	errs := map[string]error{
		"many":   session.ErrTooManySessions,
		"full":   session.ErrSessionFull,
		"disk":   session.ErrDiskFull,
		"gone":   session.ErrNotFound,
		"closed": session.ErrClosed,
		"broken": errors.New("unable to mount the workspace"),
	}
	if err, ok := errs[*req.SessionID]; ok {
		return nil, fmt.Errorf("session %q: %w", *req.SessionID, err)
	}
	return fakeRunner{}.Execute(ctx, req)
}

func TestRunSessionErrors(t *testing.T) {
	s, _ := newTestServer(t, func(o *Options) { o.Runner = sessionRunner{} })
	// A nil Store is what serve runs with when sessions are turned off.
	off, _ := newTestServer(t, func(o *Options) { o.Runner = (*session.Store)(nil).Wrap(fakeRunner{}) })
	for _, tc := range []struct {
		srv     *Server
		session string
		status  int
		code    string
	}{
		{s, "ok", 200, ""},
		{s, "many", 429, CodeTooManySessions},
		{s, "full", 507, CodeStorageFull},
		{s, "disk", 507, CodeStorageFull},
		{s, "gone", 404, CodeNotFound},
		{s, "closed", 503, CodeShuttingDown},
		{s, "broken", 500, CodeInternal},
		{s, "a/b", 400, CodeBadRequest},
		{off, "any", 400, CodeBadRequest},
		{off, "a/b", 400, CodeBadRequest},
	} {
		t.Run(tc.session, func(t *testing.T) {
			rec := do(t, tc.srv, "POST", "/v1/run", fmt.Sprintf(`{"language":"python","code":"x","session_id":%q}`, tc.session), nil)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if tc.code == "" {
				return
			}
			e := errOf(t, rec)
			field := "session_id: "
			if tc.status == 500 {
				field = "internal error"
			}
			if e.Code != tc.code || !strings.HasPrefix(e.Message, field) {
				t.Errorf("error %+v, want code %s, message starting %q", e, tc.code, field)
			}
		})
	}
	if rec := do(t, off, "POST", "/v1/run", `{"language":"python","code":"x"}`, nil); rec.Code != 200 {
		t.Errorf("a run without a session with sessions off: %d %s", rec.Code, rec.Body)
	}
}

// fakeSessions knows the sessions in live.
type fakeSessions struct{ live map[string]bool }

func (f *fakeSessions) DeleteContext(_ context.Context, id string) error {
	if err := execute.ValidateSessionID(id); err != nil {
		return err
	}
	switch {
	case id == "broken":
		return errors.New("unable to unmount")
	case !f.live[id]:
		return fmt.Errorf("%w: %q", session.ErrNotFound, id)
	}
	delete(f.live, id)
	return nil
}

func (f *fakeSessions) Info(_ context.Context, id string) (session.Info, error) {
	if !f.live[id] {
		return session.Info{}, fmt.Errorf("%w: %q", session.ErrNotFound, id)
	}
	return session.Info{ID: id}, nil
}

func (f *fakeSessions) List(context.Context) []session.Info { return nil }

func (f *fakeSessions) MaxIdleTimeout() time.Duration { return time.Hour }

func TestDeleteSession(t *testing.T) {
	const token = "tok"
	fs := &fakeSessions{live: map[string]bool{"s1": true, "s2": true}}
	s, _ := newTestServer(t, func(o *Options) { o.Sessions = fs; o.APIToken = token })
	off, _ := newTestServer(t, nil)
	auth := map[string]string{"Authorization": "Bearer " + token}
	for _, tc := range []struct {
		name, method, path string
		srv                *Server
		header             map[string]string
		status             int
		code, field        string
	}{
		{"delete", "DELETE", "/v1/sessions/s1", s, auth, 204, "", ""},
		{"again", "DELETE", "/v1/sessions/s1", s, auth, 404, CodeNotFound, "id"},
		{"unknown", "DELETE", "/v1/sessions/nope", s, auth, 404, CodeNotFound, "id"},
		{"invalid", "DELETE", "/v1/sessions/" + strings.Repeat("x", 65), s, auth, 400, CodeBadRequest, "id"},
		{"invalid char", "DELETE", "/v1/sessions/a.b", s, auth, 400, CodeBadRequest, "id"},
		{"broken", "DELETE", "/v1/sessions/broken", s, auth, 500, CodeInternal, "internal error"},
		{"no token", "DELETE", "/v1/sessions/s2", s, nil, 401, CodeUnauthorized, ""},
		{"wrong token", "DELETE", "/v1/sessions/s2", s, map[string]string{"Authorization": "Bearer x"}, 401, CodeUnauthorized, ""},
		{"PUT", "PUT", "/v1/sessions/s2", s, auth, 405, CodeMethodNotAllowed, ""},
		{"no id", "DELETE", "/v1/sessions/", s, auth, 404, CodeNotFound, ""},
		{"sessions off", "DELETE", "/v1/sessions/s2", off, nil, 404, CodeNotFound, "id"},
		{"sessions off invalid", "DELETE", "/v1/sessions/a.b", off, nil, 400, CodeBadRequest, "id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(t, tc.srv, tc.method, tc.path, "", tc.header)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if tc.code == "" {
				return
			}
			e := errOf(t, rec)
			if e.Code != tc.code || !strings.HasPrefix(e.Message, tc.field) {
				t.Errorf("error %+v, want code %s naming %q", e, tc.code, tc.field)
			}
			if tc.status == 405 && rec.Header().Get("Allow") != "GET, HEAD, DELETE" {
				t.Errorf("Allow %q", rec.Header().Get("Allow"))
			}
		})
	}
	if !fs.live["s2"] || fs.live["s1"] {
		t.Errorf("sessions left %v, want only s2", fs.live)
	}
}

// newMCPServer is a Server with /mcp built on mcpserver, serving on a
// local listener.
func newMCPServer(t *testing.T, edit func(*Options)) (*Server, *httptest.Server) {
	t.Helper()
	s, _ := newTestServer(t, func(o *Options) {
		o.MCP = func(run Runner) (http.Handler, error) {
			ms, err := mcpserver.New(mcpserver.Options{Runner: run, Languages: lang.Default(), Version: "test"})
			if err != nil {
				return nil, err
			}
			return ms.Handler(), nil
		}
		if edit != nil {
			edit(o)
		}
	})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func TestMCPOverHTTP(t *testing.T) {
	const token = "mcp-token"
	s, ts := newMCPServer(t, func(o *Options) { o.APIToken = token })
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "httpapi-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "execute_code") {
		t.Errorf("tools %v lack execute_code", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code",
		Arguments: map[string]any{"language": "python", "code": "print('out')"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "out") {
		t.Errorf("execute_code: %+v", res)
	}
	// The call went through the running slots, and is counted as such.
	rec := do(t, s, "GET", "/metrics", "", nil)
	if !strings.Contains(rec.Body.String(), `coderunner_executions_total{endpoint="mcp",status="success"} 1`) {
		t.Errorf("the MCP execution is not in the metrics:\n%s", rec.Body)
	}

	// Without the token, /mcp is refused like every execution endpoint.
	_, err = mcp.NewClient(&mcp.Implementation{Name: "anon", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp"}, nil)
	if err == nil {
		t.Error("an MCP client without the token connected")
	}
	rec = do(t, s, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil)
	if rec.Code != 401 || errOf(t, rec).Code != CodeUnauthorized {
		t.Errorf("/mcp without a token: %d %s", rec.Code, rec.Body)
	}
}

// TestMCPRunnerSharesSlots checks the runner /mcp is built with: it waits
// for a slot like /v1/run, and is refused while the server is not ready.
func TestMCPRunnerSharesSlots(t *testing.T) {
	var run Runner
	s, _ := newTestServer(t, func(o *Options) {
		o.MaxConcurrent = 1
		o.QueueSize = 1
		o.MCP = func(r Runner) (http.Handler, error) {
			run = r
			return http.NotFoundHandler(), nil
		}
	})
	req := execute.Request{Language: "python", Code: "x"}
	if _, err := run.Execute(context.Background(), req); err != nil {
		t.Fatalf("with a free slot: %v", err)
	}
	// Hold the slot and fill the queue.
	release, err := s.gate.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	go func() {
		_, err := run.Execute(context.Background(), req)
		waiting <- err
	}()
	for {
		if _, w := s.gate.counts(); w == 1 {
			break
		}
		runtimeGosched()
	}
	if _, err := run.Execute(context.Background(), req); !errors.Is(err, errQueueFull) {
		t.Errorf("with the queue full: %v, want errQueueFull", err)
	}
	release()
	if err := <-waiting; err != nil {
		t.Errorf("the queued call: %v", err)
	}
	s.mu.Lock()
	s.state = stateDraining
	s.mu.Unlock()
	if _, err := run.Execute(context.Background(), req); !errors.Is(err, errShuttingDown) {
		t.Errorf("while draining: %v, want errShuttingDown", err)
	}

	if _, err := New(Options{Executor: newFakeExecutor(), MCP: func(Runner) (http.Handler, error) { return nil, nil }}); err == nil {
		t.Error("New built /mcp without a Runner")
	}
	if _, err := New(Options{Executor: newFakeExecutor(), Runner: fakeRunner{},
		MCP: func(Runner) (http.Handler, error) { return nil, errors.New("boom") }}); err == nil {
		t.Error("New ignored the MCP builder's error")
	}
}
