package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/invoke"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
	_ "github.com/coderunner/coderunner/sandbox/native"
	"github.com/coderunner/coderunner/session"
)

// TestNativeEndToEnd is the /execute flow on the real sandbox: request →
// isolation → result capture → control plane callback.
func TestNativeEndToEnd(t *testing.T) {
	testutil.RequireRoot(t)
	b, err := backend.Open(context.Background(), "native", backend.Options{})
	testutil.Require(t, err == nil, "the native backend does not work here")
	if c, ok := b.(io.Closer); ok {
		defer c.Close()
	}
	l, _ := lang.Default().Lookup("python")
	tc := l.Discover(context.Background())
	testutil.Require(t, tc.Available, "python is not available: "+tc.Reason)

	cp := newFakeCP(t, false)
	exec := invoke.New(b, lang.Default(), invoke.Options{WorkDir: t.TempDir()})
	sv := serve(t, cp, func(o *Options) { o.Executor = exec })
	resp, err := sv.post(`{"execution_id":"native-1","language":"python","timeout":20,
		"code":"import os\ndef handler(event):\n    os.makedirs('out', exist_ok=True)\n    open('out/r.csv','w').write('a,b\\n')\n    print('working')\n    return {'double': event['n'] * 2}\n",
		"event":{"n":21}}`)
	if err != nil {
		t.Fatal(err)
	}
	var res invoke.Result
	err = json.NewDecoder(resp.Body).Decode(&res)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != invoke.StatusSuccess || string(res.ReturnValue) != `{"double":42}` || res.Stdout != "working\n" ||
		len(res.Artifacts) != 1 || res.Artifacts[0].Path != "out/r.csv" || res.Artifacts[0].MimeType != "text/csv" {
		t.Fatalf("result %+v (%s)", res, res.Message())
	}
	c := cp.wait(t, "/internal/executions/native-1/result")
	if c.body["status"] != "success" || c.auth != "Bearer internal-token" {
		t.Errorf("callback %+v", c)
	}
}

// TestNativeSessions is /v1/run's session_id on the real sandbox, with
// warm sandboxes and tmpfs workspaces as serve runs them: a file written
// by one /v1/run call is read by the next, and DELETE /v1/sessions/{id}
// removes it.
func TestNativeSessions(t *testing.T) {
	testutil.RequireRoot(t)
	b, err := backend.Open(context.Background(), "native", backend.Options{Warm: 2})
	testutil.Require(t, err == nil, "the native backend does not work here")
	if c, ok := b.(io.Closer); ok {
		defer c.Close()
	}
	l, _ := lang.Default().Lookup("python")
	tc := l.Discover(context.Background())
	testutil.Require(t, tc.Available, "python is not available: "+tc.Reason)
	store, err := session.Open(session.Options{Dir: t.TempDir(), MaxBytes: 16 * sandbox.MiB})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ex := execute.New(b, lang.Default(), execute.Options{TempDir: t.TempDir()})
	s, _ := newTestServer(t, func(o *Options) { o.Runner = store.Wrap(ex); o.Sessions = store })

	run := func(sessionID, code string) execute.Result {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"language": "python", "code": code, "session_id": sessionID, "timeout": 20})
		rec := do(t, s, "POST", "/v1/run", string(body), nil)
		var res execute.Result
		if err := json.Unmarshal(rec.Body.Bytes(), &res); rec.Code != 200 || err != nil {
			t.Fatalf("/v1/run: %d %s", rec.Code, rec.Body)
		}
		return res
	}
	const read = "import os\nprint(open('note.txt').read() if os.path.exists('note.txt') else 'none')"
	if res := run("s-1", "open('note.txt','w').write('kept')\nprint('wrote')"); res.Stdout != "wrote\n" {
		t.Fatalf("write: %+v", res)
	}
	if res := run("s-1", read); res.Stdout != "kept\n" {
		t.Errorf("the next call of the session read %q, want kept; %+v", res.Stdout, res)
	}
	if res := run("s-2", read); res.Stdout != "none\n" {
		t.Errorf("another session read %q, want none", res.Stdout)
	}
	if rec := do(t, s, "DELETE", "/v1/sessions/s-1", "", nil); rec.Code != 204 {
		t.Fatalf("DELETE: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, s, "DELETE", "/v1/sessions/s-1", "", nil); rec.Code != 404 {
		t.Errorf("DELETE again: %d %s", rec.Code, rec.Body)
	}
	if res := run("s-1", read); res.Stdout != "none\n" {
		t.Errorf("after DELETE the session read %q, want none", res.Stdout)
	}
}
