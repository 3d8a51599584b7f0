package execute

import (
	"context"
	"time"

	"github.com/coderunner/coderunner/runner"
	"github.com/coderunner/coderunner/sandbox"
)

// ModeInterpreter is the Request.Mode of a cell run in a session's live
// interpreter; the empty mode runs a program once.
const ModeInterpreter = "interpreter"

// ProcessLimits bound a long-lived process (an interpreter session's):
// Wall and CPU bound its whole life, Output the bytes it may write over
// that life; Memory, CPUs and Pids are a request's.
type ProcessLimits struct {
	Wall, CPU time.Duration
	Output    int64
	Limits    ExecutionLimits
}

// RunProcess runs req's program as one long-lived process: its standard
// input is req.StdinReader, its output goes to req.Stdout and req.Stderr
// as it is produced (the result keeps none of it), and it is held to lim
// rather than to req.Limits' time and output limits. It returns when the
// process ends or ctx is cancelled (which kills it). req must name its
// Workspace. The refusals are those of Execute; the sandbox's failure is
// the error.
func (e *Executor) RunProcess(ctx context.Context, req Request, lim ProcessLimits) (*sandbox.Result, error) {
	if err := checkRunMode(req); err != nil {
		return nil, err
	}
	src, err := CheckRequest(req)
	if err != nil {
		return nil, err
	}
	l, err := e.langs.Lookup(req.Language)
	if err != nil {
		return nil, err
	}
	if err := e.build.Check(ctx, l); err != nil {
		return nil, err
	}
	prog, cr, err := e.build.Build(ctx, l, src.Code, runner.BuildOptions{Workspace: req.Workspace,
		SampleInterval: e.sampleInterval, Options: req.options(src)})
	if err != nil {
		return nil, err
	}
	if prog == nil {
		return cr, nil
	}
	defer func() { _ = prog.Close() }()
	sl := lim.Limits.WithDefaults().sandboxLimits()
	sl.WallTime, sl.CPUTime, sl.OutputBytes = lim.Wall, lim.CPU, lim.Output
	spec := prog.Spec(nil, e.sandboxLimits.Overlay(sl).WithDefaults())
	spec.Stdin = req.StdinReader
	spec.Stdout, spec.Stderr = req.Stdout, req.Stderr
	// What it writes is the caller's to keep: the result holds a little.
	spec.KeepOutput = 1
	return e.backend.Run(ctx, spec)
}
