package interp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/interp"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
	_ "github.com/coderunner/coderunner/sandbox/bwrap"
	_ "github.com/coderunner/coderunner/sandbox/native"
	"github.com/coderunner/coderunner/session"
)

// env is a session store whose interpreter sessions run on the native
// backend.
type env struct {
	t     *testing.T
	store *session.Store
}

func newEnv(t *testing.T) *env { t.Helper(); return newEnvOn(t, "native") }

// newEnvOn is newEnv on the named backend.
func newEnvOn(t *testing.T, name string) *env {
	t.Helper()
	testutil.RequireRoot(t)
	b, err := backend.Open(context.Background(), name, backend.Options{})
	testutil.Require(t, err == nil, "the "+name+" backend does not work here")
	if c, ok := b.(io.Closer); ok {
		t.Cleanup(func() { _ = c.Close() })
	}
	l, _ := lang.Default().Lookup("python")
	tc := l.Discover(context.Background())
	testutil.Require(t, tc.Available, "python is not available: "+tc.Reason)
	// Directories the backend's own users reach (bwrap runs as another).
	store, err := session.Open(session.Options{Dir: testutil.ReachableDir(t, "interp-sessions-"), MaxBytes: 64 * sandbox.MiB})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	ex := execute.New(b, lang.Default(), execute.Options{TempDir: testutil.ReachableDir(t, "interp-runs-")})
	store.SetInterpreter(interp.New(ex, interp.Options{Backend: b.Name()}))
	return &env{t: t, store: store}
}

// cell runs code in session id's interpreter.
func (e *env) cell(id, code string, limits execute.ExecutionLimits) *execute.Result {
	e.t.Helper()
	res, err := e.store.Execute(context.Background(), nil, execute.Request{Language: "python", Code: code,
		SessionID: &id, Mode: execute.ModeInterpreter, Limits: limits})
	if err != nil {
		e.t.Fatalf("cell %q: %v", code, err)
	}
	if res.Status == execute.StatusSetupError {
		e.t.Fatalf("cell %q: %s", code, res.Message())
	}
	return res
}

func value(res *execute.Result) string {
	if res.Value == nil {
		return "<nil>"
	}
	return *res.Value
}

func TestNativeStateKept(t *testing.T) {
	e := newEnv(t)
	if res := e.cell("a", "x = 1", execute.ExecutionLimits{}); res.Status != execute.StatusSuccess || res.Value != nil {
		t.Fatalf("x = 1: %+v value %s", res, value(res))
	}
	e.cell("a", "x += 1", execute.ExecutionLimits{})
	if res := e.cell("a", "x", execute.ExecutionLimits{}); value(res) != "2" || res.Restarted {
		t.Fatalf("x: %+v value %s", res, value(res))
	}
	e.cell("a", "import math\ndef f(n):\n    return n * 3", execute.ExecutionLimits{})
	if res := e.cell("a", "f(math.floor(2.5))", execute.ExecutionLimits{}); value(res) != "6" {
		t.Fatalf("f: %+v value %s", res, value(res))
	}
	if res := e.cell("a", "'a' + 'b'", execute.ExecutionLimits{}); value(res) != "'ab'" {
		t.Fatalf("repr: value %s", value(res))
	}
	if res := e.cell("a", "None", execute.ExecutionLimits{}); res.Value != nil {
		t.Fatalf("None: value %s", value(res))
	}
	// A dict or list that JSON holds is also shown as JSON; one it does
	// not hold is not.
	res := e.cell("a", "{'a': [1, 2.5, None], 'b': 'x'}", execute.ExecutionLimits{})
	if len(res.Display) != 1 || res.Display[0].MIME != "application/json" || res.Display[0].Data != `{"a": [1, 2.5, null], "b": "x"}` {
		t.Fatalf("JSON: %+v", res.Display)
	}
	if res := e.cell("a", "[float('nan'), object()]", execute.ExecutionLimits{}); len(res.Display) != 0 || res.Value == nil {
		t.Fatalf("not JSON: %+v", res.Display)
	}
}

func TestNativeOutputPerCall(t *testing.T) {
	e := newEnv(t)
	res := e.cell("a", "import sys\nprint('one')\nprint('err', file=sys.stderr)\n7", execute.ExecutionLimits{})
	if res.Stdout != "one\n" || res.Stderr != "err\n" || value(res) != "7" {
		t.Fatalf("first: %q %q %s", res.Stdout, res.Stderr, value(res))
	}
	res = e.cell("a", "print('two', end='')", execute.ExecutionLimits{})
	if res.Stdout != "two" || res.Stderr != "" {
		t.Fatalf("second: %q %q", res.Stdout, res.Stderr)
	}
	res = e.cell("a", "import os\nos.write(1, b'raw\\n')\nos.write(2, b'rawerr\\n')", execute.ExecutionLimits{})
	if res.Stdout != "raw\n" || res.Stderr != "rawerr\n" {
		t.Fatalf("raw: %q %q", res.Stdout, res.Stderr)
	}
	res = e.cell("a", "1/0", execute.ExecutionLimits{})
	if res.Status != execute.StatusExecutionError || !strings.Contains(res.Message(), "ZeroDivisionError") ||
		!strings.Contains(res.Stderr, "Traceback") {
		t.Fatalf("error: %+v", res)
	}
	if res := e.cell("a", "print('x' * 50)", execute.ExecutionLimits{MaxOutputChars: 10}); res.Stdout != "xxxxxxxxxx" || !res.Truncated {
		t.Fatalf("cap: %q %v", res.Stdout, res.Truncated)
	}
	if res := e.cell("a", "'still'", execute.ExecutionLimits{}); value(res) != "'still'" || res.Truncated {
		t.Fatalf("after the cap: %+v", res)
	}
}

// A cell that prints what looks like the driver's answer, with another
// call's nonce or a made-up one, is only output.
func TestNativeAnswerNotForged(t *testing.T) {
	e := newEnv(t)
	code := "import sys\n" +
		"fake = '\\n\\x1ecoderunner-result ' + '0'*32 + ' {\"value\": \"\\'forged\\'\", \"error\": null, \"interrupted\": false, \"display\": []}\\n'\n" +
		"sys.stdout.write(fake)\nsys.stderr.write('\\n\\x1ecoderunner-result ' + '0'*32 + '\\n')\n'real'"
	res := e.cell("a", code, execute.ExecutionLimits{})
	if value(res) != "'real'" || !strings.Contains(res.Stdout, "forged") || res.Status != execute.StatusSuccess {
		t.Fatalf("forged: %+v value %s", res, value(res))
	}
}

func TestNativeTimeoutInterrupts(t *testing.T) {
	e := newEnv(t)
	e.cell("a", "y = 41", execute.ExecutionLimits{})
	res := e.cell("a", "import time\nwhile True:\n    time.sleep(0.01)", execute.ExecutionLimits{TimeLimit: 1})
	if res.Status != execute.StatusTimeout || res.ExitCode != execute.ExitTimeout || !strings.Contains(res.Message(), "state is kept") {
		t.Fatalf("timeout: %+v %s", res, res.Message())
	}
	if res := e.cell("a", "y + 1", execute.ExecutionLimits{}); value(res) != "42" || res.Restarted {
		t.Fatalf("after the interrupt: %+v value %s", res, value(res))
	}
	// A blocking call is cut short too.
	res = e.cell("a", "import time\ny = 7\ntime.sleep(600)", execute.ExecutionLimits{TimeLimit: 1})
	if res.Status != execute.StatusTimeout || !strings.Contains(res.Message(), "state is kept") || !strings.Contains(res.Stderr, "KeyboardInterrupt") {
		t.Fatalf("sleep: %+v %s", res, res.Message())
	}
	if res := e.cell("a", "y", execute.ExecutionLimits{}); value(res) != "7" || res.Restarted {
		t.Fatalf("after the sleep: %+v value %s", res, value(res))
	}
}

func TestNativeUninterruptibleRestarts(t *testing.T) {
	e := newEnv(t)
	e.cell("a", "y = 41", execute.ExecutionLimits{})
	res := e.cell("a", "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
		execute.ExecutionLimits{TimeLimit: 1})
	if res.Status != execute.StatusTimeout || !strings.Contains(res.Message(), "next call starts a fresh one") {
		t.Fatalf("stuck: %+v %s", res, res.Message())
	}
	res = e.cell("a", "'y' in dir()", execute.ExecutionLimits{})
	if !res.Restarted || value(res) != "False" || res.Status != execute.StatusSuccess {
		t.Fatalf("after the restart: %+v value %s", res, value(res))
	}
	if res := e.cell("a", "1", execute.ExecutionLimits{}); res.Restarted {
		t.Fatal("restarted twice")
	}
}

func TestNativeDisplayPNG(t *testing.T) {
	e := newEnv(t)
	png := "\x89PNG\r\n\x1a\n0000"
	res := e.cell("a", "open('plot.png', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n0000')\nopen('note.txt', 'w').write('x')",
		execute.ExecutionLimits{})
	if len(res.Display) != 1 || res.Display[0].MIME != "image/png" {
		t.Fatalf("display: %+v", res.Display)
	}
	if b, _ := base64.StdEncoding.DecodeString(res.Display[0].Data); string(b) != png {
		t.Fatalf("data: %q", b)
	}
	if res := e.cell("a", "1", execute.ExecutionLimits{}); len(res.Display) != 0 {
		t.Fatalf("an unchanged file shown again: %+v", res.Display)
	}
}

func TestNativeSessionsIsolated(t *testing.T) {
	e := newEnv(t)
	e.cell("a", "secret = 'a'", execute.ExecutionLimits{})
	if res := e.cell("b", "'secret' in dir()", execute.ExecutionLimits{}); value(res) != "False" {
		t.Fatalf("b sees a's variable: %s", value(res))
	}
	// b sees no process of a's.
	res := e.cell("b", "import os\nsorted(p for p in os.listdir('/proc') if p.isdigit())", execute.ExecutionLimits{})
	if value(res) != "['1', '2']" {
		t.Fatalf("b's processes: %s", value(res))
	}
}

func TestNativeMemoryKillsOnlyItsSession(t *testing.T) {
	e := newEnv(t)
	e.cell("a", "keep = 1", execute.ExecutionLimits{MemoryLimit: 64})
	e.cell("b", "keep = 2", execute.ExecutionLimits{MemoryLimit: 64})
	res := e.cell("a", "x = b'a' * (200 << 20)", execute.ExecutionLimits{MemoryLimit: 64})
	if res.Status != execute.StatusExecutionError || !res.MemoryExceeded || !strings.Contains(res.Message(), "memory limit") {
		t.Fatalf("200 MB in 64: %+v %s", res, res.Message())
	}
	if res := e.cell("a", "'keep' in dir()", execute.ExecutionLimits{MemoryLimit: 64}); value(res) != "False" || !res.Restarted {
		t.Fatalf("a after its kill: %+v value %s", res, value(res))
	}
	if res := e.cell("b", "keep", execute.ExecutionLimits{MemoryLimit: 128}); value(res) != "2" || res.Restarted ||
		res.LimitsApplied.MemoryLimitMB != 64 {
		t.Fatalf("b after a's kill: %+v value %s", res, value(res))
	}
}

func TestNativeRestartAndDelete(t *testing.T) {
	e := newEnv(t)
	e.cell("a", "z = 1\nopen('f.txt', 'w').write('kept')", execute.ExecutionLimits{})
	if err := e.store.Restart(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	res := e.cell("a", "('z' in dir(), open('f.txt').read())", execute.ExecutionLimits{})
	if value(res) != "(False, 'kept')" || res.Restarted {
		t.Fatalf("after restart: %+v value %s", res, value(res))
	}
	if err := e.store.Restart(context.Background(), "nosuch"); err == nil {
		t.Fatal("restart of no session")
	}
	if err := e.store.Delete("a"); err != nil {
		t.Fatal(err)
	}
	if res := e.cell("a", "'z' in dir()", execute.ExecutionLimits{}); value(res) != "False" {
		t.Fatalf("after delete: %s", value(res))
	}
}

// jsCell runs code in session id's JavaScript interpreter.
func (e *env) jsCell(id, code string, limits execute.ExecutionLimits) *execute.Result {
	e.t.Helper()
	res, err := e.store.Execute(context.Background(), nil, execute.Request{Language: "javascript", Code: code,
		SessionID: &id, Mode: execute.ModeInterpreter, Limits: limits})
	if err != nil {
		e.t.Fatalf("cell %q: %v", code, err)
	}
	if res.Status == execute.StatusSetupError {
		e.t.Fatalf("cell %q: %s", code, res.Message())
	}
	return res
}

func requireNode(t *testing.T) {
	t.Helper()
	l, _ := lang.Default().Lookup("javascript")
	tc := l.Discover(context.Background())
	testutil.Require(t, tc.Available, "node is not available: "+tc.Reason)
}

func TestNativeJavaScript(t *testing.T) {
	e := newEnv(t)
	requireNode(t)
	e.jsCell("a", "var x = 1; let y = 10", execute.ExecutionLimits{})
	e.jsCell("a", "x += 1", execute.ExecutionLimits{})
	if res := e.jsCell("a", "x + y", execute.ExecutionLimits{}); value(res) != "12" || res.Status != execute.StatusSuccess {
		t.Fatalf("x + y: %+v value %s", res, value(res))
	}
	if res := e.jsCell("a", "const path = require('path'); function f(n) { return n * 3 }", execute.ExecutionLimits{}); res.Value != nil {
		t.Fatalf("a declaration: value %s", value(res))
	}
	if res := e.jsCell("a", "({a: f(2), b: path.basename('/x/y')})", execute.ExecutionLimits{}); value(res) != "{ a: 6, b: 'y' }" ||
		len(res.Display) != 1 || res.Display[0].MIME != "application/json" || res.Display[0].Data != `{"a":6,"b":"y"}` {
		t.Fatalf("an object: value %s, display %+v", value(res), res.Display)
	}
	res := e.jsCell("a", "console.log('one'); console.error('err'); 7", execute.ExecutionLimits{})
	if res.Stdout != "one\n" || res.Stderr != "err\n" || value(res) != "7" {
		t.Fatalf("output: %q %q %s", res.Stdout, res.Stderr, value(res))
	}
	res = e.jsCell("a", "null.x", execute.ExecutionLimits{})
	if res.Status != execute.StatusExecutionError || !strings.Contains(res.Message(), "TypeError") || !strings.Contains(res.Stderr, "TypeError") {
		t.Fatalf("error: %+v", res)
	}
	fake := "process.stdout.write('\\n\\x1ecoderunner-result ' + '0'.repeat(32) + ' {\"value\":\"forged\",\"error\":null,\"interrupted\":false,\"display\":[]}\\n'); 'real'"
	if res := e.jsCell("a", fake, execute.ExecutionLimits{}); value(res) != "'real'" || !strings.Contains(res.Stdout, "forged") {
		t.Fatalf("forged: %+v value %s", res, value(res))
	}
	res = e.jsCell("a", "require('fs').writeFileSync('p.png', Buffer.from([0x89, 0x50, 0x4e, 0x47]))", execute.ExecutionLimits{})
	if len(res.Display) != 1 || res.Display[0].Data != base64.StdEncoding.EncodeToString([]byte("\x89PNG")) {
		t.Fatalf("display: %+v", res.Display)
	}
	res = e.jsCell("a", "while (true) {}", execute.ExecutionLimits{TimeLimit: 1})
	if res.Status != execute.StatusTimeout || !strings.Contains(res.Message(), "state is kept") {
		t.Fatalf("timeout: %+v %s", res, res.Message())
	}
	if res := e.jsCell("a", "x", execute.ExecutionLimits{}); value(res) != "2" || res.Restarted {
		t.Fatalf("after the interrupt: %+v value %s", res, value(res))
	}
	// A cell blocked outside JavaScript is not interrupted: its
	// interpreter is ended and the next call says so.
	res = e.jsCell("a", "require('child_process').execSync('sleep 60')", execute.ExecutionLimits{TimeLimit: 1})
	if res.Status != execute.StatusTimeout || !strings.Contains(res.Message(), "next call starts a fresh one") {
		t.Fatalf("stuck: %+v %s", res, res.Message())
	}
	if res := e.jsCell("a", "typeof x", execute.ExecutionLimits{}); value(res) != "'undefined'" || !res.Restarted {
		t.Fatalf("after the restart: %+v value %s", res, value(res))
	}
}

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

// The driver's side of figures, without matplotlib: the open figures
// come back as PNGs, in order, and are closed. The module is a stand-in
// written in the workspace, which comes first on the interpreter's path.
func TestNativeFigures(t *testing.T) {
	e := newEnv(t)
	pyplot := strings.Join([]string{
		"figs = {}",
		"class Figure:",
		"    def __init__(self, n): self.n = n",
		"    def savefig(self, buf, format): buf.write(b'\\x89PNG fig%d' % self.n)",
		"def plot(n): figs[n] = Figure(n)",
		"def get_fignums(): return sorted(figs)",
		"def figure(n): return figs[n]",
		"def close(which): figs.clear()",
	}, "\n")
	fake := "import os\nos.makedirs('matplotlib', exist_ok=True)\nopen('matplotlib/__init__.py', 'w').write('')\n" +
		"open('matplotlib/pyplot.py', 'w').write(" + strconvQuote(pyplot) + ")"
	if res := e.cell("a", fake, execute.ExecutionLimits{}); res.Status != execute.StatusSuccess {
		t.Fatalf("the stand-in: %+v", res)
	}
	res := e.cell("a", "import matplotlib.pyplot as plt\nplt.plot(1)\nplt.plot(2)", execute.ExecutionLimits{})
	if len(res.Display) != 2 {
		t.Fatalf("figures: %+v %s", res.Display, res.Stderr)
	}
	for i, d := range res.Display {
		if b, _ := base64.StdEncoding.DecodeString(d.Data); d.MIME != "image/png" || string(b) != fmt.Sprintf("\x89PNG fig%d", i+1) {
			t.Fatalf("figure %d: %s %q", i, d.MIME, b)
		}
	}
	if res := e.cell("a", "plt.get_fignums()", execute.ExecutionLimits{}); len(res.Display) != 1 || value(res) != "[]" {
		t.Fatalf("the figures not closed: %+v value %s", res.Display, value(res))
	}
}

// strconvQuote is s as a Python string literal (JSON's is one).
func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// A driver that no longer reads its input cannot hold a call past its
// time limit, even with a cell larger than a pipe holds.
func TestNativeDriverNotReading(t *testing.T) {
	e := newEnv(t)
	requireNode(t)
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

// signalWriter closes seen at its first write.
type signalWriter struct {
	seen chan struct{}
	once bool
}

func (w *signalWriter) Write(p []byte) (int, error) {
	if !w.once {
		w.once = true
		close(w.seen)
	}
	return len(p), nil
}

// A caller that leaves during a cell has the cell interrupted; the
// interpreter and its state stay.
func TestNativeCallerGone(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	w := &signalWriter{seen: make(chan struct{})}
	go func() { <-w.seen; cancel() }()
	id := "a"
	_, err := e.store.Execute(ctx, nil, execute.Request{Language: "python", SessionID: &id, Mode: execute.ModeInterpreter,
		Code: "import time\nkept = 3\nprint('started', flush=True)\ntime.sleep(600)", Stdout: w})
	if err == nil || ctx.Err() == nil {
		t.Fatalf("a cell whose caller left: %v", err)
	}
	if res := e.cell("a", "kept", execute.ExecutionLimits{}); value(res) != "3" || res.Restarted {
		t.Fatalf("after: %+v value %s", res, value(res))
	}
}

// The interpreter mode on the bwrap backend: state kept, an interrupt
// that keeps it, and a second language.
func TestBwrapInterpreter(t *testing.T) {
	e := newEnvOn(t, "bwrap")
	requireNode(t)
	e.cell("a", "x = 1", execute.ExecutionLimits{})
	if res := e.cell("a", "x + 1", execute.ExecutionLimits{}); value(res) != "2" {
		t.Fatalf("x + 1: %+v value %s", res, value(res))
	}
	res := e.cell("a", "import time\nwhile True:\n    time.sleep(0.01)", execute.ExecutionLimits{TimeLimit: 1})
	if res.Status != execute.StatusTimeout || !strings.Contains(res.Message(), "state is kept") {
		t.Fatalf("timeout: %+v %s", res, res.Message())
	}
	if res := e.cell("a", "x", execute.ExecutionLimits{}); value(res) != "1" || res.Restarted {
		t.Fatalf("after: %+v value %s", res, value(res))
	}
	if res := e.jsCell("b", "[1, 2].length", execute.ExecutionLimits{}); value(res) != "2" {
		t.Fatalf("javascript: %+v value %s", res, value(res))
	}
}
