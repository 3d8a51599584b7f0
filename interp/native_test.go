package interp_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
	_ "github.com/coderunner/coderunner/sandbox/native"
	"github.com/coderunner/coderunner/session"
)

// nativeTarget is the native backend for the interpreter suite.
var nativeTarget = target{name: "native", open: openRegistered("native"), hostToolchains: true}

// openRegistered opens the backend of that name from the registry, closed
// when the test ends.
func openRegistered(name string) func(t *testing.T) sandbox.Backend {
	return func(t *testing.T) sandbox.Backend {
		t.Helper()
		b, err := backend.Open(context.Background(), name, backend.Options{})
		testutil.Require(t, err == nil, fmt.Sprintf("the %s backend does not work here: %v", name, err))
		if c, ok := b.(io.Closer); ok {
			t.Cleanup(func() { _ = c.Close() })
		}
		return b
	}
}

// newEnv is a session store on the native backend.
func newEnv(t *testing.T) *env { t.Helper(); return newEnvOn(t, nativeTarget, session.Options{}, 0) }

// TestNative runs the interpreter suite on the native backend.
func TestNative(t *testing.T) { runSuite(t, nativeTarget) }

// A cell that rewrites the driver changes nothing: the running driver has
// read it, and a restart writes it again.
func TestNativeDriverRewritten(t *testing.T) {
	e := newEnv(t)
	e.cell("a", "open('.coderunner/interp.py', 'w').write('print(\"evil\")')\nz = 5", execute.ExecutionLimits{})
	if res := e.cell("a", "z", execute.ExecutionLimits{}); value(res) != "5" {
		t.Fatalf("after the rewrite: %+v", res)
	}
	if err := e.store.Restart(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if res := e.cell("a", "open('.coderunner/interp.py').read().startswith('#')", execute.ExecutionLimits{}); value(res) != "True" {
		t.Fatalf("after the restart: %+v value %s", res, value(res))
	}
}

// A figure of the real matplotlib comes back as one PNG, with nothing on
// stderr (no warning of a font cache, a missing configuration or a
// display), and is closed: the next cell shows none.
func TestNativeMatplotlib(t *testing.T) {
	testutil.RequirePythonModule(t, "matplotlib")
	e := newEnv(t)
	// Importing matplotlib takes a second or more of CPU the first time
	// (its font cache): time to spare at half a core on a busy machine.
	limits := execute.ExecutionLimits{TimeLimit: 120}
	res := e.cell("a", "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])", limits)
	if res.Status != execute.StatusSuccess || res.Stderr != "" {
		t.Fatalf("the plot: %s: %s", res.Status, res.Stderr)
	}
	if len(res.Display) != 1 || res.Display[0].MIME != "image/png" {
		t.Fatalf("display: %d items %+v", len(res.Display), res.Display)
	}
	png, err := base64.StdEncoding.DecodeString(res.Display[0].Data)
	if err != nil || !strings.HasPrefix(string(png), "\x89PNG\r\n\x1a\n") || len(png) < 1000 {
		t.Fatalf("not a PNG (%v): %q", err, png[:min(len(png), 16)])
	}
	if res := e.cell("a", "y = 2", limits); len(res.Display) != 0 || res.Status != execute.StatusSuccess {
		t.Fatalf("a cell without a plot: %s %+v %s", res.Status, res.Display, res.Stderr)
	}
}

// A session's interpreter sees no process but its sandbox's own.
func TestNativeOwnProcesses(t *testing.T) {
	e := newEnv(t)
	e.cell("a", "secret = 'a'", execute.ExecutionLimits{})
	res := e.cell("b", "import os\nsorted(p for p in os.listdir('/proc') if p.isdigit())", execute.ExecutionLimits{})
	if value(res) != "['1', '2']" {
		t.Fatalf("b's processes: %s", value(res))
	}
}

// A driver that no longer reads its input cannot hold a call past its
// time limit, even with a cell larger than a pipe holds.
func TestNativeDriverNotReading(t *testing.T) {
	e := newEnv(t)
	requireToolchain(t, "javascript")
	e.jsCell("a", "fs = require('fs'); fs.readSync = () => { for (;;) {} }", execute.ExecutionLimits{})
	big := "// " + strings.Repeat("x", 1<<20) + "\n1"
	res := e.jsCell("a", big, execute.ExecutionLimits{TimeLimit: 1})
	if res.Status != execute.StatusTimeout || !strings.Contains(res.Message(), "next call starts a fresh one") {
		t.Fatalf("a driver not reading: %+v %s", res, res.Message())
	}
	if res := e.jsCell("a", "1 + 1", execute.ExecutionLimits{}); value(res) != "2" || !res.Restarted {
		t.Fatalf("after: %+v value %s", res, value(res))
	}
}
