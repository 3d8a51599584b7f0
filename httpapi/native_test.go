package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/coderunner/coderunner/executor"
	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/lang"
	_ "github.com/coderunner/coderunner/sandbox/native"
)

// TestNativeEndToEnd is spec 002's flow on the real sandbox: request →
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
	exec := executor.New(b, lang.Default(), executor.Options{WorkDir: t.TempDir()})
	sv := serve(t, cp, func(o *Options) { o.Executor = exec })
	resp, err := sv.post(`{"execution_id":"native-1","language":"python","timeout":20,
		"code":"import os\ndef handler(event):\n    os.makedirs('out', exist_ok=True)\n    open('out/r.csv','w').write('a,b\\n')\n    print('working')\n    return {'double': event['n'] * 2}\n",
		"event":{"n":21}}`)
	if err != nil {
		t.Fatal(err)
	}
	var res executor.Result
	err = json.NewDecoder(resp.Body).Decode(&res)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != executor.StatusSuccess || string(res.ReturnValue) != `{"double":42}` || res.Stdout != "working\n" ||
		len(res.Artifacts) != 1 || res.Artifacts[0].Path != "out/r.csv" || res.Artifacts[0].MimeType != "text/csv" {
		t.Fatalf("result %+v (%s)", res, res.Message())
	}
	c := cp.wait(t, "/internal/executions/native-1/result")
	if c.body["status"] != "success" || c.auth != "Bearer internal-token" {
		t.Errorf("callback %+v", c)
	}
}
