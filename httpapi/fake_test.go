package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/invoke"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
)

// fakeExecutor answers /execute. With hold set, a run waits until the
// test releases it or the run's context ends (then it is crashed, as the
// real executor reports a cancelled run).
type fakeExecutor struct {
	mu      sync.Mutex
	started chan string
	hold    chan struct{}
	panics  bool
	runs    []invoke.Request
}

func newFakeExecutor() *fakeExecutor {
	return &fakeExecutor{started: make(chan string, 100)}
}

func (f *fakeExecutor) Run(ctx context.Context, req invoke.Request) *invoke.Result {
	f.mu.Lock()
	f.runs = append(f.runs, req)
	hold, panics := f.hold, f.panics
	f.mu.Unlock()
	if panics {
		panic("fake executor exploded at /secret/path.go:42")
	}
	f.started <- req.ExecutionID
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return invoke.CrashedResult(req.ExecutionID, "execution interrupted: "+context.Cause(ctx).Error())
		}
	}
	return &invoke.Result{
		ExecutionID: req.ExecutionID, Status: invoke.StatusSuccess, Stdout: "hi\n",
		ReturnValue: json.RawMessage(`{"ok":true}`), Artifacts: []execute.Artifact{},
	}
}

// fakeRunner answers /v1/run like execute.Executor.
type fakeRunner struct{}

// fakeRuns are the requests of programs of several files fakeRunner got
// since the last takeFakeRuns.
var (
	fakeRunsMu sync.Mutex
	fakeRuns   []execute.Request
)

// takeFakeRuns returns fakeRuns and forgets them.
func takeFakeRuns() []execute.Request {
	fakeRunsMu.Lock()
	defer fakeRunsMu.Unlock()
	runs := fakeRuns
	fakeRuns = nil
	return runs
}

func (fakeRunner) Execute(ctx context.Context, req execute.Request) (*execute.Result, error) {
	if len(req.Files) > 0 {
		fakeRunsMu.Lock()
		fakeRuns = append(fakeRuns, req)
		fakeRunsMu.Unlock()
	}
	if req.Language != "python" {
		return nil, fmt.Errorf("%w: %q", lang.ErrUnknownLanguage, req.Language)
	}
	return &execute.Result{Stdout: "out\n", Status: execute.StatusSuccess, Language: req.Language, Backend: "fake",
		LimitsApplied: execute.LimitsApplied{TimeLimitSeconds: req.Limits.WithDefaults().TimeLimit}}, nil
}

// fakeJudge answers /v1/judge.
type fakeJudge struct{}

func (fakeJudge) Execute(ctx context.Context, req judge.ExecutionRequest) judge.ExecutionResult {
	return judge.ExecutionResult{RequestID: req.RequestID, Status: judge.StatusAllPassed,
		TestResults: []judge.TestResult{{TestID: "1", Status: judge.TestPassed}}, Summary: "1/1 passed"}
}

// newTestServer is a ready Server on fakes, with opts edited by edit.
func newTestServer(t *testing.T, edit func(*Options)) (*Server, *fakeExecutor) {
	t.Helper()
	fe := newFakeExecutor()
	opts := Options{Executor: fe, Runner: fakeRunner{}, Judge: fakeJudge{}, Backend: "fake", Version: "test",
		MaxConcurrent: 2, QueueSize: 10}
	if edit != nil {
		edit(&opts)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.SetReady()
	return s, fe
}

// runtimeGosched yields while a test polls for a state other goroutines
// reach.
func runtimeGosched() { time.Sleep(time.Millisecond) }
