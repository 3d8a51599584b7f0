package interp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/interp"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/session"
)

// target is a backend the interpreter suite runs on.
type target struct {
	name string
	// open opens the backend, or skips the test (fails it under CI=true)
	// when it cannot work here.
	open func(t *testing.T) sandbox.Backend
	// hostToolchains: the interpreters run from the host's toolchains
	// (native, bwrap), which the test then needs; docker's are in its
	// images, which open requires.
	hostToolchains bool
	// left reports what the backend's ended runs left besides processes
	// of this test (a container); nil when there is nothing else to look
	// at.
	left func(b sandbox.Backend) error
	// ownLauncher: the interpreter runs as the same user as what started
	// it in its sandbox (docker's warm containers' launcher), so that a
	// cell that kills every process it may kill can end its own
	// interpreter (the next cell says restarted), never another
	// session's.
	ownLauncher bool
}

// env is a session store whose interpreter sessions run on one backend.
type env struct {
	t     *testing.T
	tg    target
	b     sandbox.Backend
	store *session.Store
}

// patient is the grace of the tests of a cell that must stop when
// interrupted: only a driver that does not could take that long.
const patient = time.Minute

// leftWait bounds the wait for what an ended session's run removes in the
// background (a container): only a broken backend takes that long.
const leftWait = time.Minute

// newEnvOn is a session store on tg's backend. When the test ends the
// store is closed and nothing of its interpreters may be left: no process
// of this test, no run cgroup, nothing tg.left finds.
//
// grace is the Manager's grace after an interrupt (0: the default).
// The tests of a cell that must stop when interrupted give it patient:
// on a loaded machine a sandbox held to half a core may take longer than
// the default to answer, and the default is the product's, tested by the
// tests of a cell that does not stop.
func newEnvOn(t *testing.T, tg target, opts session.Options, grace time.Duration) *env {
	t.Helper()
	testutil.RequireRoot(t)
	b := tg.open(t)
	if tg.hostToolchains {
		requireToolchain(t, "python")
	}
	// Directories the backend's own users reach (bwrap runs as another).
	opts.Dir = testutil.ReachableDir(t, "interp-sessions-")
	if opts.MaxBytes == 0 {
		opts.MaxBytes = 64 * sandbox.MiB
	}
	store, err := session.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	ex := execute.New(b, lang.Default(), execute.Options{TempDir: testutil.ReachableDir(t, "interp-runs-")})
	store.SetInterpreter(interp.New(ex, interp.Options{Backend: b.Name(), Grace: grace}))
	e := &env{t: t, tg: tg, b: b, store: store}
	// The store goes first, then what it left is looked for, then the
	// backend goes (t.Cleanup runs the last registered first).
	t.Cleanup(func() {
		if err := e.waitClean(); err != nil {
			t.Errorf("left behind once the sessions ended: %v", err)
		}
	})
	t.Cleanup(func() { _ = store.Close() })
	return e
}

func requireToolchain(t *testing.T, language string) {
	t.Helper()
	l, _ := lang.Default().Lookup(language)
	tc := l.Discover(context.Background())
	testutil.Require(t, tc.Available, language+" is not available: "+tc.Reason)
}

// requireNode needs node where the interpreters run from the host's
// toolchains.
func (e *env) requireNode() {
	e.t.Helper()
	if e.tg.hostToolchains {
		requireToolchain(e.t, "javascript")
	}
}

// waitClean waits, up to leftWait, until nothing of an ended session is
// left: every session ended has its process killed before Delete, the
// reaper or Close returns, and its run's cgroup removed; a container may
// take a moment more to go.
func (e *env) waitClean() error {
	deadline := time.Now().Add(leftWait)
	for {
		err := e.leftovers()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// leftovers is what this test's sandboxes left: processes this process
// started (directly or not) that still run, the run cgroups of native
// (run-PID-) and bwrap (bwrap-PID-) that hold any of them or none, and
// what the target finds. A native sandbox kept idle for a later run (an
// init with no child: it runs nothing, and its next run is made anew) is
// the backend's, not a session's.
func (e *env) leftovers() error {
	var found []string
	procs := descendants()
	var left []int
	for pid, children := range procs {
		if !idleInit(pid, children) {
			left = append(left, pid)
		}
	}
	if len(left) > 0 {
		slices.Sort(left)
		found = append(found, fmt.Sprintf("processes %v", left))
	}
	prefixes := []string{fmt.Sprintf("run-%d-", os.Getpid()), fmt.Sprintf("bwrap-%d-", os.Getpid())}
	_ = filepath.WalkDir("/sys/fs/cgroup", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		for _, p := range prefixes {
			if strings.HasPrefix(d.Name(), p) {
				if !idleGroup(path, procs) {
					found = append(found, "cgroup "+path)
				}
				return filepath.SkipDir
			}
		}
		if strings.Count(path, "/") > 8 {
			return filepath.SkipDir
		}
		return nil
	})
	if e.tg.left != nil {
		if err := e.tg.left(e.b); err != nil {
			found = append(found, err.Error())
		}
	}
	if len(found) > 0 {
		return errors.New(strings.Join(found, "; "))
	}
	return nil
}

// idleInit reports whether pid is a native sandbox's init that runs
// nothing.
func idleInit(pid, children int) bool {
	cmd, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return children == 0 && strings.HasPrefix(string(cmd), "coderunner-nsinit\x00")
}

// idleGroup reports whether the cgroup at path holds an idle sandbox's
// init and nothing else.
func idleGroup(path string, procs map[int]int) bool {
	b, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
	if err != nil {
		return false
	}
	pids := strings.Fields(string(b))
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		if n, ok := procs[pid]; !ok || !idleInit(pid, n) {
			return false
		}
	}
	return len(pids) > 0
}

// descendants are the processes this process started, directly or not,
// that still run, each with its number of children.
func descendants() map[int]int {
	procs := testutil.Descendants()
	found := map[int]int{}
	for _, p := range procs {
		found[p.PID] += 0
	}
	for _, p := range procs {
		if _, ok := found[p.PPID]; ok {
			found[p.PPID]++
		}
	}
	return found
}

// run runs code in session id's interpreter of language.
func (e *env) run(language, id, code string, limits execute.ExecutionLimits) *execute.Result {
	e.t.Helper()
	res, err := e.store.Execute(context.Background(), nil, execute.Request{Language: language, Code: code,
		SessionID: &id, Mode: execute.ModeInterpreter, Limits: limits})
	if err != nil {
		e.t.Fatalf("cell %q: %v", code, err)
	}
	if res.Status == execute.StatusSetupError {
		e.t.Fatalf("cell %q: %s", code, res.Message())
	}
	return res
}

// cell runs code in session id's Python interpreter.
func (e *env) cell(id, code string, limits execute.ExecutionLimits) *execute.Result {
	e.t.Helper()
	return e.run("python", id, code, limits)
}

// jsCell runs code in session id's JavaScript interpreter.
func (e *env) jsCell(id, code string, limits execute.ExecutionLimits) *execute.Result {
	e.t.Helper()
	return e.run("javascript", id, code, limits)
}

func value(res *execute.Result) string {
	if res.Value == nil {
		return "<nil>"
	}
	return *res.Value
}

// runSuite runs the interpreter tests every backend passes, each on a
// store of its own.
func runSuite(t *testing.T, tg target) {
	for _, tc := range []struct {
		name  string
		f     func(*testing.T, *env)
		opts  session.Options
		grace time.Duration
	}{
		{"StateKept", testStateKept, session.Options{}, 0},
		{"OutputPerCall", testOutputPerCall, session.Options{}, 0},
		{"AnswerNotForged", testAnswerNotForged, session.Options{}, 0},
		{"CallerGone", testCallerGone, session.Options{}, patient},
		{"TimeoutInterrupts", testTimeoutInterrupts, session.Options{}, patient},
		{"UninterruptibleRestarts", testUninterruptibleRestarts, session.Options{}, 0},
		{"SessionsIsolated", testSessionsIsolated, session.Options{}, 0},
		{"MemoryKillsOnlyItsSession", testMemoryKillsOnlyItsSession, session.Options{}, 0},
		{"Files", testFiles, session.Options{}, 0},
		{"DisplayPNG", testDisplayPNG, session.Options{}, 0},
		{"Figures", testFigures, session.Options{}, 0},
		{"RestartAndDelete", testRestartAndDelete, session.Options{}, 0},
		{"DeleteEndsEverything", testDeleteEndsEverything, session.Options{}, 0},
		{"IdleExpiry", testIdleExpiry, session.Options{IdleTimeout: time.Second}, 0},
		{"JavaScript", testJavaScript, session.Options{}, patient},
		{"JavaScriptStuck", testJavaScriptStuck, session.Options{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, newEnvOn(t, tg, tc.opts, tc.grace)) })
	}
}

func testStateKept(t *testing.T, e *env) {
	if res := e.cell("a", "x = 1", execute.ExecutionLimits{}); res.Status != execute.StatusSuccess || res.Value != nil || res.Restarted {
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
	if res.Backend != e.tg.name || !res.Interpreter || res.SessionID == nil || *res.SessionID != "a" {
		t.Fatalf("the result's backend, mode and session: %q %v %v", res.Backend, res.Interpreter, res.SessionID)
	}
}

func testOutputPerCall(t *testing.T, e *env) {
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
	if res := e.cell("a", "'still'", execute.ExecutionLimits{}); value(res) != "'still'" || res.Truncated || res.Restarted {
		t.Fatalf("after the cap: %+v", res)
	}
}

func testTimeoutInterrupts(t *testing.T, e *env) {
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

// reachLimit is the limits of a cell that must reach a point (SIGINT
// ignored, a blocking call) before its time limit passes, or the test
// means nothing: a second, times testutil.TimeScale where the toolchains
// run slowly (under emulation node may take longer than that to get
// there, and V8's own timeout then interrupts the cell first).
func reachLimit(t *testing.T) execute.ExecutionLimits {
	t.Helper()
	return execute.ExecutionLimits{TimeLimit: testutil.TimeScale(t)}
}

func testUninterruptibleRestarts(t *testing.T, e *env) {
	e.cell("a", "y = 41\nopen('kept.txt', 'w').write('files stay')", execute.ExecutionLimits{})
	res := e.cell("a", "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass", reachLimit(t))
	if res.Status != execute.StatusTimeout || !strings.Contains(res.Message(), "next call starts a fresh one") {
		t.Fatalf("stuck: %+v %s", res, res.Message())
	}
	// The killed interpreter is gone: nothing of it runs on.
	if err := e.waitClean(); err != nil {
		t.Fatalf("after the kill: %v", err)
	}
	res = e.cell("a", "('y' in dir(), open('kept.txt').read())", execute.ExecutionLimits{})
	if !res.Restarted || value(res) != "(False, 'files stay')" || res.Status != execute.StatusSuccess {
		t.Fatalf("after the restart: %+v value %s", res, value(res))
	}
	if res := e.cell("a", "1", execute.ExecutionLimits{}); res.Restarted {
		t.Fatal("restarted twice")
	}
}

// procMarker is a cell that starts a child process whose command line
// holds marker and answers its pid.
func procMarker(marker string) string {
	return "import subprocess\nchild = subprocess.Popen(['sleep', '" + marker + "'])\nchild.pid"
}

// seesMarker is a cell whose value is whether a process with marker in its
// command line is visible.
func seesMarker(marker string) string {
	return "import os\n" +
		"def _cmd(p):\n" +
		"    try:\n" +
		"        return open('/proc/%s/cmdline' % p, 'rb').read()\n" +
		"    except OSError:\n" +
		"        return b''\n" +
		"any(b'" + marker + "' in _cmd(p) for p in os.listdir('/proc') if p.isdigit())"
}

func testSessionsIsolated(t *testing.T, e *env) {
	e.cell("a", "secret = 'a'\nopen('mine.txt', 'w').write('a')", execute.ExecutionLimits{})
	if res := e.cell("a", procMarker("987.25"), execute.ExecutionLimits{}); res.Status != execute.StatusSuccess {
		t.Fatalf("a's child: %+v %s", res, res.Stderr)
	}
	// The probe sees a process where there is one.
	if res := e.cell("a", seesMarker("987.25"), execute.ExecutionLimits{}); value(res) != "True" {
		t.Fatalf("a does not see its own child: %+v value %s", res, value(res))
	}
	if res := e.cell("b", "'secret' in dir()", execute.ExecutionLimits{}); value(res) != "False" {
		t.Fatalf("b sees a's variable: %s", value(res))
	}
	if res := e.cell("b", "import os\nos.path.exists('mine.txt')", execute.ExecutionLimits{}); value(res) != "False" {
		t.Fatalf("b sees a's file: %s", value(res))
	}
	if res := e.cell("b", seesMarker("987.25"), execute.ExecutionLimits{}); value(res) != "False" {
		t.Fatalf("b sees a's process: %+v value %s", res, value(res))
	}
	// Nor can b signal a's interpreter: a's state is still there.
	// (Not its own threads: a thread's id names its whole process.)
	e.cell("b", "import os, signal\nown = {int(t) for t in os.listdir('/proc/self/task')}\nfor p in range(1, 4096):\n"+
		"    try:\n        os.kill(p, signal.SIGKILL) if p not in own else None\n    except OSError:\n        pass", execute.ExecutionLimits{})
	res := e.cell("b", "'still'", execute.ExecutionLimits{})
	if e.tg.ownLauncher && value(res) != "'still'" {
		// The interpreter b ended may still have taken this call, which
		// then says it ended; the next call starts a fresh one.
		res = e.cell("b", "'still'", execute.ExecutionLimits{})
	}
	if value(res) != "'still'" || (res.Restarted && !e.tg.ownLauncher) {
		t.Fatalf("b after its kills: %+v value %s", res, value(res))
	}
	if res := e.cell("a", "secret", execute.ExecutionLimits{}); value(res) != "'a'" || res.Restarted {
		t.Fatalf("a after b's kills: %+v value %s", res, value(res))
	}
}

func testMemoryKillsOnlyItsSession(t *testing.T, e *env) {
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

// The files a cell writes are the session's files, and the session's
// files are the cell's, while its interpreter runs.
func testFiles(t *testing.T, e *env) {
	ctx := context.Background()
	e.cell("a", "x = 1\nopen('out.txt', 'w').write('from the cell')\nimport os\nos.makedirs('d', exist_ok=True)\n"+
		"open('d/deep.txt', 'w').write('deep')", execute.ExecutionLimits{})
	for path, want := range map[string]string{"out.txt": "from the cell", "d/deep.txt": "deep"} {
		f, err := e.store.OpenFile(ctx, "a", path)
		if err != nil {
			t.Fatalf("open %s: %v", path, err)
		}
		b, err := io.ReadAll(f)
		_ = f.Close()
		if err != nil || string(b) != want {
			t.Fatalf("%s: %q %v", path, b, err)
		}
	}
	if _, err := e.store.WriteFile(ctx, "a", "in.txt", strings.NewReader("from the API")); err != nil {
		t.Fatal(err)
	}
	res := e.cell("a", "(x, open('in.txt').read())", execute.ExecutionLimits{})
	if value(res) != "(1, 'from the API')" || res.Restarted {
		t.Fatalf("the uploaded file: %+v value %s", res, value(res))
	}
	// The cell may change what the API wrote, and the API what the cell
	// wrote.
	e.cell("a", "open('in.txt', 'a').write(', changed')", execute.ExecutionLimits{})
	if _, err := e.store.WriteFile(ctx, "a", "out.txt", strings.NewReader("replaced")); err != nil {
		t.Fatal(err)
	}
	if err := e.store.DeleteFile(ctx, "a", "d/deep.txt"); err != nil {
		t.Fatal(err)
	}
	res = e.cell("a", "import os\n(open('in.txt').read(), open('out.txt').read(), os.path.exists('d/deep.txt'))", execute.ExecutionLimits{})
	if value(res) != "('from the API, changed', 'replaced', False)" {
		t.Fatalf("both ways: %+v value %s", res, value(res))
	}
	files, err := e.store.ListFiles(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Path)
	}
	for _, want := range []string{"in.txt", "out.txt"} {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+want+" ") {
			t.Fatalf("listing %v lacks %s", names, want)
		}
	}
}

func testDisplayPNG(t *testing.T, e *env) {
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

// The driver's side of figures on every backend, without matplotlib
// (the docker backend's images have none; TestNativeMatplotlib runs the
// real one): the open figures come back as PNGs, in order, and are
// closed. The module is a stand-in written in the workspace, which comes
// first on the interpreter's path.
func testFigures(t *testing.T, e *env) {
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

func testRestartAndDelete(t *testing.T, e *env) {
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
	if res := e.cell("a", "import os\n('z' in dir(), os.path.exists('f.txt'))", execute.ExecutionLimits{}); value(res) != "(False, False)" {
		t.Fatalf("after delete: %s", value(res))
	}
}

// Deleting a session ends its interpreter and everything the cells
// started, before Delete returns; another session runs on.
func testDeleteEndsEverything(t *testing.T, e *env) {
	e.cell("b", "other = 1", execute.ExecutionLimits{})
	if res := e.cell("a", procMarker("876.5"), execute.ExecutionLimits{}); res.Status != execute.StatusSuccess {
		t.Fatalf("a's child: %+v %s", res, res.Stderr)
	}
	// A child that left the interpreter's process group and ignores
	// SIGTERM and SIGHUP.
	e.cell("a", "import subprocess\nsubprocess.Popen(['sh', '-c', \"trap '' TERM HUP INT; exec sleep 765.5\"], start_new_session=True)",
		execute.ExecutionLimits{})
	// The look for leftovers finds the live interpreters.
	if err := e.leftovers(); err == nil {
		t.Fatal("two live interpreters, and nothing found running")
	}
	if err := e.store.Delete("a"); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Delete("b"); err != nil {
		t.Fatal(err)
	}
	if err := e.waitClean(); err != nil {
		t.Fatalf("after delete: %v", err)
	}
}

// A session idle for its idle timeout ends with its interpreter.
func testIdleExpiry(t *testing.T, e *env) {
	e.cell("a", "x = 1", execute.ExecutionLimits{})
	if e.store.Len() != 1 {
		t.Fatalf("sessions: %d", e.store.Len())
	}
	// The reaper, or Sweep, ends it once it has been idle for a second.
	deadline := time.Now().Add(leftWait)
	for e.store.Len() > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		e.store.Sweep()
	}
	if e.store.Len() != 0 {
		t.Fatal("the idle session did not end")
	}
	if err := e.waitClean(); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	// Its first call after is told, once, that it expired; the next
	// starts afresh.
	id := "a"
	if _, err := e.store.Execute(context.Background(), nil, execute.Request{Language: "python", Code: "x",
		SessionID: &id, Mode: execute.ModeInterpreter}); !errors.Is(err, session.ErrExpired) {
		t.Fatalf("a call after expiry: %v", err)
	}
	if res := e.cell("a", "'x' in dir()", execute.ExecutionLimits{}); value(res) != "False" {
		t.Fatalf("after expiry: %+v value %s", res, value(res))
	}
}

func testJavaScript(t *testing.T, e *env) {
	e.requireNode()
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
	// A Python cell in the same session starts its own interpreter.
	if res := e.cell("a", "1 + 1", execute.ExecutionLimits{}); value(res) != "2" || !res.Restarted {
		t.Fatalf("python after javascript: %+v value %s", res, value(res))
	}
}

// A JavaScript cell blocked outside JavaScript is not interrupted: its
// interpreter is ended and the next call says so.
func testJavaScriptStuck(t *testing.T, e *env) {
	e.requireNode()
	// The module is loaded ahead: the cell has only to reach the call.
	e.jsCell("a", "var x = 1; var cp = require('child_process')", execute.ExecutionLimits{})
	res := e.jsCell("a", "cp.execSync('sleep 60')", reachLimit(t))
	if res.Status != execute.StatusTimeout || !strings.Contains(res.Message(), "next call starts a fresh one") {
		t.Fatalf("stuck: %+v %s", res, res.Message())
	}
	if res := e.jsCell("a", "typeof x", execute.ExecutionLimits{}); value(res) != "'undefined'" || !res.Restarted {
		t.Fatalf("after the restart: %+v value %s", res, value(res))
	}
}

// A cell that prints what looks like the driver's answer, with another
// call's nonce or a made-up one, is only output.
func testAnswerNotForged(t *testing.T, e *env) {
	code := "import sys\n" +
		"fake = '\\n\\x1ecoderunner-result ' + '0'*32 + ' {\"value\": \"\\'forged\\'\", \"error\": null, \"interrupted\": false, \"display\": []}\\n'\n" +
		"sys.stdout.write(fake)\nsys.stderr.write('\\n\\x1ecoderunner-result ' + '0'*32 + '\\n')\n'real'"
	res := e.cell("a", code, execute.ExecutionLimits{})
	if value(res) != "'real'" || !strings.Contains(res.Stdout, "forged") || res.Status != execute.StatusSuccess {
		t.Fatalf("forged: %+v value %s", res, value(res))
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
func testCallerGone(t *testing.T, e *env) {
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
