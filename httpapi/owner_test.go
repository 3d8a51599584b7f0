package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/mcpserver"
	"github.com/coderunner/coderunner/session"
)

// fileRunner runs "plant TEXT" (writes note.txt in the workspace) and
// "read" (prints note.txt, or "none"), as a program in a session would.
type fileRunner struct{}

func (fileRunner) Execute(_ context.Context, req execute.Request) (*execute.Result, error) {
	res := &execute.Result{Status: execute.StatusSuccess, Language: req.Language, Backend: "fake", SessionID: req.SessionID}
	note := filepath.Join(req.Workspace, "note.txt")
	switch {
	case req.Workspace == "":
		res.Stdout = "no workspace"
	case strings.HasPrefix(req.Code, "plant "):
		if err := os.WriteFile(note, []byte(strings.TrimPrefix(req.Code, "plant ")), 0o600); err != nil {
			return nil, err
		}
		res.Stdout = "planted"
	default:
		b, err := os.ReadFile(note)
		res.Stdout = string(b)
		if err != nil {
			res.Stdout = "none"
		}
	}
	return res, nil
}

// TestSessionsScopedToToken is the review's attack: a file planted in a
// session by one caller, read back by another caller naming the same
// session_id. Callers with different tokens must get different sessions,
// over /v1/run, DELETE /v1/sessions/{id} and /mcp (both the calls mcpserver
// answers itself and those the SDK answers).
func TestSessionsScopedToToken(t *testing.T) {
	store, err := session.Open(session.Options{Dir: t.TempDir(), NoTmpfs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	const alice, bob = "alice-token", "bob-token"
	s, ts := newMCPServer(t, func(o *Options) {
		o.APITokens = []string{alice, bob}
		o.Runner = store.Wrap(fileRunner{})
		o.Sessions = store
	})
	run := func(token, code string) string {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"language": "python", "code": code, "session_id": "shared"})
		rec := do(t, s, "POST", "/v1/run", string(body), map[string]string{"Authorization": "Bearer " + token})
		var res execute.Result
		if err := json.Unmarshal(rec.Body.Bytes(), &res); rec.Code != 200 || err != nil {
			t.Fatalf("/v1/run: %d %s", rec.Code, rec.Body)
		}
		return res.Stdout
	}
	if got := run(alice, "plant alice-secret"); got != "planted" {
		t.Fatalf("plant: %q", got)
	}
	if got := run(alice, "read"); got != "alice-secret" {
		t.Fatalf("alice reads %q from her own session", got)
	}
	if got := run(bob, "read"); got != "none" {
		t.Errorf("bob read %q from alice's session", got)
	}
	if rec := do(t, s, "DELETE", "/v1/sessions/shared", "", map[string]string{"Authorization": "Bearer " + bob}); rec.Code != 204 {
		t.Errorf("bob ends his session: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, s, "DELETE", "/v1/sessions/shared", "", map[string]string{"Authorization": "Bearer " + bob}); rec.Code != 404 {
		t.Errorf("bob ends alice's session: %d %s", rec.Code, rec.Body)
	}
	if got := run(alice, "read"); got != "alice-secret" {
		t.Errorf("bob's DELETE ended alice's session: she reads %q", got)
	}

	ctx := context.Background()
	connect := func(token string) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: token, Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	call := func(cs *mcp.ClientSession, code string, progress bool) string {
		t.Helper()
		p := &mcp.CallToolParams{Name: mcpserver.ToolExecuteCode,
			Arguments: map[string]any{"language": "python", "code": code, "session_id": "shared"}}
		if progress {
			// A progress token sends the call to the SDK rather than
			// to mcpserver's direct path.
			p.Meta = mcp.Meta{"progressToken": "p1"}
		}
		res, err := cs.CallTool(ctx, p)
		if err != nil || res.IsError {
			t.Fatalf("execute_code %q: %v %+v", code, err, res)
		}
		var out execute.Result
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out.Stdout
	}
	ma, mb := connect(alice), connect(bob)
	for _, progress := range []bool{false, true} {
		if got := call(ma, "read", progress); got != "alice-secret" {
			t.Errorf("alice over MCP (progress %v) reads %q from her /v1/run session", progress, got)
		}
		if got := call(mb, "read", progress); got != "none" {
			t.Errorf("bob over MCP (progress %v) read %q from alice's session", progress, got)
		}
	}
	// Bob cannot use alice's MCP session either, even knowing its id.
	req, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"read","session_id":"shared"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", ma.ID())
	req.Header.Set("Authorization", "Bearer "+bob)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || strings.Contains(string(b), "alice-secret") {
		t.Errorf("bob in alice's MCP session: %d %s", resp.StatusCode, b)
	}
}
