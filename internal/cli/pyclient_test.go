package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/httpapi"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/lang"
	_ "github.com/coderunner/coderunner/sandbox/native"
)

// TestPythonClient runs the Python client's tests (clients/python/tests)
// against serve on the native backend: hello world, a timeout, a bad field,
// session files, streaming, judging, a batch and a wrong token, each
// through the client as a user would call it. Every test must run: a
// skipped one (the server's URL not reaching it) fails this test.
func TestPythonClient(t *testing.T) {
	testutil.RequireRoot(t)
	const python = "/usr/bin/python3"
	_, err := os.Stat(python)
	testutil.Require(t, err == nil, "no "+python)
	l, _ := lang.Default().Lookup("python")
	tc := l.Discover(context.Background())
	testutil.Require(t, tc.Available, "python is not available: "+tc.Reason)

	const token = "pyclient-token"
	cs := newCallbackServer(t)
	env := map[string]string{
		"CONTROL_PLANE_URL":    cs.URL,
		"INTERNAL_API_TOKEN":   "cp-token",
		"CONTAINER_ID":         "py-ctr",
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
	ready := cs.wait(t, "/internal/containers/py-ctr/ready")
	base := fmt.Sprintf("http://127.0.0.1:%d", int(ready["executor_port"].(float64)))

	dir, err := filepath.Abs(filepath.Join("..", "..", "clients", "python"))
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer pcancel()
	cmd := exec.CommandContext(pctx, python, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"CODERUNNER_TEST_URL="+base,
		"CODERUNNER_TEST_TOKEN="+token,
		"PYTHONDONTWRITEBYTECODE=1",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python -m unittest: %v\n%s", err, out)
	}
	ran := regexp.MustCompile(`(?m)^Ran (\d+) tests?`).FindSubmatch(out)
	if ran == nil || string(ran[1]) == "0" || strings.Contains(string(out), "skipped") {
		t.Fatalf("the Python tests did not all run:\n%s", out)
	}
	t.Logf("%s", ran[0])

	cancel(httpapi.ExitSIGTERM)
	if code := <-done; code != 143 {
		t.Errorf("serve exited %d, want 143; stderr %s", code, ta.stderr)
	}
}
