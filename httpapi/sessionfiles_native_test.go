package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/session"
)

// TestNativeSessionFiles is the files endpoints with real runs of a
// session on the native backend: a file uploaded before the first run is
// the program's to append to, what the program writes comes back, the
// listing has the checksums of both, and DELETE removes one.
func TestNativeSessionFiles(t *testing.T) {
	testutil.RequireRoot(t)
	b, err := backend.Open(context.Background(), "native", backend.Options{Warm: 1})
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

	run := func(code string) execute.Result {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"language": "python", "code": code, "session_id": "work", "timeout": 20})
		rec := do(t, s, "POST", "/v1/run", string(body), nil)
		var res execute.Result
		if err := json.Unmarshal(rec.Body.Bytes(), &res); rec.Code != 200 || err != nil {
			t.Fatalf("/v1/run: %d %s", rec.Code, rec.Body)
		}
		return res
	}
	if rec := do(t, s, "PUT", "/v1/sessions/work/files/data/in.txt", "3\n4\n", nil); rec.Code != 200 {
		t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
	}
	res := run("nums = [int(x) for x in open('data/in.txt')]\n" +
		"open('data/in.txt', 'a').write('5\\n')\n" +
		"open('out.txt', 'w').write(str(sum(nums)) + '\\n')\nprint('ok')")
	if res.Stdout != "ok\n" || res.Status != execute.StatusSuccess {
		t.Fatalf("the run: %+v", res)
	}
	if rec := do(t, s, "GET", "/v1/sessions/work/files/out.txt", "", nil); rec.Code != 200 || rec.Body.String() != "7\n" {
		t.Fatalf("GET out.txt: %d %q", rec.Code, rec.Body)
	}
	if rec := do(t, s, "GET", "/v1/sessions/work/files/data/in.txt", "", nil); rec.Body.String() != "3\n4\n5\n" {
		t.Fatalf("the run did not append to the uploaded file: %q", rec.Body)
	}
	rec := do(t, s, "GET", "/v1/sessions/work/files", "", nil)
	var list []session.File
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || len(list) < 2 {
		t.Fatalf("list: %d %s", rec.Code, rec.Body)
	}
	want := map[string]session.File{
		"data/in.txt": {Path: "data/in.txt", Size: 6, SHA256: digest("3\n4\n5\n")},
		"out.txt":     {Path: "out.txt", Size: 2, SHA256: digest("7\n")},
	}
	for _, f := range list {
		if w, ok := want[f.Path]; ok && f != w {
			t.Errorf("listed %+v, want %+v", f, w)
		}
		delete(want, f.Path)
	}
	if len(want) != 0 {
		t.Errorf("not listed: %v (listing %+v)", want, list)
	}
	// An upload into a workspace the runs already own is theirs as well.
	if rec := do(t, s, "PUT", "/v1/sessions/work/files/data/in.txt", "10\n", nil); rec.Code != 200 {
		t.Fatalf("PUT again: %d %s", rec.Code, rec.Body)
	}
	if res := run("open('data/in.txt', 'a').write('20\\n')\nprint(open('data/in.txt').read().split())"); res.Stdout != "['10', '20']\n" {
		t.Fatalf("the second run: %+v", res)
	}
	if rec := do(t, s, "DELETE", "/v1/sessions/work/files/out.txt", "", nil); rec.Code != 204 {
		t.Fatalf("DELETE: %d %s", rec.Code, rec.Body)
	}
	if res := run("import os\nprint(os.path.exists('out.txt'))"); res.Stdout != "False\n" {
		t.Fatalf("after DELETE: %+v", res)
	}
}
