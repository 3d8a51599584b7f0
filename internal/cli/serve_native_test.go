package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/httpapi"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/lang"
	_ "github.com/coderunner/coderunner/sandbox/native"
)

// bearerTransport adds the API token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeNativeSessionsAndMCP runs serve on the native backend, with its
// warm sandboxes and tmpfs session workspaces: a file written by one
// /v1/run call of a session is read by the next, DELETE
// /v1/sessions/{id} removes it, and /mcp answers an MCP client.
func TestServeNativeSessionsAndMCP(t *testing.T) {
	testutil.RequireRoot(t)
	l, _ := lang.Default().Lookup("python")
	tc := l.Discover(context.Background())
	testutil.Require(t, tc.Available, "python is not available: "+tc.Reason)

	const token = "serve-token"
	cs := newCallbackServer(t)
	env := map[string]string{
		"CONTROL_PLANE_URL":    cs.URL,
		"INTERNAL_API_TOKEN":   "cp-token",
		"CONTAINER_ID":         "native-ctr",
		"RESULTS_DIR":          t.TempDir(),
		"CODERUNNER_API_TOKEN": token,
	}
	ta := newApp(t, "")
	ta.Registry = nil // the real backends
	ta.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan int, 1)
	go func() { done <- ta.Run(ctx, []string{"serve", "--backend", "native", "--addr", "127.0.0.1:0"}) }()
	ready := cs.wait(t, "/internal/containers/native-ctr/ready")
	base := fmt.Sprintf("http://127.0.0.1:%d", int(ready["executor_port"].(float64)))
	client := &http.Client{Transport: bearerTransport{token}}

	call := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, out
	}
	run := func(sessionID, code string) string {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"language": "python", "code": code, "session_id": sessionID, "timeout": 20})
		status, out := call("POST", "/v1/run", string(body))
		var res execute.Result
		if err := json.Unmarshal(out, &res); status != 200 || err != nil {
			t.Fatalf("/v1/run: %d %s", status, out)
		}
		return res.Stdout
	}
	const read = "import os\nprint(open('note.txt').read() if os.path.exists('note.txt') else 'none')"
	if out := run("web-1", "open('note.txt','w').write('kept')\nprint('wrote')"); out != "wrote\n" {
		t.Fatalf("write: %q", out)
	}
	if out := run("web-1", read); out != "kept\n" {
		t.Errorf("the session's next call read %q, want kept", out)
	}
	if status, out := call("DELETE", "/v1/sessions/web-1", ""); status != 204 {
		t.Errorf("DELETE: %d %s", status, out)
	}
	if out := run("web-1", read); out != "none\n" {
		t.Errorf("after DELETE the session read %q, want none", out)
	}

	mc := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "1"}, nil)
	sess, err := mc.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: client}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := sess.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list: %v %+v", err, tools)
	}
	res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code",
		Arguments: map[string]any{"language": "python", "code": "print(6*7)", "session_id": "mcp-1"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "42") {
		t.Errorf("execute_code: %v %+v", err, res)
	}
	_ = sess.Close()

	cancel(httpapi.ExitSIGTERM)
	if code := <-done; code != 143 {
		t.Errorf("serve exited %d, want 143; stderr %s", code, ta.stderr)
	}
}
