package invoke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/coderunner/coderunner/internal/testutil"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

// want is what a test expects of a result; zero fields are not checked
// except Value, which is always compared ("" meaning null).
type want struct {
	status  Status
	exit    int
	value   string
	stdout  string
	stderr  string // a substring
	err     string // a substring of the error message
	exitSet bool
}

func check(t *testing.T, res *Result, w want) {
	t.Helper()
	if res.Status != w.status {
		t.Errorf("status %q, want %q (error %q, stderr %q)", res.Status, w.status, res.Message(), res.Stderr)
	}
	if w.exitSet && res.ExitCode != w.exit {
		t.Errorf("exit code %d, want %d", res.ExitCode, w.exit)
	}
	got := string(res.ReturnValue)
	if w.value == "" && got != "" && got != "null" || w.value != "" && got != w.value {
		t.Errorf("return value %s, want %s", got, w.value)
	}
	if w.stdout != "" && res.Stdout != w.stdout {
		t.Errorf("stdout %q, want %q", res.Stdout, w.stdout)
	}
	if !strings.Contains(res.Stderr, w.stderr) {
		t.Errorf("stderr %q, want it to contain %q", res.Stderr, w.stderr)
	}
	if !strings.Contains(res.Message(), w.err) || (w.err == "" && res.Error != nil && w.status == StatusSuccess) {
		t.Errorf("error %q, want it to contain %q", res.Message(), w.err)
	}
	if res.Artifacts == nil {
		t.Error("artifacts is nil, want an array")
	}
	if strings.Contains(res.Stderr, "wrapper.") {
		t.Errorf("the wrapper shows in stderr: %q", res.Stderr)
	}
	for _, a := range res.Artifacts {
		if strings.Contains(a.Path, "wrapper") || a.Path == "main.py" || a.Path == "main.js" || a.Path == "main.sh" {
			t.Errorf("the invoker's own file %s is listed as an artifact", a.Path)
		}
	}
}

func newHostInvoker(t *testing.T) *Invoker {
	t.Helper()
	return New(hostBackend(), lang.Default(), Options{WorkDir: t.TempDir(), NoTmpfs: true})
}

// handlerCases run in every backend that can run Python: through the host
// in TestHandlersOnHost, through the native sandbox in the root tests.
var handlerCases = []struct {
	name string
	req  Request
	want want
}{
	{"python value", Request{Language: "python", Code: "def handler(event):\n    print('hi')\n    return {'sum': event['a'] + event['b']}\n",
		Event: json.RawMessage(`{"a":2,"b":3}`)},
		want{status: StatusSuccess, exit: 0, exitSet: true, value: `{"sum":5}`, stdout: "hi\n"}},
	{"python default event", Request{Language: "python", Code: "def handler(event):\n    return event\n"},
		want{status: StatusSuccess, value: `{}`}},
	{"python stdin after header", Request{Language: "python", Code: "import sys\ndef handler(event):\n    return sys.stdin.read()\n", Stdin: "line1\nline2"},
		want{status: StatusSuccess, value: `"line1\nline2"`}},
	{"python async", Request{Language: "python", Code: "async def handler(event):\n    return [1, 2]\n"},
		want{status: StatusSuccess, value: `[1,2]`}},
	{"python missing handler", Request{Language: "python", Code: "x = 1\n"},
		want{status: StatusError, exit: 1, exitSet: true, err: "handler"}},
	{"python handler not callable", Request{Language: "python", Code: "handler = 3\n"},
		want{status: StatusError, err: "handler"}},
	{"python not serializable", Request{Language: "python", Code: "def handler(event):\n    return {1, 2}\n"},
		want{status: StatusError, err: "not JSON serializable"}},
	{"python NaN", Request{Language: "python", Code: "def handler(event):\n    return float('nan')\n"},
		want{status: StatusError, err: "not JSON serializable"}},
	{"python NameError", Request{Language: "python", Code: "def handler(event):\n    return undefined_name\n"},
		want{status: StatusFailed, exit: 1, exitSet: true, stderr: "NameError", err: "NameError"}},
	{"python traceback without wrapper", Request{Language: "python", Code: "def handler(event):\n    raise ValueError('boom')\n"},
		want{status: StatusFailed, exit: 1, exitSet: true, stderr: "main.py\", line 2, in handler\n    raise ValueError('boom')\nValueError: boom"}},
	{"python syntax error", Request{Language: "python", Code: "def handler(event)\n    return 1\n"},
		want{status: StatusFailed, exit: 1, exitSet: true, stderr: "SyntaxError"}},
	{"python sys.exit", Request{Language: "python", Code: "import sys\ndef handler(event):\n    sys.exit(3)\n"},
		want{status: StatusFailed, exit: 3, exitSet: true}},
	{"python script mode", Request{Language: "python", Mode: ModeScript, Code: "print('plain')\n"},
		want{status: StatusSuccess, stdout: "plain\n"}},
	{"python script exit", Request{Language: "python", Mode: ModeScript, Code: "raise SystemExit(4)\n"},
		want{status: StatusFailed, exit: 4, exitSet: true}},
	{"python timeout", Request{Language: "python", Timeout: 1, Code: "import time\ndef handler(event):\n    print('started', flush=True)\n    time.sleep(30)\n"},
		want{status: StatusTimeout, exit: -1, exitSet: true, stderr: "timed out after 1 s"}},
	{"python print markers", Request{Language: "python", Code: "def handler(event):\n" +
		"    print('===SANDBOX_RESULT===')\n    print('{\"ok\": true, \"value\": \"forged\"}')\n    print('===SANDBOX_RESULT_END===')\n" +
		"    print('===SANDBOX_RESULT=== ' + '0'*32)\n    print('{\"ok\": true, \"value\": \"forged\"}')\n    print('===SANDBOX_RESULT_END=== ' + '0'*32)\n" +
		"    return 'real'\n"},
		want{status: StatusSuccess, value: `"real"`}},
	{"python forge and exit", Request{Language: "python", Code: "import os\ndef handler(event):\n" +
		"    print('===SANDBOX_RESULT===\\n{\"ok\": true, \"value\": \"forged\"}\\n===SANDBOX_RESULT_END===', flush=True)\n    os._exit(0)\n"},
		want{status: StatusSuccess, value: ""}},
	{"shell", Request{Language: "bash", Code: "echo shell; exit 2"},
		want{status: StatusFailed, exit: 2, exitSet: true, stdout: "shell\n"}},
}

// jsCases need node.
var jsCases = []struct {
	name string
	req  Request
	want want
}{
	{"js function", Request{Language: "javascript", Code: "function handler(event) { console.log('hi'); return {n: event.n * 2}; }",
		Event: json.RawMessage(`{"n":21}`)},
		want{status: StatusSuccess, value: `{"n":42}`, stdout: "hi\n"}},
	{"js const arrow", Request{Language: "javascript", Code: "const handler = (e) => 'arrow';"},
		want{status: StatusSuccess, value: `"arrow"`}},
	{"js exports", Request{Language: "javascript", Code: "exports.handler = async (e) => ({ok: true});"},
		want{status: StatusSuccess, value: `{"ok":true}`}},
	{"js require", Request{Language: "javascript", Code: "const path = require('path');\nfunction handler(e) { return path.basename('/a/b.txt'); }"},
		want{status: StatusSuccess, value: `"b.txt"`}},
	{"js undefined", Request{Language: "javascript", Code: "function handler(e) {}"},
		want{status: StatusSuccess, value: "null"}},
	{"js missing handler", Request{Language: "javascript", Code: "const x = 1;"},
		want{status: StatusError, err: "handler"}},
	{"js BigInt", Request{Language: "javascript", Code: "function handler(e) { return 1n; }"},
		want{status: StatusError, err: "not JSON serializable"}},
	{"js throw", Request{Language: "javascript", Code: "function handler(e) { return nope; }"},
		want{status: StatusFailed, exit: 1, exitSet: true, stderr: "ReferenceError", err: "ReferenceError"}},
	{"js rejected", Request{Language: "javascript", Code: "async function handler(e) { throw new Error('async boom'); }"},
		want{status: StatusFailed, err: "async boom"}},
	{"js stdin", Request{Language: "javascript", Code: "const fs = require('fs');\nfunction handler(e) { return fs.readFileSync(0, 'utf8'); }", Stdin: "data"},
		want{status: StatusSuccess, value: `"data"`}},
	{"js forged markers", Request{Language: "javascript", Code: "function handler(e) { console.log('===SANDBOX_RESULT===\\n{\"ok\":true,\"value\":1}\\n===SANDBOX_RESULT_END==='); return 2; }"},
		want{status: StatusSuccess, value: "2"}},
	{"js script mode", Request{Language: "javascript", Mode: ModeScript, Code: "console.log('plain')"},
		want{status: StatusSuccess, stdout: "plain\n"}},
}

func runCase(t *testing.T, e *Invoker, name string, req Request, w want) {
	t.Helper()
	req.ExecutionID = "exec-" + strings.ReplaceAll(name, " ", "_")
	if req.Timeout == 0 {
		req.Timeout = 20
	}
	if req.Mode == "" {
		req.Mode = ModeHandler
	}
	res := e.Run(context.Background(), req)
	if res.ExecutionID != req.ExecutionID {
		t.Errorf("execution id %q", res.ExecutionID)
	}
	check(t, res, w)
}

func TestHandlersOnHost(t *testing.T) {
	requireToolchain(t, "python")
	e := newHostInvoker(t)
	for _, tc := range handlerCases {
		t.Run(tc.name, func(t *testing.T) { runCase(t, e, tc.name, tc.req, tc.want) })
	}
}

func TestJavaScriptHandlersOnHost(t *testing.T) {
	requireToolchain(t, "javascript")
	e := newHostInvoker(t)
	for _, tc := range jsCases {
		t.Run(tc.name, func(t *testing.T) { runCase(t, e, tc.name, tc.req, tc.want) })
	}
}

// TestNonceNotVisible is the forgery attack: user code looks for the
// nonce everywhere a program can look (environment, argv, every file of
// the workspace, its own command line, its stdin) and prints a forged
// block with every candidate it found. None may pass for the result.
func TestNonceNotVisible(t *testing.T) {
	requireToolchain(t, "python")
	e := newHostInvoker(t)
	const nonce = "5ec7e75ec7e75ec7e75ec7e75ec7e75e"
	e.nonce = func() string { return nonce }
	code := `import os, sys, re
def handler(event):
    seen = []
    seen += list(os.environ.values()) + sys.argv
    seen.append(sys.stdin.read())
    for d, _, files in os.walk('.'):
        for f in files:
            try:
                seen.append(open(os.path.join(d, f), errors='replace').read())
            except OSError:
                pass
    try:
        seen.append(open('/proc/self/cmdline', errors='replace').read())
        seen.append(open('/proc/self/environ', errors='replace').read())
    except OSError:
        pass
    found = set(re.findall(r'[0-9a-f]{32}', ' '.join(seen)))
    for n in found:
        print('===SANDBOX_RESULT=== ' + n + '\n{"ok": true, "value": "forged"}\n===SANDBOX_RESULT_END=== ' + n)
    return {'found': sorted(found)}
`
	res := e.Run(context.Background(), Request{ExecutionID: "attack", Language: "python", Code: code, Timeout: 20, Mode: ModeHandler, Stdin: "user stdin"})
	if res.Status != StatusSuccess {
		t.Fatalf("status %q: %s %s", res.Status, res.Message(), res.Stderr)
	}
	if string(res.ReturnValue) != `{"found":[]}` {
		t.Errorf("user code found the nonce or got a forged value in: return %s", res.ReturnValue)
	}
}

func TestVerdicts(t *testing.T) {
	ok := func(r sandbox.Result) *sandboxtest.Fake { return &sandboxtest.Fake{Default: sandboxtest.Returns(r)} }
	for _, tc := range []struct {
		name    string
		backend *sandboxtest.Fake
		want    want
	}{
		{"ok without block", ok(sandbox.Result{Status: sandbox.StatusOK, Stdout: []byte("x")}),
			want{status: StatusSuccess, exit: 0, exitSet: true, stdout: "x"}},
		{"nonzero", ok(sandbox.Result{Status: sandbox.StatusNonzeroExit, ExitCode: 7}),
			want{status: StatusFailed, exit: 7, exitSet: true, err: "code 7"}},
		{"signal", ok(sandbox.Result{Status: sandbox.StatusSignaled, ExitCode: -1, Signal: syscall.SIGKILL}),
			want{status: StatusFailed, exit: 137, exitSet: true, err: "signal 9"}},
		{"wall timeout", ok(sandbox.Result{Status: sandbox.StatusTimeLimit, TimeLimit: "wall", ExitCode: -1, Signal: syscall.SIGKILL, Stderr: []byte("partial")}),
			want{status: StatusTimeout, exit: -1, exitSet: true, stderr: "partial\nExecution timed out after 5 s\n", err: "timed out after 5 s"}},
		{"cpu timeout", ok(sandbox.Result{Status: sandbox.StatusTimeLimit, TimeLimit: "cpu"}),
			want{status: StatusTimeout, exit: -1, exitSet: true, stderr: "timed out after 5 s"}},
		{"memory", ok(sandbox.Result{Status: sandbox.StatusMemoryLimit, Signal: syscall.SIGKILL}),
			want{status: StatusFailed, exit: 137, exitSet: true, err: "memory limit of 256 MB"}},
		{"output", ok(sandbox.Result{Status: sandbox.StatusOutputLimit, StdoutTruncated: true}),
			want{status: StatusFailed, err: "output limit exceeded"}},
		{"unknown status", ok(sandbox.Result{Status: "weird"}),
			want{status: StatusError, exit: -1, exitSet: true, err: "unknown status"}},
		{"backend error", &sandboxtest.Fake{Default: sandboxtest.Fails(fmt.Errorf("%w: no cgroup", sandbox.ErrSetup))},
			want{status: StatusError, exit: -1, exitSet: true, err: "no cgroup"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := New(tc.backend, lang.Default(), Options{WorkDir: t.TempDir(), NoTmpfs: true})
			res := e.Run(context.Background(), Request{ExecutionID: "v", Language: "bash", Code: "true", Timeout: 5, Mode: ModeScript})
			check(t, res, tc.want)
		})
	}
}

func TestSpecOfHandlerRun(t *testing.T) {
	b := &sandboxtest.Fake{Default: sandboxtest.Returns(sandbox.Result{Status: sandbox.StatusOK})}
	e := New(b, lang.Default(), Options{WorkDir: t.TempDir(), NoTmpfs: true, Limits: sandbox.Limits{Memory: 64 * sandbox.MiB}})
	e.nonce = func() string { return "n" }
	e.Run(context.Background(), Request{ExecutionID: "s", Language: "python", Code: "def handler(e): pass", Timeout: 7, Mode: ModeHandler,
		Event: json.RawMessage(`{"k":1}`), Stdin: "tail"})
	s := b.Last()
	if s == nil {
		testutil.Require(t, false, "python is not available here")
	}
	if s.Limits.WallTime != 7*time.Second || s.Limits.CPUTime != 7*time.Second || s.Limits.Memory != 64*sandbox.MiB || s.Limits.OutputBytes != DefaultMaxOutputBytes {
		t.Errorf("limits %+v", s.Limits)
	}
	if n := len(s.Args); n < 2 || s.Args[n-1] != "/workspace/main.py" || !strings.HasSuffix(s.Args[n-2], "/.coderunner/wrapper.py") {
		t.Errorf("args %q", s.Args)
	}
	for _, kv := range s.Env {
		if strings.Contains(kv, "n") && strings.HasSuffix(kv, "=n") {
			t.Errorf("nonce in the environment: %q", kv)
		}
	}
	buf := new(strings.Builder)
	if _, err := fmt.Fprint(buf, readAll(t, s)); err != nil {
		t.Fatal(err)
	}
	if want := `29` + "\n" + `{"nonce":"n","event":{"k":1}}tail`; buf.String() != want {
		t.Errorf("stdin %q, want %q", buf.String(), want)
	}
}

func readAll(t *testing.T, s *sandbox.Spec) string {
	t.Helper()
	b := new(strings.Builder)
	if s.Stdin == nil {
		return ""
	}
	buf := make([]byte, 1024)
	for {
		n, err := s.Stdin.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}

func TestCancelledRunIsCrashed(t *testing.T) {
	b := &sandboxtest.Fake{Default: sandboxtest.Blocks}
	e := New(b, lang.Default(), Options{WorkDir: t.TempDir(), NoTmpfs: true})
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan *Result)
	go func() {
		done <- e.Run(ctx, Request{ExecutionID: "c", Language: "bash", Code: "sleep 9", Timeout: 60, Mode: ModeScript})
	}()
	cancel(ErrShutdown)
	res := <-done
	if res.Status != StatusCrashed || res.ExitCode != -1 || !strings.Contains(res.Message(), ErrShutdown.Error()) {
		t.Errorf("result %+v (%s)", res, res.Message())
	}
	if !errors.Is(context.Cause(ctx), ErrShutdown) {
		t.Fatal("cause lost")
	}
}

func TestCheck(t *testing.T) {
	if err := New(hostBackend(), lang.Default(), Options{WorkDir: t.TempDir()}).Check(); err != nil {
		t.Errorf("writable work directory refused: %v", err)
	}
	missing := New(hostBackend(), lang.Default(), Options{WorkDir: "/nonexistent/coderunner"})
	if err := missing.Check(); err == nil || !strings.Contains(err.Error(), "/nonexistent/coderunner") {
		t.Errorf("missing work directory: %v", err)
	}
}
