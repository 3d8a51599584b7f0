package runner_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/runner"
	"github.com/coderunner/coderunner/sandbox"
)

// cProgram is a C program that prints its own number.
func cProgram(n int) string {
	return fmt.Sprintf("#include <stdio.h>\nint main(void) { printf(\"%%d\\n\", %d); return 0; }\n", n)
}

// prepare prepares code and fails the test on any error.
func prepare(t *testing.T, r *runner.Runner, language, code string) judge.Program {
	t.Helper()
	p, err := r.Prepare(context.Background(), language, code, judge.ProgramOptions{})
	if err != nil {
		t.Fatalf("Prepare %s: %v", language, err)
	}
	return p
}

// runOK runs p and checks that it prints want.
func runOK(t *testing.T, p judge.Program, want string) {
	t.Helper()
	res, err := p.Run(context.Background(), nil, sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusOK || string(res.Stdout) != want {
		t.Fatalf("status %s, stdout %q, stderr %q; want ok and %q", res.Status, res.Stdout, res.Stderr, want)
	}
}

// entries lists the cache's entries.
func entries(t *testing.T, r *runner.Runner) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(r.CacheDir(), "entries"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestCacheHit(t *testing.T) {
	r, be := newRunner(t, runner.Options{CacheDir: testutil.ReachableDir(t, "runner-test-")})
	p := prepare(t, r, "c", cProgram(1))
	if n := be.runs.Load(); n != 1 {
		t.Fatalf("first Prepare ran the sandbox %d times, want 1 (the compiler)", n)
	}
	p.Close()
	q := prepare(t, r, "c", cProgram(1))
	defer q.Close()
	if n := be.runs.Load(); n != 1 {
		t.Fatalf("second Prepare of the same source ran the sandbox again (%d runs)", n)
	}
	runOK(t, q, "1\n")

	// A new Runner on the same directory (another process) hits too.
	r2, err := runner.New(be, lang.Default(), runner.Options{CacheDir: r.CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	p2 := prepare(t, r2, "c", cProgram(1))
	defer p2.Close()
	if n := be.runs.Load(); n != 2 {
		t.Fatalf("a second runner compiled again (%d runs, want 2)", n)
	}

	// Another source, another compile.
	p3 := prepare(t, r, "c", cProgram(2))
	defer p3.Close()
	if n := be.runs.Load(); n != 3 {
		t.Fatalf("a different source ran %d times in all, want 3", n)
	}
	if got := len(entries(t, r)); got != 2 {
		t.Errorf("%d cache entries, want 2", got)
	}
}

// TestCacheKeyFlags checks that compiling with other flags does not reuse
// a program compiled with the default ones.
func TestCacheKeyFlags(t *testing.T) {
	dir := testutil.ReachableDir(t, "runner-test-")
	r, be := newRunner(t, runner.Options{CacheDir: dir})
	prepare(t, r, "c", cProgram(3)).Close()
	o0, err := lang.New(map[string]lang.Recipe{"c": {Compile: []string{"{tool}", "-O0", "-std=c11", "-o", "{binary}", "{source}", "-lm"}}})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := runner.New(be, o0, runner.Options{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	p := prepare(t, r2, "c", cProgram(3))
	defer p.Close()
	if n := be.runs.Load(); n != 2 {
		t.Fatalf("-O0 reused the -O2 program (%d compiles, want 2)", n)
	}
	runOK(t, p, "3\n")
}

func TestCacheEviction(t *testing.T) {
	// One byte: every entry not in use goes as soon as another comes.
	r, be := newRunner(t, runner.Options{CacheDir: testutil.ReachableDir(t, "runner-test-"), CacheMaxBytes: 1})
	a := prepare(t, r, "c", cProgram(10))
	b := prepare(t, r, "c", cProgram(11))
	// a is in use: b's arrival did not evict it.
	runOK(t, a, "10\n")
	if got := len(entries(t, r)); got != 2 {
		t.Fatalf("%d entries while both are in use, want 2", got)
	}
	a.Close()
	b.Close()
	c := prepare(t, r, "c", cProgram(12))
	defer c.Close()
	if got := entries(t, r); len(got) != 1 {
		t.Fatalf("entries %v after a third program, want only its own", got)
	}
	runs := be.runs.Load()
	again := prepare(t, r, "c", cProgram(10))
	defer again.Close()
	if be.runs.Load() != runs+1 {
		t.Fatal("an evicted program was not compiled again")
	}
	runOK(t, again, "10\n")
}

// TestCacheEvictionOtherProcess checks that an entry held by one runner
// is not evicted by another on the same directory, as another process
// would be: the lock is on the file system, not in memory.
func TestCacheEvictionOtherProcess(t *testing.T) {
	dir := testutil.ReachableDir(t, "runner-test-")
	holder, be := newRunner(t, runner.Options{CacheDir: dir})
	held := prepare(t, holder, "c", cProgram(20))
	defer held.Close()
	small, err := runner.New(be, lang.Default(), runner.Options{CacheDir: dir, CacheMaxBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	prepare(t, small, "c", cProgram(21)).Close()
	prepare(t, small, "c", cProgram(22)).Close()
	runOK(t, held, "20\n")
	if got := len(entries(t, holder)); got != 2 {
		t.Errorf("%d entries, want 2: the held one and the newest", got)
	}
}

// TestConcurrentPrepare prepares the same source from many goroutines:
// one compilation, every program runs.
func TestConcurrentPrepare(t *testing.T) {
	r, be := newRunner(t, runner.Options{CacheDir: testutil.ReachableDir(t, "runner-test-")})
	const n = 8
	var wg sync.WaitGroup
	progs := make([]judge.Program, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			progs[i], errs[i] = r.Prepare(context.Background(), "cpp", "#include <cstdio>\nint main() { std::puts(\"same\"); }\n", judge.ProgramOptions{})
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Prepare %d: %v", i, errs[i])
		}
	}
	if got := be.runs.Load(); got != 1 {
		t.Errorf("%d compilations of one source, want 1", got)
	}
	for i := range n {
		wg.Go(func() {
			res, err := progs[i].Run(context.Background(), nil, sandbox.Limits{})
			if err != nil || res.Status != sandbox.StatusOK || string(res.Stdout) != "same\n" {
				t.Errorf("run %d: %v %+v", i, err, res)
			}
		})
	}
	wg.Wait()
	for _, p := range progs {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	}
	if err := progs[0].Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := progs[0].Run(context.Background(), nil, sandbox.Limits{}); err == nil {
		t.Error("Run after Close succeeded")
	}
}
