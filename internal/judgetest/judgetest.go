// Package judgetest runs small judge requests through runner
// and judge on a sandbox backend: compile once, run every test case with
// its own limits, and give the verdicts. The bwrap and docker backends'
// tests call Run, so that the judge works on every backend, not only the
// conformance suite.
package judgetest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/runner"
	"github.com/coderunner/coderunner/sandbox"
)

// pySum adds two numbers, and misbehaves on request: a negative first
// number exits with 3, 999 spins, 777 allocates a gigabyte.
const pySum = `import sys
a, b = map(int, sys.stdin.read().split())
if a < 0:
    sys.exit(3)
if a == 999:
    while True:
        pass
if a == 777:
    x = bytearray(1 << 30)
print(a + b)
`

const cSum = `#include <stdio.h>
int main(void) { long a, b; if (scanf("%ld %ld", &a, &b) != 2) return 1; printf("%ld\n", a + b); return 0; }
`

// CFlood answers by its input: "pass" prints its 1 MiB expected output,
// "late" the same with the last byte wrong (both with 2 MiB on stderr),
// and the others write 2 MiB to each stream, "crash" then exiting 1. The
// backends' flood test and runner's memory test judge it.
const CFlood = `#include <stdio.h>
#include <string.h>
static char buf[1 << 20];
int main(void) {
	char mode[16] = {0};
	if (scanf("%15s", mode) != 1) return 2;
	memset(buf, 'x', sizeof buf);
	if (!strcmp(mode, "pass") || !strcmp(mode, "late")) {
		if (mode[0] == 'l') buf[sizeof buf - 1] = 'y';
		fwrite(buf, 1, sizeof buf, stdout);
		fwrite(buf, 1, sizeof buf, stderr);
		fwrite(buf, 1, sizeof buf, stderr);
		return 0;
	}
	for (int i = 0; i < 2; i++) {
		fwrite(buf, 1, sizeof buf, stdout);
		fwrite(buf, 1, sizeof buf, stderr);
	}
	return mode[0] == 'c';
}
`

// CacheDir is a new compile cache directory, removed when the test ends,
// that the sandbox's users can reach: they mount compiled programs from
// it, and t.TempDir's private parent would hide them.
func CacheDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "judgetest-cache-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// NewJudge is a judge of two tests at a time through a runner on backend
// with the languages langs and a compile cache of its own.
func NewJudge(t testing.TB, backend sandbox.Backend, langs *lang.Table) *judge.Judge {
	t.Helper()
	r, err := runner.New(backend, langs, runner.Options{CacheDir: CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	return judge.New(r, judge.Options{Parallel: 2})
}

// Run judges a Python and a C program on backend. langs maps languages to
// what the backend needs (images); nil means the default table.
func Run(t *testing.T, backend sandbox.Backend, langs *lang.Table) {
	t.Helper()
	if langs == nil {
		langs = lang.Default()
	}
	j := NewJudge(t, backend, langs)

	t.Run("PythonVerdicts", func(t *testing.T) { pythonVerdicts(t, j) })
	t.Run("CompiledOnce", func(t *testing.T) { compiledOnce(t, j) })
	t.Run("OutputFlood", func(t *testing.T) { outputFlood(t, backend, langs) })
	t.Run("CompilationError", func(t *testing.T) { compilationError(t, j) })
	t.Run("CheckerAndInteractor", func(t *testing.T) { checkerAndInteractor(t, j) })
}

// pythonVerdicts judges a Python program into every verdict: a wrong
// answer, a runtime error, a timeout, the memory limit, and passes (a
// hidden one too).
func pythonVerdicts(t *testing.T, j *judge.Judge) {
	tests := []judge.TestCase{
		{ID: "wrong", Input: "1 2", ExpectedOutput: "4"},
		{ID: "runtime", Input: "-1 2", ExpectedOutput: "1"},
		{ID: "timeout", Input: "999 1", ExpectedOutput: "1000", TimeoutMS: 500},
		{ID: "memory", Input: "777 1", ExpectedOutput: "778"},
		{ID: "hidden", Input: "5 5", ExpectedOutput: "10", IsHidden: true},
	}
	for i := range 5 {
		tests = append(tests, judge.TestCase{ID: fmt.Sprintf("pass%d", i), Input: fmt.Sprintf("%d %d", i, i*i), ExpectedOutput: fmt.Sprint(i + i*i)})
	}
	res := j.Execute(context.Background(), judge.ExecutionRequest{
		RequestID: "py", Code: pySum, Language: "python", TestCases: tests,
		TimeoutMS: 5000, TotalTimeoutMS: 60000, MemoryLimitMB: 64, CPULimit: 1,
	})
	want := map[string]judge.TestStatus{
		"wrong": judge.TestWrongAnswer, "runtime": judge.TestRuntimeError, "timeout": judge.TestTimeout,
		"memory": judge.TestMemoryExceeded, "hidden": judge.TestPassed,
	}
	if len(res.TestResults) != len(tests) {
		t.Fatalf("status %s, %d results for %d tests: %s", res.Status, len(res.TestResults), len(tests), Describe(res))
	}
	for _, tr := range res.TestResults {
		w, ok := want[tr.TestID]
		if !ok {
			w = judge.TestPassed
		}
		if tr.Status != w {
			t.Errorf("test %s: %s, want %s (%s)", tr.TestID, tr.Status, w, Describe(res))
		}
		if tr.Status == judge.TestPassed && tr.MemoryUsedKB <= 0 {
			t.Errorf("test %s: memory not measured", tr.TestID)
		}
	}
	if res.Status != judge.StatusSomePassed {
		t.Errorf("status %s, want %s", res.Status, judge.StatusSomePassed)
	}
}

// compiledOnce judges a C program four times under 16 MB: the compiler
// is not charged to the tests.
func compiledOnce(t *testing.T, j *judge.Judge) {
	var tests []judge.TestCase
	for i := range 4 {
		tests = append(tests, judge.TestCase{Input: fmt.Sprintf("%d 40", i), ExpectedOutput: fmt.Sprint(i + 40)})
	}
	res := j.Execute(context.Background(), judge.ExecutionRequest{
		RequestID: "c", Code: cSum, Language: "c", TestCases: tests, MemoryLimitMB: 16,
	})
	if res.Status != judge.StatusAllPassed {
		t.Fatalf("status %s: %s", res.Status, Describe(res))
	}
}

// outputFlood: a program writing 2 MiB to each stream of every test,
// under a cap raised to 2 MiB by a 1 MiB expected output. The verdicts
// are on the whole outputs; the result keeps 64 KiB of each test's
// streams and 256 KiB in all.
func outputFlood(t *testing.T, backend sandbox.Backend, langs *lang.Table) {
	r, err := runner.New(backend, langs, runner.Options{CacheDir: CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	const total = 256 << 10
	fj := judge.New(r, judge.Options{Parallel: 2, KeptOutputKB: 64, KeptOutputTotalKB: total >> 10})
	big := strings.Repeat("x", 1<<20)
	tests := []judge.TestCase{{ID: "pass", Input: "pass", ExpectedOutput: big}, {ID: "late", Input: "late", ExpectedOutput: big}}
	want := []judge.TestStatus{judge.TestPassed, judge.TestWrongAnswer}
	for i := range 8 {
		if i%2 == 0 {
			tests = append(tests, judge.TestCase{ID: fmt.Sprint("crash", i), Input: "crash", ExpectedOutput: "x"})
			want = append(want, judge.TestRuntimeError)
		} else {
			tests = append(tests, judge.TestCase{ID: fmt.Sprint("wrong", i), Input: "wrong", ExpectedOutput: "x"})
			want = append(want, judge.TestWrongAnswer)
		}
	}
	res := fj.Execute(context.Background(), judge.ExecutionRequest{
		RequestID: "flood", Code: CFlood, Language: "c", TestCases: tests, TimeoutMS: 20000, TotalTimeoutMS: 300000,
	})
	if len(res.TestResults) != len(tests) {
		t.Fatalf("status %s, %d results: %.2000s", res.Status, len(res.TestResults), Describe(res))
	}
	kept := 0
	for i, tr := range res.TestResults {
		n := len(tr.ActualOutput)
		if tr.ErrorMessage != nil {
			n += len(*tr.ErrorMessage)
		}
		kept += n
		if tr.Status != want[i] || !tr.Truncated || n > 2*64<<10 {
			t.Errorf("test %s: %s, %d bytes kept, truncated %v; want %s, at most %d bytes, truncated", tr.TestID, tr.Status, n, tr.Truncated, want[i], 2*64<<10)
		}
	}
	// Past the budget a runtime error still says how it ended.
	if kept > total+len(tests)*len("Exit code: 1") {
		t.Errorf("the result keeps %d bytes of output, over its %d budget", kept, total)
	}
}

// compilationError: code that does not compile is compilation_error,
// with the compiler's words.
func compilationError(t *testing.T, j *judge.Judge) {
	res := j.Execute(context.Background(), judge.ExecutionRequest{
		RequestID: "bad", Code: "int main(void) { return undefined_name; }\n", Language: "c",
		TestCases: []judge.TestCase{{Input: "", ExpectedOutput: ""}},
	})
	if res.Status != judge.StatusCompilationError || res.CompilationOutput == nil || !strings.Contains(*res.CompilationOutput, "undefined_name") {
		t.Fatalf("status %s: %s", res.Status, Describe(res))
	}
}
