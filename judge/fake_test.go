package judge

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

// script decides the outcome of one fake run.
type script func(ctx context.Context, limits sandbox.Limits) (*sandbox.Result, error)

// fakeEngine "compiles" anything (or fails as told) into a fakeProgram.
type fakeEngine struct {
	prog       *fakeProgram
	prepareErr error
	// known, when set, lists the languages Prepare accepts.
	known []string
	// onPrepare, when set, runs inside Prepare (to panic, for example).
	onPrepare func()
	// byCode, when it has the code, is what Prepare returns for it (a
	// checker, an interactor, an interactive solution).
	byCode map[string]Program

	mu    sync.Mutex
	codes []string
	langs []string
	opts  []ProgramOptions
}

var _ Engine = (*fakeEngine)(nil)

func newEngine(scripts map[string]script) *fakeEngine {
	return &fakeEngine{prog: newProgram(scripts)}
}

func (e *fakeEngine) Prepare(_ context.Context, language, code string, opts ProgramOptions) (Program, error) {
	e.mu.Lock()
	e.codes = append(e.codes, code)
	e.langs = append(e.langs, language)
	e.opts = append(e.opts, opts)
	e.mu.Unlock()

	if e.onPrepare != nil {
		e.onPrepare()
	}
	if e.known != nil {
		ok := false
		for _, l := range e.known {
			ok = ok || l == language
		}
		if !ok {
			return nil, errors.Join(ErrUnsupportedLanguage, errors.New(language))
		}
	}
	if p, ok := e.byCode[code]; ok {
		return p, nil
	}
	if e.prepareErr != nil {
		return nil, e.prepareErr
	}
	if e.prog == nil {
		return nil, nil
	}
	return e.prog, nil
}

func (e *fakeEngine) prepared() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.codes)
}

// fakeProgram answers each run by the script registered for its stdin.
type fakeProgram struct {
	scripts  map[string]script
	closeErr error

	mu      sync.Mutex
	limits  map[string]sandbox.Limits
	started []string
	closed  int
}

var _ Program = (*fakeProgram)(nil)

func newProgram(scripts map[string]script) *fakeProgram {
	return &fakeProgram{scripts: scripts, limits: map[string]sandbox.Limits{}}
}

func (p *fakeProgram) Run(ctx context.Context, stdin []byte, limits sandbox.Limits) (*sandbox.Result, error) {
	in := string(stdin)
	p.mu.Lock()
	p.limits[in] = limits
	p.started = append(p.started, in)
	s, ok := p.scripts[in]
	p.mu.Unlock()
	if !ok {
		return nil, errors.New("fake: no script for input " + in)
	}
	return s(ctx, limits)
}

func (p *fakeProgram) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed++
	return p.closeErr
}

func (p *fakeProgram) limitsFor(in string) sandbox.Limits {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.limits[in]
}

// The scripts below return results shaped like a backend's.

func result(s sandbox.Status, stdout, stderr string) *sandbox.Result {
	return &sandbox.Result{
		Status:     s,
		Stdout:     []byte(stdout),
		Stderr:     []byte(stderr),
		WallTime:   15 * time.Millisecond,
		CPUTime:    10 * time.Millisecond,
		PeakMemory: 8 << 20,
	}
}

func prints(stdout string) script {
	return func(context.Context, sandbox.Limits) (*sandbox.Result, error) {
		return result(sandbox.StatusOK, stdout, ""), nil
	}
}

func exits(code int, stdout, stderr string) script {
	return func(context.Context, sandbox.Limits) (*sandbox.Result, error) {
		r := result(sandbox.StatusNonzeroExit, stdout, stderr)
		r.ExitCode = code
		return r, nil
	}
}

func killedBy(sig syscall.Signal) script {
	return func(context.Context, sandbox.Limits) (*sandbox.Result, error) {
		r := result(sandbox.StatusSignaled, "", "")
		r.ExitCode, r.Signal = -1, sig
		return r, nil
	}
}

func returns(r *sandbox.Result) script {
	return func(context.Context, sandbox.Limits) (*sandbox.Result, error) {
		c := *r
		return &c, nil
	}
}

func timesOut(_ context.Context, l sandbox.Limits) (*sandbox.Result, error) {
	r := result(sandbox.StatusTimeLimit, "", "")
	r.ExitCode, r.Signal, r.TimeLimit, r.WallTime = -1, syscall.SIGKILL, "wall", l.WallTime
	return r, nil
}

func failsWith(err error) script {
	return func(context.Context, sandbox.Limits) (*sandbox.Result, error) { return nil, err }
}

// blocks runs until the judge cancels it, then answers as a backend that
// returns the context's error.
func blocks(ctx context.Context, _ sandbox.Limits) (*sandbox.Result, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// blocksThenKilled runs until cancelled, then answers as a backend that
// reports the kill in the Result instead of an error.
func blocksThenKilled(ctx context.Context, _ sandbox.Limits) (*sandbox.Result, error) {
	<-ctx.Done()
	r := result(sandbox.StatusSignaled, "partial", "")
	r.ExitCode, r.Signal = -1, syscall.SIGKILL
	return r, nil
}

// after finishes like s once gate is closed (or the run is cancelled), and
// closes done when it returns.
func after(gate <-chan struct{}, done chan<- struct{}, s script) script {
	return func(ctx context.Context, l sandbox.Limits) (*sandbox.Result, error) {
		defer func() {
			if done != nil {
				close(done)
			}
		}()
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return s(ctx, l)
	}
}

// fakeClock advances by step at every reading, so total_time_ms is stable.
func fakeClock(step time.Duration) func() time.Time {
	var mu sync.Mutex
	t := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now := t
		t = t.Add(step)
		return now
	}
}
