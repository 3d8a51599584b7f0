package judge

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

// guessInteractor plays "guess the number": the secret is the test's
// input file; it answers each guess with <, > or =, and accepts after =
// within 20 guesses. With exitOnWin it exits with that code after =, with
// points on its OUTPUT for 7.
func guessInteractor(exitOnWin int) *fakeTool {
	return &fakeTool{fn: func(_ context.Context, inv Invocation) (*sandbox.Result, error) {
		in, _ := inv.file(ToolInputFile)
		secret, _ := strconv.Atoi(strings.TrimSpace(in))
		sc := bufio.NewScanner(inv.Stdin)
		for n := 1; n <= 20 && sc.Scan(); n++ {
			g, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
			if err != nil {
				return exitWith(inv, 2, "", "not a number: "+sc.Text()), nil
			}
			switch {
			case g < secret:
				fmt.Fprintln(inv.Stdout, "<")
			case g > secret:
				fmt.Fprintln(inv.Stdout, ">")
			default:
				fmt.Fprintln(inv.Stdout, "=")
				if exitOnWin == 7 {
					return exitWith(inv, 7, "", "0.5 slow but right"), nil
				}
				return exitWith(inv, exitOnWin, "", fmt.Sprintf("found in %d guesses", n)), nil
			}
		}
		return exitWith(inv, 1, "", "no guess was right"), nil
	}}
}

// bisect guesses by binary search in 1..1000.
func bisect(_ context.Context, inv Invocation) (*sandbox.Result, error) {
	sc := bufio.NewScanner(inv.Stdin)
	lo, hi := 1, 1000
	for lo <= hi {
		mid := (lo + hi) / 2
		fmt.Fprintln(inv.Stdout, mid)
		if !sc.Scan() {
			return exitWith(inv, 3, "", "eof"), nil
		}
		switch sc.Text() {
		case "<":
			lo = mid + 1
		case ">":
			hi = mid - 1
		default:
			return exitWith(inv, 0, "", ""), nil
		}
	}
	return exitWith(inv, 0, "", ""), nil
}

// countUp guesses 1, 2, 3, ...: too many guesses.
func countUp(_ context.Context, inv Invocation) (*sandbox.Result, error) {
	sc := bufio.NewScanner(inv.Stdin)
	for g := 1; ; g++ {
		fmt.Fprintln(inv.Stdout, g)
		if !sc.Scan() || sc.Text() == "=" {
			// The interactor gave up and went: the pipe is closed.
			return exitWith(inv, 1, "", "broken pipe"), nil
		}
	}
}

// waits reads its stdin before it writes: with an interactor that also
// waits, neither moves, and the solution's wall limit ends it, as a
// backend would.
func waits(_ context.Context, inv Invocation) (*sandbox.Result, error) {
	got := make(chan struct{})
	go func() {
		_, _ = bufio.NewReader(inv.Stdin).ReadString('\n')
		close(got)
	}()
	select {
	case <-got:
		return exitWith(inv, 0, "", ""), nil
	case <-time.After(inv.Limits.WallTime):
		return timesOut(context.Background(), inv.Limits)
	}
}

func interactiveRequest(sol func(context.Context, Invocation) (*sandbox.Result, error), inter *fakeTool, secrets ...string) (*fakeEngine, *fakeTool, ExecutionRequest) {
	e := newEngine(nil)
	solution := &fakeTool{fn: sol}
	e.byCode = map[string]Program{"SOL": solution, "INTER": inter}
	var tests []TestCase
	for i, s := range secrets {
		tests = append(tests, TestCase{ID: fmt.Sprint("t", i), Input: s})
	}
	req := request("python", "SOL", tests...)
	req.Interactor = &Tool{Language: "python", Code: "INTER"}
	return e, solution, req
}

func TestInteractorAccepts(t *testing.T) {
	inter := guessInteractor(0)
	e, sol, req := interactiveRequest(bisect, inter, "1", "500", "777", "1000")
	got := New(e, Options{Parallel: 2}).Execute(context.Background(), req)
	if got.Status != StatusAllPassed {
		t.Fatalf("%s: %+v", got.Summary, got.TestResults)
	}
	for _, tr := range got.TestResults {
		if !strings.HasPrefix(deref(tr.CheckerMessage), "found in ") {
			t.Errorf("%s: checker_message %q", tr.TestID, deref(tr.CheckerMessage))
		}
		// actual_output is what the solution wrote: its guesses.
		if !strings.HasPrefix(tr.ActualOutput, "500\n") {
			t.Errorf("%s: actual_output %q", tr.TestID, tr.ActualOutput)
		}
	}
	// The solution runs with nothing of the interactor's: no files, no
	// arguments; the interactor gets INPUT and OUTPUT and its limits.
	for _, inv := range sol.invocations() {
		if len(inv.Files) != 0 || len(inv.Args) != 0 || inv.Limits.WallTime != time.Second {
			t.Errorf("solution invoked with %+v", inv)
		}
	}
	for _, inv := range inter.invocations() {
		if fmt.Sprint(inv.Args) != "[input.txt output.txt]" || inv.Collect != "output.txt" || inv.Limits.WallTime != DefaultToolLimits.WallTime+time.Second ||
			inv.Limits.CPUTime != DefaultToolLimits.CPUTime {
			t.Errorf("interactor invoked with %v %+v", inv.Args, inv.Limits)
		}
	}
}

func TestInteractorWrongAnswer(t *testing.T) {
	// countUp dies of the closed pipe once the interactor gives up: the
	// interactor's wrong answer is the verdict, not the runtime error.
	e, _, req := interactiveRequest(countUp, guessInteractor(0), "900")
	got := New(e, Options{Parallel: 1}).Execute(context.Background(), req)
	tr := got.TestResults[0]
	if tr.Status != TestWrongAnswer || got.Status != StatusAllFailed || deref(tr.CheckerMessage) != "no guess was right" {
		t.Fatalf("%s %+v", got.Status, tr)
	}
}

func TestInteractorDeadlock(t *testing.T) {
	// Both wait to read: the solution's time limit ends it, and its end
	// ends the interactor's input.
	waiter := &fakeTool{fn: func(_ context.Context, inv Invocation) (*sandbox.Result, error) {
		if _, err := bufio.NewReader(inv.Stdin).ReadString('\n'); err != nil {
			return exitWith(inv, 1, "", "unexpected end of input"), nil
		}
		return exitWith(inv, 0, "", ""), nil
	}}
	e, _, req := interactiveRequest(waits, waiter, "5")
	req.TimeoutMS = 100
	got := New(e, Options{Parallel: 1}).Execute(context.Background(), req)
	tr := got.TestResults[0]
	if tr.Status != TestTimeout || got.Status != StatusTimeout || deref(tr.CheckerMessage) != "unexpected end of input" {
		t.Fatalf("%s %+v", got.Status, tr)
	}
}

func TestInteractorVerdicts(t *testing.T) {
	for _, c := range []struct {
		name    string
		code    int
		status  TestStatus
		overall ExecutionStatus
	}{
		{"presentation", 2, TestPresentationError, StatusAllFailed},
		{"failure", 3, TestJudgeError, StatusJudgeError},
		{"partial", 7, TestPartial, StatusSomePassed},
		{"odd code", 9, TestJudgeError, StatusJudgeError},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, _, req := interactiveRequest(bisect, guessInteractor(c.code), "123")
			got := New(e, Options{Parallel: 1}).Execute(context.Background(), req)
			tr := got.TestResults[0]
			if tr.Status != c.status || got.Status != c.overall {
				t.Fatalf("%s %s, want %s %s: %+v", tr.Status, got.Status, c.status, c.overall, tr)
			}
			if c.code == 7 && (tr.Points == nil || *tr.Points != 0.5 || deref(tr.CheckerMessage) != "slow but right") {
				t.Errorf("partial: %v %q", tr.Points, deref(tr.CheckerMessage))
			}
		})
	}
}

func TestInteractorCrashIsJudgeError(t *testing.T) {
	crash := &fakeTool{fn: func(_ context.Context, inv Invocation) (*sandbox.Result, error) {
		r := result(sandbox.StatusSignaled, "", "")
		r.Signal = 11
		return r, nil
	}}
	e, _, req := interactiveRequest(bisect, crash, "1")
	got := New(e, Options{Parallel: 1}).Execute(context.Background(), req)
	if got.Status != StatusJudgeError || got.TestResults[0].Status != TestJudgeError ||
		deref(got.TestResults[0].ErrorMessage) != "The interactor was killed by signal 11" {
		t.Fatalf("%s %+v", got.Status, got.TestResults[0])
	}
}

func TestInteractorHidden(t *testing.T) {
	e, _, req := interactiveRequest(bisect, guessInteractor(0), "42")
	req.TestCases[0].IsHidden = true
	got := New(e, Options{Parallel: 1}).Execute(context.Background(), req)
	tr := got.TestResults[0]
	if tr.Status != TestPassed || tr.CheckerMessage != nil || tr.ActualOutput != "" {
		t.Errorf("%+v", tr)
	}
}

func TestInteractiveNeedsInvoker(t *testing.T) {
	e := newEngine(map[string]script{"1": prints("x")})
	e.byCode = map[string]Program{"INTER": guessInteractor(0)}
	req := request("python", "plain", TestCase{ID: "t", Input: "1"})
	req.Interactor = &Tool{Language: "python", Code: "INTER"}
	got := New(e, Options{Parallel: 1}).Execute(context.Background(), req)
	if got.Status != StatusSandboxError || !strings.Contains(got.ErrorInfo.Message, "interactive solution") {
		t.Errorf("%s %+v", got.Status, got.ErrorInfo)
	}
}

// An interactor cut short by total_timeout_ms makes the test a timeout,
// not a judge_error: the deadline did it.
func TestInteractorCutByTheTotalTimeout(t *testing.T) {
	slow := &fakeTool{fn: func(ctx context.Context, inv Invocation) (*sandbox.Result, error) {
		<-ctx.Done()
		r := result(sandbox.StatusSignaled, "", "")
		r.Signal = 9
		return r, nil
	}}
	quick := func(_ context.Context, inv Invocation) (*sandbox.Result, error) {
		return exitWith(inv, 0, "1\n", ""), nil
	}
	e, _, req := interactiveRequest(quick, slow, "5")
	req.TotalTimeoutMS = 100
	got := New(e, Options{Parallel: 1}).Execute(context.Background(), req)
	tr := got.TestResults[0]
	if tr.Status != TestTimeout || deref(tr.ErrorMessage) != msgTotalTimeout || got.Status != StatusTimeout {
		t.Fatalf("%s %+v", got.Status, tr)
	}
}
