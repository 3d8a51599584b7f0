package judge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/coderunner/coderunner/sandbox"
)

// errPeerEnded closes the pipe ends of a run whose peer is over: writes
// to it are dropped, reads end.
var errPeerEnded = errors.New("the other side of the interaction has ended")

// interact runs test tc of an interactive problem: the solution and the
// interactor in two sandboxes at once, the solution's stdout piped to the
// interactor's stdin and the interactor's stdout to the solution's stdin.
// When one of them ends, the other's stdin reaches its end and what it
// writes is dropped. When both wait for each other, the solution's time
// limit ends it first (the interactor's wall time is longer); its end
// then ends the interactor's input.
//
// The verdict, in this order: a solution over its time or memory limit;
// the interactor's wrong answer, presentation error or failure (a
// judge_error: a solution then often dies of a closed pipe, which is not
// its fault); a solution that failed otherwise; the interactor's accepted
// or partial verdict on a solution that ended cleanly.
func (j *Judge) interact(ctx context.Context, req ExecutionRequest, tc TestCase, sol Program, t *tool, limits sandbox.Limits, out *output, kept *budget) (TestResult, *sandbox.Result, error) {
	solver, ok := sol.(Invoker)
	if !ok {
		return TestResult{}, nil, errors.New("this engine cannot run an interactive solution")
	}
	// toSol carries the interactor's stdout to the solution's stdin,
	// fromSol the solution's stdout to the interactor's stdin.
	toSolR, toSolW := io.Pipe()
	fromSolR, fromSolW := io.Pipe()
	msgErr := boundedBuffer{limit: MaxCheckerMessageBytes}

	il := j.toolLimits()
	il.WallTime += limits.WallTime

	var (
		wg             sync.WaitGroup
		solRes, intRes *sandbox.Result
		solErr, intErr error
	)
	wg.Go(func() {
		solRes, solErr = solver.Invoke(ctx, Invocation{
			Stdin:  toSolR,
			Stdout: &forward{sink: &out.stdout, to: fromSolW},
			Stderr: &out.stderr,
			Keep:   j.keep,
			Limits: limits,
		})
		_ = fromSolW.Close()
		_ = toSolR.CloseWithError(errPeerEnded)
	})
	wg.Go(func() {
		intRes, intErr = t.prog.Invoke(ctx, Invocation{
			Args:    []string{ToolInputFile, ToolOutputFile},
			Collect: ToolOutputFile,
			Files:   []sandbox.File{{Path: ToolInputFile, Content: []byte(tc.Input), Mode: 0o444}},
			Stdin:   fromSolR,
			Stdout:  &forward{to: toSolW},
			Stderr:  &msgErr,
			Keep:    MaxCheckerMessageBytes,
			Limits:  il,
		})
		_ = toSolW.Close()
		_ = fromSolR.CloseWithError(errPeerEnded)
	})
	wg.Wait()

	switch {
	case solErr != nil:
		return TestResult{}, solRes, solErr
	case intErr != nil:
		return TestResult{}, solRes, fmt.Errorf("interactor: %w", intErr)
	case solRes == nil || intRes == nil:
		return TestResult{}, solRes, errors.New("the engine returned no result")
	}
	tr, err := verdict(tc, req.Language, solRes, out, kept)
	if err != nil {
		return TestResult{}, solRes, err
	}
	// The interactor's stdout goes to the solution; its message is what
	// it wrote to stderr and to OUTPUT.
	v := readToolVerdict("interactor", intRes, "", msgErr.String(), true)
	switch {
	case tr.Status == TestTimeout || tr.Status == TestMemoryExceeded:
		if v.message != "" {
			tr.CheckerMessage = strp(v.message)
		}
	case v.status != TestPassed && v.status != TestPartial:
		v.apply(&tr)
	case tr.Status != TestPassed:
		if v.message != "" {
			tr.CheckerMessage = strp(v.message)
		}
	default:
		v.apply(&tr)
	}
	chargeMessage(tc, &tr, kept)
	return tr, solRes, nil
}

// forward hands a solution's or an interactor's stdout to its sink and on
// to the peer's stdin. Once the peer is gone what follows is dropped: a
// failing write here must not stop the run's own capture. A nil sink
// keeps nothing (an interactor's stdout is no message).
type forward struct {
	sink io.Writer
	to   *io.PipeWriter

	mu   sync.Mutex
	gone bool
}

func (f *forward) Write(p []byte) (int, error) {
	if f.sink != nil {
		_, _ = f.sink.Write(p)
	}
	f.mu.Lock()
	gone := f.gone
	f.mu.Unlock()
	if !gone {
		if _, err := f.to.Write(p); err != nil {
			f.mu.Lock()
			f.gone = true
			f.mu.Unlock()
		}
	}
	return len(p), nil
}
