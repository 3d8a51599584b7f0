package judge

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/coderunner/coderunner/sandbox"
)

// checkerRequest judges one test, "in" expecting "1 2", whose solution
// prints "2 1", with the checker played by fn.
func checkerRequest(fn func(context.Context, Invocation) (*sandbox.Result, error)) (*fakeEngine, *fakeTool, ExecutionRequest) {
	e := newEngine(map[string]script{"in": prints("2 1\n"), "crash": exits(3, "", "boom")})
	chk := &fakeTool{fn: fn}
	e.byCode = map[string]Program{"CHECKER": chk}
	req := request("python", "code", TestCase{ID: "t1", Input: "in", ExpectedOutput: "1 2\n"})
	req.Checker = &Tool{Language: "cpp", Code: "CHECKER"}
	return e, chk, req
}

func exitsWith(code int, stdout, stderr string) func(context.Context, Invocation) (*sandbox.Result, error) {
	return func(_ context.Context, inv Invocation) (*sandbox.Result, error) {
		return exitWith(inv, code, stdout, stderr), nil
	}
}

func TestCheckerExitCodes(t *testing.T) {
	killed := func(_ context.Context, inv Invocation) (*sandbox.Result, error) {
		r := result(sandbox.StatusSignaled, "", "")
		r.Signal = syscall.SIGSEGV
		return r, nil
	}
	timedOut := func(_ context.Context, inv Invocation) (*sandbox.Result, error) {
		return timesOut(context.Background(), inv.Limits)
	}
	oom := func(_ context.Context, inv Invocation) (*sandbox.Result, error) {
		return result(sandbox.StatusMemoryLimit, "", ""), nil
	}
	for _, c := range []struct {
		name    string
		fn      func(context.Context, Invocation) (*sandbox.Result, error)
		status  TestStatus
		overall ExecutionStatus
		points  float64 // -1: none
		message string
		errMsg  string
	}{
		{"accepted", exitsWith(0, "ok: permutation\n", ""), TestPassed, StatusAllPassed, -1, "ok: permutation", ""},
		{"wrong answer", exitsWith(1, "", "wrong: 3 is not in the input\n"), TestWrongAnswer, StatusAllFailed, -1, "wrong: 3 is not in the input", ""},
		{"presentation", exitsWith(2, "extra spaces", ""), TestPresentationError, StatusAllFailed, -1, "extra spaces", ""},
		{"checker failure", exitsWith(3, "", "answer file is broken"), TestJudgeError, StatusJudgeError, -1, "answer file is broken", "The checker reported a failure (exit code 3)"},
		{"partial", exitsWith(7, "0.25 a quarter\n", "note"), TestPartial, StatusSomePassed, 0.25, "a quarter\nnote", ""},
		{"partial with word", exitsWith(7, "points 0.5\n", ""), TestPartial, StatusSomePassed, 0.5, "", ""},
		{"partial zero", exitsWith(7, "0", ""), TestPartial, StatusAllFailed, 0, "", ""},
		{"points above one", exitsWith(7, "1.5", ""), TestJudgeError, StatusJudgeError, -1, "1.5", "The checker exited with code 7 without points between 0 and 1 at the start of its standard output"},
		{"points missing", exitsWith(7, "", "half"), TestJudgeError, StatusJudgeError, -1, "half", "The checker exited with code 7 without points between 0 and 1 at the start of its standard output"},
		{"points NaN", exitsWith(7, "NaN", ""), TestJudgeError, StatusJudgeError, -1, "NaN", "The checker exited with code 7 without points between 0 and 1 at the start of its standard output"},
		{"other code", exitsWith(42, "", ""), TestJudgeError, StatusJudgeError, -1, "", "The checker exited with code 42 (want 0, 1, 2, 3 or 7)"},
		{"crash", killed, TestJudgeError, StatusJudgeError, -1, "", "The checker was killed by signal 11"},
		{"timeout", timedOut, TestJudgeError, StatusJudgeError, -1, "", "The checker timed out"},
		{"memory", oom, TestJudgeError, StatusJudgeError, -1, "", "The checker ran out of memory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, _, req := checkerRequest(c.fn)
			got := newJudge(e, 1).Execute(context.Background(), req)
			tr := got.TestResults[0]
			if tr.Status != c.status || got.Status != c.overall {
				t.Fatalf("status %s overall %s, want %s %s (%s)", tr.Status, got.Status, c.status, c.overall, got.Summary)
			}
			if (tr.Points == nil) != (c.points < 0) || tr.Points != nil && *tr.Points != c.points {
				t.Errorf("points %v, want %v", tr.Points, c.points)
			}
			if deref(tr.CheckerMessage) != c.message {
				t.Errorf("checker_message %q, want %q", deref(tr.CheckerMessage), c.message)
			}
			if deref(tr.ErrorMessage) != c.errMsg {
				t.Errorf("error_message %q, want %q", deref(tr.ErrorMessage), c.errMsg)
			}
			if c.overall == StatusJudgeError {
				if got.ErrorInfo == nil || got.ErrorInfo.Code != "JUDGE_ERROR" || got.ErrorInfo.Message != c.errMsg {
					t.Errorf("error_info %+v", got.ErrorInfo)
				}
				if !strings.Contains(got.Summary, "1 could not be judged") {
					t.Errorf("summary %q", got.Summary)
				}
			}
		})
	}
}

func TestCheckerGetsTheFiles(t *testing.T) {
	e, chk, req := checkerRequest(func(_ context.Context, inv Invocation) (*sandbox.Result, error) {
		in, _ := inv.file(ToolInputFile)
		out, _ := inv.file(ToolOutputFile)
		ans, _ := inv.file(ToolAnswerFile)
		if in == "in" && out == "2 1\n" && ans == "1 2\n" {
			return exitWith(inv, 0, "", ""), nil
		}
		return exitWith(inv, 1, "", "files: "+in+"|"+out+"|"+ans), nil
	})
	got := New(e, Options{Parallel: 1}).Execute(context.Background(), req)
	if got.Status != StatusAllPassed {
		t.Fatalf("%s: %+v", got.Summary, got.TestResults)
	}
	invs := chk.invocations()
	if len(invs) != 1 {
		t.Fatalf("%d checker runs, want 1", len(invs))
	}
	if !slices.Equal(invs[0].Args, []string{"input.txt", "output.txt", "answer.txt"}) {
		t.Errorf("args %q", invs[0].Args)
	}
	if invs[0].Limits != DefaultToolLimits {
		t.Errorf("checker limits %+v, want %+v", invs[0].Limits, DefaultToolLimits)
	}
	if invs[0].Stdin != nil {
		t.Error("the checker has a stdin")
	}
	if chk.closed != 1 {
		t.Errorf("checker closed %d times", chk.closed)
	}
	// The checker is compiled apart from the solution, with its own
	// language and no options of the solution's.
	if !slices.Equal(e.langs, []string{"python", "cpp"}) || !slices.Equal(e.codes, []string{"code", "CHECKER"}) {
		t.Errorf("prepared %q %q", e.langs, e.codes)
	}
}

func TestCheckerOwnLimits(t *testing.T) {
	e, chk, req := checkerRequest(exitsWith(0, "", ""))
	lim := sandbox.Limits{WallTime: 3e9, Memory: 64 * sandbox.MiB}
	New(e, Options{Parallel: 1, ToolLimits: lim}).Execute(context.Background(), req)
	got := chk.invocations()[0].Limits
	if got.WallTime != 3e9 || got.Memory != 64*sandbox.MiB || got.CPUTime != DefaultToolLimits.CPUTime {
		t.Errorf("limits %+v", got)
	}
}

func TestCheckerSeesTheWholeOutput(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	e, chk, req := checkerRequest(func(_ context.Context, inv Invocation) (*sandbox.Result, error) {
		out, _ := inv.file(ToolOutputFile)
		if out != long {
			return exitWith(inv, 1, "", "short"), nil
		}
		return exitWith(inv, 0, "", ""), nil
	})
	e.prog.scripts["in"] = prints(long)
	got := New(e, Options{Parallel: 1, MaxOutputKB: 256, KeptOutputKB: 1}).Execute(context.Background(), req)
	if got.Status != StatusAllPassed {
		t.Fatalf("%s: %s", got.Summary, deref(got.TestResults[0].CheckerMessage))
	}
	if len(chk.invocations()) != 1 || len(got.TestResults[0].ActualOutput) != 1024 {
		t.Errorf("kept %d bytes", len(got.TestResults[0].ActualOutput))
	}
}

func TestCheckerNotRunOnFailedSolution(t *testing.T) {
	e, chk, req := checkerRequest(exitsWith(0, "", ""))
	req.TestCases[0].Input = "crash"
	got := New(e, Options{Parallel: 1}).Execute(context.Background(), req)
	if got.Status != StatusRuntimeError || got.TestResults[0].CheckerMessage != nil {
		t.Fatalf("%s %+v", got.Status, got.TestResults[0])
	}
	if n := len(chk.invocations()); n != 0 {
		t.Errorf("checker ran %d times on a crash", n)
	}
}

func TestCheckerMessageBounded(t *testing.T) {
	e, _, req := checkerRequest(exitsWith(1, strings.Repeat("m", 3*MaxCheckerMessageBytes), ""))
	got := newJudge(e, 1).Execute(context.Background(), req)
	if got.TestResults[0].Status != TestWrongAnswer {
		t.Fatalf("status %s", got.TestResults[0].Status)
	}
	if n := len(deref(got.TestResults[0].CheckerMessage)); n > MaxCheckerMessageBytes+len("…") {
		t.Errorf("checker_message of %d bytes", n)
	}
}

func TestCheckerHiddenTest(t *testing.T) {
	e, _, req := checkerRequest(exitsWith(1, "expected 1 2, found 2 1", ""))
	req.TestCases[0].IsHidden = true
	got := New(e, Options{Parallel: 1}).Execute(context.Background(), req)
	tr := got.TestResults[0]
	if tr.Status != TestWrongAnswer || tr.CheckerMessage != nil || tr.ActualOutput != "" {
		t.Errorf("hidden test leaks: %+v", tr)
	}
	b, _ := json.Marshal(got)
	if strings.Contains(string(b), "expected 1 2") {
		t.Errorf("JSON leaks the checker's message: %s", b)
	}
}

func TestCheckerPartialScoresSubtasks(t *testing.T) {
	e := newEngine(map[string]script{"a": prints("A"), "b": prints("B")})
	chk := &fakeTool{fn: func(_ context.Context, inv Invocation) (*sandbox.Result, error) {
		if in, _ := inv.file(ToolInputFile); in == "a" {
			return exitWith(inv, 7, "0.5", ""), nil
		}
		return exitWith(inv, 0, "", ""), nil
	}}
	e.byCode = map[string]Program{"CHK": chk}
	req := request("python", "code", TestCase{ID: "a", Input: "a"}, TestCase{ID: "b", Input: "b"})
	req.Checker = &Tool{Language: "python", Code: "CHK"}
	req.Subtasks = []Subtask{
		{ID: "all", Points: 10, Tests: []string{"a", "b"}},
		{ID: "min", Points: 10, Tests: []string{"a", "b"}, Policy: PolicyMin},
		{ID: "sum", Points: 10, Tests: []string{"a", "b"}, Policy: PolicySum},
	}
	got := New(e, Options{Parallel: 2}).Execute(context.Background(), req)
	want := []float64{0, 5, 7.5}
	for i, sr := range got.SubtaskResults {
		if sr.Score != want[i] {
			t.Errorf("subtask %s score %g, want %g", sr.ID, sr.Score, want[i])
		}
	}
	if got.Status != StatusSomePassed || *got.Score != 12.5 {
		t.Errorf("%s score %v", got.Status, *got.Score)
	}
}

func TestCheckerCompileError(t *testing.T) {
	e := newEngine(map[string]script{"in": prints("x")})
	req := request("python", "code", TestCase{ID: "t", Input: "in"})
	req.Checker = &Tool{Language: "cpp", Code: "BROKEN"}
	// The solution prepares; the checker fails to compile.
	j := New(&splitEngine{ok: e, failCode: "BROKEN", err: &CompileError{Output: "checker.cpp:1: error"}}, Options{Parallel: 1})
	got := j.Execute(context.Background(), req)
	if got.Status != StatusJudgeError || len(got.TestResults) != 0 || got.ErrorInfo == nil ||
		got.ErrorInfo.Stage != StageCompilation || !strings.Contains(got.ErrorInfo.Message, "checker did not compile: checker.cpp:1: error") {
		t.Fatalf("%+v %+v", got, got.ErrorInfo)
	}
	if e.prog.closed != 1 {
		t.Errorf("solution closed %d times", e.prog.closed)
	}
	// A solution that does not compile is a compilation_error whatever
	// the checker.
	got = New(&splitEngine{ok: e, failCode: "code", err: &CompileError{Output: "main.py: bad"}}, Options{Parallel: 1}).Execute(context.Background(), req)
	if got.Status != StatusCompilationError {
		t.Errorf("status %s", got.Status)
	}
	// An unknown checker language is the request's fault.
	got = New(&splitEngine{ok: e, failCode: "BROKEN", err: ErrUnsupportedLanguage}, Options{Parallel: 1}).Execute(context.Background(), req)
	if got.Status != StatusSandboxError || got.ErrorInfo.Code != CodeValidationError || !strings.Contains(got.ErrorInfo.Message, "Unsupported checker language: cpp") {
		t.Errorf("%s %+v", got.Status, got.ErrorInfo)
	}
}

// splitEngine fails Prepare of one code with err and passes the rest on.
type splitEngine struct {
	ok       Engine
	failCode string
	err      error
}

func (s *splitEngine) Prepare(ctx context.Context, language, code string, opts ProgramOptions) (Program, error) {
	if code == s.failCode {
		return nil, s.err
	}
	return s.ok.Prepare(ctx, language, code, opts)
}

func TestToolValidation(t *testing.T) {
	base := request("python", "code", TestCase{ID: "t", Input: "in"})
	for _, c := range []struct {
		name string
		edit func(*ExecutionRequest)
		want string
	}{
		{"both", func(r *ExecutionRequest) {
			r.Checker = &Tool{Language: "py", Code: "x"}
			r.Interactor = &Tool{Language: "py", Code: "x"}
		}, "A request takes a checker or an interactor, not both"},
		{"checker without language", func(r *ExecutionRequest) { r.Checker = &Tool{Code: "x"} }, "Missing checker language"},
		{"empty interactor", func(r *ExecutionRequest) { r.Interactor = &Tool{Language: "py", Code: " \n"} }, "Empty interactor code"},
		{"huge checker", func(r *ExecutionRequest) {
			r.Checker = &Tool{Language: "py", Code: strings.Repeat("x", MaxCodeBytes+1)}
		}, "Checker code too large"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := base
			c.edit(&r)
			err := r.WithDefaults().Validate()
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
}

// An engine whose programs cannot be invoked cannot run a checker: a
// sandbox error, never a verdict.
func TestCheckerNeedsInvoker(t *testing.T) {
	e := newEngine(map[string]script{"in": prints("x")})
	req := request("python", "code", TestCase{ID: "t", Input: "in"})
	req.Checker = &Tool{Language: "cpp", Code: "plain"}
	got := New(e, Options{Parallel: 1}).Execute(context.Background(), req)
	if got.Status != StatusSandboxError || !strings.Contains(got.ErrorInfo.Message, "cannot run a checker") {
		t.Errorf("%s %+v", got.Status, got.ErrorInfo)
	}
}

// Checker messages are charged to what a result keeps of outputs, so
// that many tests with long messages cannot make it grow past it.
func TestCheckerMessagesChargeTheResultBudget(t *testing.T) {
	e := newEngine(nil)
	e.prog.scripts = map[string]script{}
	var tests []TestCase
	for i := range 10 {
		in := strings.Repeat("i", i+1)
		e.prog.scripts[in] = prints("x")
		tests = append(tests, TestCase{ID: in, Input: in, ExpectedOutput: "x"})
	}
	chk := &fakeTool{fn: exitsWith(1, strings.Repeat("m", 600), "")}
	e.byCode = map[string]Program{"CHK": chk}
	req := request("python", "code", tests...)
	req.Checker = &Tool{Language: "python", Code: "CHK"}
	got := New(e, Options{Parallel: 1, KeptOutputTotalKB: 2}).Execute(context.Background(), req)
	total := 0
	for _, tr := range got.TestResults {
		if tr.Status != TestWrongAnswer {
			t.Fatalf("%+v", tr)
		}
		total += len(deref(tr.CheckerMessage))
	}
	// 10 outputs of 1 byte and 10 messages of 600 bytes against 2048
	// bytes: the messages are cut, each cut one marked.
	if total > 2048+len("…")*10 || total < 1500 {
		t.Errorf("messages keep %d bytes in all", total)
	}
	if last := got.TestResults[9].CheckerMessage; last != nil {
		t.Errorf("the last message survived the spent budget: %d bytes", len(*last))
	}
}
