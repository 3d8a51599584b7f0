package runner_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/runner"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/native"
)

// The benchmarks judge a C++ solution against benchTests tests, one at a
// time, and measure in the same loop the same work done bare on the host:
// g++ with the recipe's flags, then the binary run benchTests times with
// exec.Command. The difference, per test, is what the sandbox costs.

const benchTests = 100

const benchSolution = `#include <iostream>
int main() {
	long long a, b;
	std::cin >> a >> b;
	std::cout << a + b << "\n";
}
`

func benchCases() []judge.TestCase {
	tcs := make([]judge.TestCase, benchTests)
	for i := range tcs {
		tcs[i] = judge.TestCase{ID: fmt.Sprint(i), Input: fmt.Sprintf("%d %d\n", i, 2*i), ExpectedOutput: fmt.Sprintf("%d\n", 3*i)}
	}
	return tcs
}

// bare compiles code with the host's g++ (when compile is set) and runs
// the binary once per test.
func bare(b *testing.B, dir, code string, compile bool, tcs []judge.TestCase) {
	src, bin := filepath.Join(dir, "main.cpp"), filepath.Join(dir, "main")
	if compile {
		if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
			b.Fatal(err)
		}
		if out, err := exec.Command("g++", "-O2", "-std=c++17", "-pipe", "-o", bin, src, "-lm").CombinedOutput(); err != nil {
			b.Fatalf("g++: %v: %s", err, out)
		}
	}
	for _, tc := range tcs {
		cmd := exec.Command(bin)
		cmd.Stdin = bytes.NewReader([]byte(tc.Input))
		out, err := cmd.Output()
		if err != nil || string(out) != tc.ExpectedOutput {
			b.Fatalf("bare run: %v %q", err, out)
		}
	}
}

func benchJudge(b *testing.B, cached bool, warm, parallel int) {
	benchJudgeWith(b, cached, warm, parallel, runner.Options{})
}

func benchJudgeWith(b *testing.B, cached bool, warm, parallel int, opts runner.Options) {
	var be sandbox.Backend = nativeBackend(b)
	if warm > 0 {
		w, err := native.New(native.Options{Warm: warm})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		be = w
	}
	opts.CacheDir = testutil.ReachableDir(b, "runner-test-")
	r, err := runner.New(be, lang.Default(), opts)
	if err != nil {
		b.Fatal(err)
	}
	j := judge.New(r, judge.Options{Parallel: parallel})
	tcs := benchCases()
	dir := b.TempDir()
	if cached {
		// The first judge fills the cache, and bare's binary is built.
		if res := j.Execute(context.Background(), judge.ExecutionRequest{Code: benchSolution, Language: "cpp", TestCases: tcs}); res.Status != judge.StatusAllPassed {
			b.Fatalf("warm-up: %s", describe(res))
		}
		bare(b, dir, benchSolution, true, nil)
	}
	var judged, bareTime time.Duration
	n := 0
	for b.Loop() {
		code := benchSolution
		if !cached {
			// A new source each time, so that every judge compiles.
			code = fmt.Sprintf("%s// %d %d\n", benchSolution, n, time.Now().UnixNano())
		}
		start := time.Now()
		res := j.Execute(context.Background(), judge.ExecutionRequest{Code: code, Language: "cpp", TestCases: tcs})
		judged += time.Since(start)
		if res.Status != judge.StatusAllPassed {
			b.Fatalf("judge: %s", describe(res))
		}
		start = time.Now()
		bare(b, dir, code, !cached, tcs)
		bareTime += time.Since(start)
		n++
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(n) }
	b.ReportMetric(ms(judged), "judge-ms/op")
	b.ReportMetric(ms(bareTime), "bare-ms/op")
	b.ReportMetric((ms(judged)-ms(bareTime))/benchTests, "overhead-ms/test")
	b.Logf("%d iterations: judge %.1f ms, bare %.1f ms, overhead %.2f ms per test",
		n, ms(judged), ms(bareTime), (ms(judged)-ms(bareTime))/benchTests)
}

// BenchmarkJudgeCompile compiles every time (a new source each iteration).
func BenchmarkJudgeCompile(b *testing.B) { benchJudge(b, false, 0, 1) }

// BenchmarkJudgeCached judges a source already in the compile cache.
func BenchmarkJudgeCached(b *testing.B) { benchJudge(b, true, 0, 1) }

// BenchmarkJudgeCachedPerTest is BenchmarkJudgeCached with a new sandbox
// for every test (backend.sandbox_per_test), started ahead of need as
// the server does, where the others keep a sandbox from one test to the
// next.
func BenchmarkJudgeCachedPerTest(b *testing.B) {
	benchJudgeWith(b, true, 2, 1, runner.Options{SandboxPerTest: true})
}

// BenchmarkJudgeCachedWarm is BenchmarkJudgeCached on a native backend
// that starts its sandboxes ahead of need, as the server does.
func BenchmarkJudgeCachedWarm(b *testing.B) { benchJudge(b, true, 2, 1) }

// BenchmarkJudgeCachedParallel is BenchmarkJudgeCachedWarm with the
// judge's default parallelism, one test per core, as `coderunner judge`
// runs; the bare runs stay one at a time.
func BenchmarkJudgeCachedParallel(b *testing.B) {
	benchJudge(b, true, runtime.NumCPU(), runtime.NumCPU())
}
