package runner_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/runner"
	"github.com/coderunner/coderunner/sandbox"
)

// cMacro prints the macro X, which only the compiler flags define.
const cMacro = "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", X); return 0; }\n"

// Python sees its arguments and a variable of the request, in every test
// the judge runs; C compiled with -DX=3 prints 3.
func TestNativeOptionsJudged(t *testing.T) {
	r, _ := newRunner(t, runner.Options{})
	j := judge.New(r, judge.Options{})
	py := judge.ExecutionRequest{
		Language: "python", Code: "import os, sys\nprint(sys.argv[1:], os.environ['GREETING'], os.environ.get('LD_PRELOAD'))\n",
		Args: []string{"one", "two words", ""}, Env: map[string]string{"GREETING": "hello there"},
		TestCases: []judge.TestCase{
			{ExpectedOutput: "['one', 'two words', ''] hello there None\n"},
			{ExpectedOutput: "['one', 'two words', ''] hello there None\n"},
		},
	}
	if res := j.Execute(context.Background(), py); res.Status != judge.StatusAllPassed {
		t.Fatalf("python: %s", describe(res))
	}
	c := judge.ExecutionRequest{Language: "c", Code: cMacro, CompilerFlags: []string{"-DX=3", "-O0", "-Wall"},
		TestCases: []judge.TestCase{{ExpectedOutput: "3\n"}}}
	if res := j.Execute(context.Background(), c); res.Status != judge.StatusAllPassed {
		t.Fatalf("c with -DX=3: %s", describe(res))
	}
	c.CompilerFlags = nil
	if res := j.Execute(context.Background(), c); res.Status != judge.StatusCompilationError || !strings.Contains(describe(res), "X") {
		t.Fatalf("c without -DX: %s, want a compilation error about X", describe(res))
	}
}

// A refused flag is refused before the compiler runs, as a validation
// error naming it.
func TestNativeRefusedFlag(t *testing.T) {
	r, be := newRunner(t, runner.Options{CacheDir: testutil.ReachableDir(t, "runner-test-")})
	for _, flags := range [][]string{{"-B/tmp"}, {"-O2", "-specs=/tmp/x"}, {"@/etc/passwd"}, {"-Wl,-T,/tmp/x"}, {"-include/etc/passwd"}} {
		_, err := r.Prepare(context.Background(), "c", cMacro, judge.ProgramOptions{CompilerFlags: flags})
		var ve *judge.ValidationError
		if !errors.As(err, &ve) || !strings.Contains(ve.Message, flags[len(flags)-1]) {
			t.Errorf("flags %q: %v, want a validation error naming the last", flags, err)
		}
	}
	res := judge.New(r, judge.Options{}).Execute(context.Background(), judge.ExecutionRequest{Language: "c", Code: cMacro,
		CompilerFlags: []string{"-fplugin=evil"}, TestCases: []judge.TestCase{{ExpectedOutput: "3\n"}}})
	if res.ErrorInfo == nil || res.ErrorInfo.Code != judge.CodeValidationError || !strings.Contains(res.ErrorInfo.Message, `"-fplugin=evil"`) {
		t.Errorf("judged: %s", describe(res))
	}
	if n := be.runs.Load(); n != 0 {
		t.Errorf("%d sandbox runs for refused flags", n)
	}
}

// The compiler flags are part of the compile cache's key: the same
// source with other flags is compiled again, and each program keeps its
// own.
func TestNativeCacheKeyByFlags(t *testing.T) {
	r, be := newRunner(t, runner.Options{CacheDir: testutil.ReachableDir(t, "runner-test-")})
	prog := func(flags ...string) judge.Program {
		t.Helper()
		p, err := r.Prepare(context.Background(), "c", cMacro, judge.ProgramOptions{CompilerFlags: flags})
		if err != nil {
			t.Fatalf("flags %q: %v", flags, err)
		}
		return p
	}
	p3 := prog("-DX=3")
	defer p3.Close()
	p4 := prog("-DX=4")
	defer p4.Close()
	if n := be.runs.Load(); n != 2 {
		t.Fatalf("%d compiles for two sets of flags, want 2", n)
	}
	again := prog("-DX=3")
	defer again.Close()
	if n := be.runs.Load(); n != 2 {
		t.Fatalf("the same flags compiled again (%d compiles)", n)
	}
	runOK(t, p3, "3\n")
	runOK(t, p4, "4\n")
	runOK(t, again, "3\n")
	if got := len(entries(t, r)); got != 2 {
		t.Errorf("%d cache entries, want 2", got)
	}
}

// Go reads its flags before the files; a stripped build still runs.
func TestNativeGoFlags(t *testing.T) {
	l, err := lang.Default().Lookup("go")
	if err != nil {
		t.Fatal(err)
	}
	testutil.Require(t, l.Discover(context.Background()).Available, "go is not available here")
	// -trimpath changes every package's build: the standard library is
	// compiled again, past the seed, which on a loaded machine (the race
	// detector, other suites) takes more than the default 30 s.
	slow := sandbox.Limits{WallTime: 180 * time.Second, CPUTime: 180 * time.Second}
	r, _ := newRunner(t, runner.Options{CompileLimits: slow})
	p, err := r.Prepare(context.Background(), "go",
		"package main\n\nimport (\"fmt\"; \"os\")\n\nvar version = \"dev\"\n\nfunc main() { fmt.Println(version, os.Args[1:], os.Getenv(\"N\")) }\n",
		judge.ProgramOptions{CompilerFlags: []string{"-trimpath", "-ldflags=-s -w -X main.version=1.2"}, Args: []string{"a"}, Env: map[string]string{"N": "7"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	runOK(t, p, "1.2 [a] 7\n")
}

// The largest arguments and environment a request may give reach the
// program whole: the caps are within what the kernel's execve takes.
func TestNativeOptionsAtTheirCaps(t *testing.T) {
	r, _ := newRunner(t, runner.Options{})
	args := make([]string, lang.MaxArgs)
	for i := range args {
		args[i] = strings.Repeat("a", lang.MaxArgsBytes/lang.MaxArgs-1)
	}
	env := map[string]string{}
	for i := range lang.MaxEnv {
		name := fmt.Sprintf("V%02d", i)
		env[name] = strings.Repeat("v", lang.MaxEnvBytes/lang.MaxEnv-len(name)-2)
	}
	opts := judge.ProgramOptions{Args: args, Env: env}
	if err := lang.CheckArgs(args); err != nil {
		t.Fatal(err)
	}
	if err := lang.CheckEnv(env); err != nil {
		t.Fatal(err)
	}
	p, err := r.Prepare(context.Background(), "python",
		"import os, sys\nprint(len(sys.argv) - 1, sum(map(len, sys.argv[1:])), sum(1 for k in os.environ if k.startswith('V')), sum(len(v) for k, v in os.environ.items() if k.startswith('V')))\n", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	want := fmt.Sprintf("%d %d %d %d\n", lang.MaxArgs, lang.MaxArgs*(lang.MaxArgsBytes/lang.MaxArgs-1), lang.MaxEnv, lang.MaxEnv*(lang.MaxEnvBytes/lang.MaxEnv-5))
	runOK(t, p, want)
}
