package runner_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/runner"
	"github.com/coderunner/coderunner/sandbox"
)

const cHello = "#include <stdio.h>\nint main(void) { puts(\"Hello, World!\"); return 0; }\n"

// TestJavaHeapOverflow checks that a Java program that fills its heap
// fails with the JVM's OutOfMemoryError, not a kill by the cgroup: the
// heap is sized below the memory limit.
func TestJavaHeapOverflow(t *testing.T) {
	r, _ := newRunner(t, runner.Options{})
	hog := languageProgram(t, "java").hog
	p, err := r.Prepare(context.Background(), "java", hog, judge.ProgramOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, mb := range []int64{64, 256} {
		res, err := p.Run(context.Background(), nil, sandbox.Limits{Memory: mb * sandbox.MiB, WallTime: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != sandbox.StatusNonzeroExit || res.MemoryExceeded || !bytes.Contains(res.Stderr, []byte("java.lang.OutOfMemoryError")) {
			t.Errorf("%d MB: status %s, memory exceeded %v, stderr %q; want a Java OutOfMemoryError", mb, res.Status, res.MemoryExceeded, res.Stderr)
		}
	}
}

// TestSmallMemoryLimit: a C hello-world runs with a 16 MB
// limit, since the compiler is not charged to the program.
func TestSmallMemoryLimit(t *testing.T) {
	r, _ := newRunner(t, runner.Options{})
	res := judge.New(r, judge.Options{}).Execute(context.Background(), judge.ExecutionRequest{
		Code:          cHello,
		Language:      "c",
		TestCases:     []judge.TestCase{{Input: "", ExpectedOutput: "Hello, World!\n"}},
		MemoryLimitMB: 16,
	})
	if res.Status != judge.StatusAllPassed {
		t.Fatalf("status %s: %s", res.Status, describe(res))
	}
}

// TestPrepareErrors checks the errors of Prepare that are not verdicts.
func TestPrepareErrors(t *testing.T) {
	r, be := newRunner(t, runner.Options{})
	_, err := r.Prepare(context.Background(), "cobol", "DISPLAY 'HI'.", judge.ProgramOptions{})
	if !errors.Is(err, judge.ErrUnsupportedLanguage) || !errors.Is(err, lang.ErrUnknownLanguage) {
		t.Errorf("unknown language: %v, want ErrUnsupportedLanguage", err)
	}
	for _, id := range []string{"python", "java", "rust"} {
		if err == nil || !strings.Contains(err.Error(), id) {
			t.Errorf("unknown language error %q does not list %s", err, id)
		}
	}

	missing, err := lang.New(map[string]lang.Recipe{"c": {Toolchain: lang.Discovery{Program: "no-such-cc", Paths: []string{"/nonexistent/cc"}}}})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := runner.New(be, missing, runner.Options{CacheDir: r.CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r2.Prepare(context.Background(), "c", cHello, judge.ProgramOptions{})
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "no-such-cc") {
		t.Errorf("missing toolchain: %v, want ErrUnavailable naming the compiler", err)
	}
	var ce *judge.CompileError
	if errors.As(err, &ce) || errors.Is(err, judge.ErrUnsupportedLanguage) {
		t.Errorf("missing toolchain reported as a verdict: %v", err)
	}
}

// TestHostileCompiles feeds the compiler inputs meant to hang it, exhaust
// it or read the host's files: each is a compilation error within the
// compile limits, and nothing of the host leaks.
func TestHostileCompiles(t *testing.T) {
	r, _ := newRunner(t, runner.Options{
		CacheDir:      testutil.ReachableDir(t, "runner-test-"),
		CompileLimits: sandbox.Limits{WallTime: 5 * time.Second, CPUTime: 5 * time.Second},
	})
	shadow := hostLines(t, "/etc/shadow")
	cases := []struct {
		name, lang, code string
		// banned are strings the compiler output may not contain.
		banned []string
	}{
		{"dev random", "c", "#include </dev/random>\nint main(void) { return 0; }\n", nil},
		{"host shadow", "c", "#include \"/etc/shadow\"\nint main(void) { return 0; }\n", shadow},
		{"host shadow c++", "cpp", "#include </etc/shadow>\nint main() {}\n", shadow},
		{"template recursion", "cpp", `template <int N> struct B { using T = typename B<N + 1>::T; enum { v = B<N - 1>::v + B<N - 2>::v }; };
int main() { return B<0>::v; }
`, nil},
		{"exponential templates", "cpp", `template <class T, int N> struct X {
	enum { v = X<X<T, N - 1>, N - 1>::v + X<X<T *, N - 1>, N - 1>::v };
};
template <class T> struct X<T, 0> { enum { v = 1 }; };
int main() { return X<int, 40>::v; }
`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			p, err := r.Prepare(context.Background(), c.lang, c.code, judge.ProgramOptions{})
			elapsed := time.Since(start)
			var ce *judge.CompileError
			if !errors.As(err, &ce) {
				if p != nil {
					p.Close()
				}
				t.Fatalf("Prepare: %v, want a compilation error", err)
			}
			t.Logf("after %v: %.200s", elapsed.Round(time.Millisecond), ce.Output)
			for _, b := range c.banned {
				if strings.Contains(ce.Output, b) || strings.Contains(ce.Stdout, b) {
					t.Errorf("compiler output contains the host's %q", b)
				}
			}
		})
	}
}

// hostLines are the non-empty lines of a host file, or nil when it cannot
// be read.
func hostLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Logf("no %s to compare with: %v", path, err)
		return nil
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if l := strings.TrimSpace(s.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

func languageProgram(t *testing.T, id string) programs {
	t.Helper()
	for _, p := range languagePrograms {
		if p.lang == id {
			return p
		}
	}
	t.Fatalf("no programs for %s", id)
	return programs{}
}

func TestSandboxPerTest(t *testing.T) {
	for _, perTest := range []bool{false, true} {
		t.Run(fmt.Sprint("SandboxPerTest=", perTest), func(t *testing.T) {
			r, be := newRunner(t, runner.Options{SandboxPerTest: perTest})
			p, err := r.Prepare(context.Background(), "python", "import os\nprint(os.getpid())\n", judge.ProgramOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			var pids []string
			for range 3 {
				res, err := p.Run(context.Background(), nil, sandbox.Limits{WallTime: 10 * time.Second})
				if err != nil || res.Status != sandbox.StatusOK {
					t.Fatalf("run: %v %+v", err, res)
				}
				pids = append(pids, strings.TrimSpace(string(res.Stdout)))
			}
			// Every run's program is process 2 of a PID namespace of its
			// own, in a new sandbox or a kept one: the process ids do not
			// tell an earlier test's forks.
			if pids[1] != pids[0] || pids[2] != pids[0] {
				t.Fatalf("process ids %v with SandboxPerTest %v", pids, perTest)
			}
			if got := be.seriesRuns.Load(); (got > 0) == perTest {
				t.Fatalf("%d runs went through a series with SandboxPerTest %v", got, perTest)
			}
		})
	}
}
