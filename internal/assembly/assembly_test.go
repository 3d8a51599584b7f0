package assembly

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/runner"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
	"github.com/coderunner/coderunner/session"
)

// closer is the fake backend with a Close that counts its calls and runs
// onClose first.
type closer struct {
	*sandboxtest.Fake
	closed  int
	onClose func()
}

func newCloser(t *testing.T) *closer { return &closer{Fake: &sandboxtest.Fake{T: t}} }

func (c *closer) Close() error {
	if c.onClose != nil {
		c.onClose()
	}
	c.closed++
	return nil
}

// registry holds one backend, "closer", whose factory records what it was
// given and returns b.
func registry(b *closer, env *backend.Env) *backend.Registry {
	r := backend.NewRegistry()
	backend.Add(r, backend.Module[struct{}]{
		Name: "closer",
		New: func(e backend.Env, _ struct{}) (sandbox.Backend, error) {
			*env = e
			return b, nil
		},
	})
	return r
}

// testConfig is the default configuration with a work directory of the
// test's own.
func testConfig(t *testing.T) *config.Config {
	cfg := config.Default()
	cfg.Backend.WorkDir = t.TempDir()
	return cfg
}

func TestCompileLimitsOneSource(t *testing.T) {
	// The configuration's defaults are the runner's: the executor and the
	// engine are handed the configuration's, so that a drift between the
	// two would give one of them other limits.
	got := runner.CompileLimits(CompileLimits(config.Default()))
	want := runner.CompileLimits(sandbox.Limits{CPUs: got.CPUs})
	if got != want {
		t.Errorf("the configuration's compile limits\n%+v\ndiffer from runner.DefaultCompileLimits\n%+v", got, want)
	}
}

func TestOpenOnlyWhatIsAsked(t *testing.T) {
	b := newCloser(t)
	var env backend.Env
	cfg := testConfig(t)
	p, err := Open(context.Background(), Options{Config: cfg, Registry: registry(b, &env), Backend: "closer", Warm: 3})
	if err != nil {
		t.Fatal(err)
	}
	if p.Backend != b || env.Warm != 3 || env.TempDir != cfg.Backend.WorkDir {
		t.Errorf("backend %v built with %+v, want the closer with Warm 3 and TempDir %s", p.Backend, env, cfg.Backend.WorkDir)
	}
	if p.Languages == nil {
		t.Error("no language table")
	}
	if p.Executor != nil || p.Invoker != nil || p.Sessions != nil || p.Engine != nil || p.EngineErr != nil {
		t.Errorf("parts built that were not asked for: %+v", p)
	}
	if p.JudgeEngine() != nil {
		t.Error("JudgeEngine is not nil without an engine")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if b.closed != 1 {
		t.Errorf("backend closed %d times, want 1", b.closed)
	}
}

func TestOpenEveryPart(t *testing.T) {
	sessions := filepath.Join(t.TempDir(), "sessions")
	var store string
	b := newCloser(t)
	// The sessions end before the backend closes.
	b.onClose = func() {
		if _, err := os.Stat(store); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the backend closed before the sessions ended: %s: %v", store, err)
		}
	}
	var env backend.Env
	p, err := Open(context.Background(), Options{
		Config: testConfig(t), Registry: registry(b, &env), Backend: "closer",
		Executor: true, Invoker: true, Sessions: true, SessionDir: sessions, Engine: true, CacheDir: testutil.ReachableDir(t, "assembly-cache-"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Executor == nil || p.Invoker == nil || p.Sessions == nil || p.Engine == nil || p.EngineErr != nil {
		t.Fatalf("parts missing: %+v", p)
	}
	if p.JudgeEngine() == nil {
		t.Error("JudgeEngine is nil with an engine")
	}
	store = p.Sessions.Dir()
	if !strings.HasPrefix(store, sessions+string(filepath.Separator)) {
		t.Errorf("session store in %s, want it under %s", store, sessions)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if b.closed != 1 {
		t.Errorf("backend closed %d times, want 1", b.closed)
	}
}

func TestOpenSessionsOff(t *testing.T) {
	cfg := testConfig(t)
	cfg.Sessions.MaxCount = 0
	p, err := Open(context.Background(), Options{Config: cfg, Sandbox: newCloser(t), Executor: true, Sessions: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Sessions != nil {
		t.Fatal("a session store with sessions.max_count 0")
	}
	id := "s1"
	req := execute.Request{Language: "bash", Code: "echo hi", SessionID: &id}
	if _, err := p.Runner().Execute(context.Background(), req); !errors.Is(err, session.ErrDisabled) {
		t.Errorf("a request naming a session: %v, want ErrDisabled", err)
	}
	called := false
	_, err = p.DiskSessions(func() (string, error) { called = true; return t.TempDir(), nil })
	if !errors.Is(err, session.ErrDisabled) || called {
		t.Errorf("DiskSessions with sessions off: %v (directory asked: %v), want ErrDisabled before asking", err, called)
	}
}

func TestOpenGivenSandboxStaysOpen(t *testing.T) {
	b := newCloser(t)
	p, err := Open(context.Background(), Options{Config: testConfig(t), Sandbox: b})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if b.closed != 0 {
		t.Error("Close closed a backend it was given")
	}
}

func TestOpenFailures(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	badLangs := testConfig(t)
	badLangs.Languages = map[string]lang.Recipe{"cobol": {Source: "a.cob"}}
	noWorkDir := testConfig(t)
	noWorkDir.Backend.WorkDir = filepath.Join(file, "under-a-file")
	tests := []struct {
		name string
		opts Options
		part string
	}{
		{"languages", Options{Config: badLangs, Backend: "closer"}, PartLanguages},
		{"backend", Options{Config: testConfig(t), Backend: "nonesuch"}, PartBackend},
		{"invoker", Options{Config: noWorkDir, Backend: "closer", Invoker: true}, PartInvoker},
		{"sessions", Options{Config: testConfig(t), Backend: "closer", Sessions: true, SessionDir: file}, PartSessions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newCloser(t)
			var env backend.Env
			tt.opts.Registry = registry(b, &env)
			p, err := Open(context.Background(), tt.opts)
			var pe *Error
			if !errors.As(err, &pe) || pe.Part != tt.part || p != nil {
				t.Fatalf("Open: %v, %v; want an *Error of part %s", p, err, tt.part)
			}
			if !strings.HasPrefix(err.Error(), tt.part+": ") {
				t.Errorf("message %q does not name the part", err)
			}
			if tt.part != PartLanguages && tt.part != PartBackend && b.closed != 1 {
				t.Errorf("backend closed %d times after a failure, want 1", b.closed)
			}
		})
	}
}

func TestOpenKeepGoing(t *testing.T) {
	p, err := Open(context.Background(), Options{Config: testConfig(t), Registry: backend.NewRegistry(), Backend: "nonesuch", KeepGoing: true, Executor: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !errors.Is(p.BackendErr, backend.ErrUnknownBackend) {
		t.Errorf("BackendErr %v, want ErrUnknownBackend", p.BackendErr)
	}
	_, err = p.Backend.Run(context.Background(), &sandbox.Spec{})
	if !errors.Is(err, sandbox.ErrUnavailable) || !errors.Is(err, backend.ErrUnknownBackend) {
		t.Errorf("a run without a backend: %v, want ErrUnavailable with the reason", err)
	}
}

func TestDefaultLimits(t *testing.T) {
	cfg := config.Default()
	cfg.Limits.Run.MemoryMB = 300
	cfg.Limits.Run.MaxProcesses = 0
	got := DefaultLimits(cfg)
	if got.MemoryLimit != 300 || got.Pids != 50 || got.TimeLimit != 30 || got.CPULimit != 0.5 || got.MaxOutputChars != 100000 {
		t.Errorf("DefaultLimits = %+v, want the configuration's memory and the contract's defaults for the rest", got)
	}
}

func TestJudgeWithoutEngine(t *testing.T) {
	p := &Parts{Config: config.Default(), EngineErr: errors.New("no cache directory")}
	res := p.Judge(judge.Options{}).Execute(context.Background(), judge.ExecutionRequest{
		Language: "python", Code: "print(1)", TestCases: []judge.TestCase{{Input: "", ExpectedOutput: "1"}},
	})
	if res.Status != judge.StatusSandboxError || res.ErrorInfo == nil || !strings.Contains(res.ErrorInfo.Message, "no cache directory") {
		t.Errorf("result %+v", res)
	}
}

// TestOpenTmpSeeds: asked for, the languages' /tmp seeds are built in
// the background on the backend the parts share, and the executor's runs
// get them once built; Close waits for a build under way, cancelling it.
func TestOpenTmpSeeds(t *testing.T) {
	py, _ := lang.Default().Lookup("python")
	testutil.Require(t, py.Discover(context.Background()).Available, "no Python")
	b := newCloser(t)
	b.Default = sandboxtest.Returns(sandbox.Result{Status: sandbox.StatusOK, Stdout: []byte("fontlist-v1.json\n{}")})
	p, err := Open(context.Background(), Options{Config: testConfig(t), Sandbox: b, Executor: true, TmpSeeds: true})
	if err != nil {
		t.Fatal(err)
	}
	<-p.SeedsReady()
	if b.Runs() != 1 || !strings.Contains(strings.Join(b.Last().Args, " "), "fontlist") {
		t.Fatalf("%d runs, the last %q: want the seed's", b.Runs(), b.Last().Args)
	}
	res, err := p.Executor.Execute(context.Background(), execute.Request{Language: "python", Code: "print(1)"})
	if err != nil || res.Status != execute.StatusSuccess {
		t.Fatalf("%v %+v", err, res)
	}
	if files := b.Last().TmpFiles; len(files) != 1 || files[0].Path != "matplotlib/fontlist-v1.json" {
		t.Errorf("the run's TmpFiles: %v", files)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	// A build under way when the parts close is cancelled, and waited for.
	b = newCloser(t)
	b.Default = sandboxtest.Blocks
	p, err = Open(context.Background(), Options{Config: testConfig(t), Sandbox: b, TmpSeeds: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.SeedsReady():
	default:
		t.Fatal("Close returned before the seed's build ended")
	}
	// Without the option nothing is built.
	b = newCloser(t)
	p, err = Open(context.Background(), Options{Config: testConfig(t), Sandbox: b})
	if err != nil {
		t.Fatal(err)
	}
	<-p.SeedsReady()
	_ = p.Close()
	if b.Runs() != 0 {
		t.Errorf("%d runs without TmpSeeds", b.Runs())
	}
}
