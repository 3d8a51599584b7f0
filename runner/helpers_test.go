package runner_test

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/runner"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/native"
)

// counting wraps a backend and counts its runs.
type counting struct {
	sandbox.Backend
	runs, seriesRuns atomic.Int64
}

func (c *counting) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	c.runs.Add(1)
	return c.Backend.Run(ctx, spec)
}

// Series counts the runs of the series too, so that the tests judge with
// sandboxes kept between tests as the runner does on native.
func (c *counting) Series() sandbox.Series {
	return &countingSeries{Series: c.Backend.(sandbox.Reuser).Series(), c: c}
}

type countingSeries struct {
	sandbox.Series
	c *counting
}

func (s *countingSeries) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	s.c.runs.Add(1)
	s.c.seriesRuns.Add(1)
	return s.Series.Run(ctx, spec)
}

var (
	backendOnce sync.Once
	backend     *native.Backend
	backendErr  error
)

// nativeBackend is the native backend shared by the tests of the package.
func nativeBackend(t testing.TB) *native.Backend {
	t.Helper()
	testutil.RequireRoot(t)
	backendOnce.Do(func() { backend, backendErr = native.New(native.Options{}) })
	if backendErr != nil {
		t.Fatalf("native backend unavailable: %v", backendErr)
	}
	return backend
}

// sharedCache is one cache directory for the tests that do not look at
// the cache, so that the Go seed is built once per test binary.
var sharedCache = sync.OnceValue(func() string {
	d, err := os.MkdirTemp("", "runner-shared-")
	if err != nil {
		panic(err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		panic(err)
	}
	return d
})

func TestMain(m *testing.M) {
	code := m.Run()
	if d := sharedCacheDir.Load(); d != nil {
		os.RemoveAll(*d)
	}
	os.Exit(code)
}

var sharedCacheDir atomic.Pointer[string]

// newRunner returns a runner on the native backend, counting its runs.
func newRunner(t testing.TB, opts runner.Options) (*runner.Runner, *counting) {
	t.Helper()
	be := &counting{Backend: nativeBackend(t)}
	if opts.CacheDir == "" {
		d := sharedCache()
		sharedCacheDir.Store(&d)
		opts.CacheDir = d
	}
	r, err := runner.New(be, lang.Default(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r, be
}

// describe renders a judge result for a failure message.
func describe(res judge.ExecutionResult) string {
	b, _ := json.MarshalIndent(res, "", "  ")
	return string(b)
}
