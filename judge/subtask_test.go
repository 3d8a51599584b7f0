package judge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// subtaskRequest has six tests: a, b and c pass, x, y and z fail.
func subtaskRequest(subtasks ...Subtask) (*fakeEngine, ExecutionRequest) {
	e := newEngine(map[string]script{
		"a": prints("A"), "b": prints("B"), "c": prints("C"),
		"x": prints("wrong"), "y": exits(1, "", "boom"), "z": timesOut,
	})
	var tests []TestCase
	for _, in := range []string{"a", "b", "c", "x", "y", "z"} {
		tests = append(tests, TestCase{ID: in, Input: in, ExpectedOutput: strings.ToUpper(in)})
	}
	req := request("python", "code", tests...)
	req.Subtasks = subtasks
	return e, req
}

func TestSubtaskScores(t *testing.T) {
	e, req := subtaskRequest(
		Subtask{ID: "easy", Points: 20, Tests: []string{"a", "b"}},
		Subtask{ID: "mixed", Points: 30, Tests: []string{"a", "x"}},
		Subtask{ID: "min", Points: 10, Tests: []string{"b", "y"}, Policy: PolicyMin},
		Subtask{ID: "sum", Points: 30, Tests: []string{"a", "b", "x"}, Policy: PolicySum},
		Subtask{ID: "all-of-c", Points: 0.1, Tests: []string{"c"}, Policy: PolicyAll},
		Subtask{ID: "more", Points: 0.2, Tests: []string{"c"}},
	)
	got := newJudge(e, 2).Execute(context.Background(), req)
	if got.Status != StatusSomePassed {
		t.Fatalf("status %s (%s)", got.Status, got.Summary)
	}
	want := []SubtaskResult{
		{ID: "easy", Score: 20, MaxScore: 20, Passed: 2, Total: 2},
		{ID: "mixed", Score: 0, MaxScore: 30, Passed: 1, Total: 2},
		{ID: "min", Score: 0, MaxScore: 10, Passed: 1, Total: 2},
		{ID: "sum", Score: 20, MaxScore: 30, Passed: 2, Total: 3},
		{ID: "all-of-c", Score: 0.1, MaxScore: 0.1, Passed: 1, Total: 1},
		{ID: "more", Score: 0.2, MaxScore: 0.2, Passed: 1, Total: 1},
	}
	if !slices.Equal(got.SubtaskResults, want) {
		t.Errorf("subtasks\n%+v\nwant\n%+v", got.SubtaskResults, want)
	}
	if got.Score == nil || *got.Score != 40.3 || got.MaxScore == nil || *got.MaxScore != 90.3 {
		t.Errorf("score %v of %v, want 40.3 of 90.3", got.Score, got.MaxScore)
	}
	// Every test ran: nothing stops at its first failure.
	if len(e.prog.started) != 6 {
		t.Errorf("%d runs, want 6", len(e.prog.started))
	}
	b, _ := json.Marshal(got)
	if !strings.Contains(string(b), `"score":40.3,"max_score":90.3,"subtask_results":[`) {
		t.Errorf("JSON: %s", b)
	}
}

func TestNoSubtasksNoScore(t *testing.T) {
	e, req := subtaskRequest()
	got := newJudge(e, 2).Execute(context.Background(), req)
	b, _ := json.Marshal(got)
	if got.Score != nil || got.MaxScore != nil || got.SubtaskResults != nil || strings.Contains(string(b), "score") {
		t.Errorf("a request without subtasks has a score: %s", b)
	}
}

func TestCompilationErrorScoresZero(t *testing.T) {
	e, req := subtaskRequest(Subtask{ID: "s", Points: 5, Tests: []string{"a"}})
	e.prepareErr = &CompileError{Output: "main.c:1: error"}
	got := newJudge(e, 1).Execute(context.Background(), req)
	if got.Status != StatusCompilationError || got.Score == nil || *got.Score != 0 || *got.MaxScore != 5 ||
		len(got.SubtaskResults) != 1 || got.SubtaskResults[0].Score != 0 {
		t.Errorf("compilation error: %s, score %v of %v, %+v", got.Status, got.Score, got.MaxScore, got.SubtaskResults)
	}
}

// TestStopAtFirstFailure runs tests one at a time: after x fails, the
// tests only its stopping subtask needs are skipped, and a test another
// subtask still needs runs.
func TestStopAtFirstFailure(t *testing.T) {
	e, req := subtaskRequest(
		Subtask{ID: "stops", Points: 10, Tests: []string{"x", "y", "z", "c"}, StopAtFirstFailure: true},
		Subtask{ID: "needs-c", Points: 5, Tests: []string{"c"}},
		Subtask{ID: "other", Points: 5, Tests: []string{"a", "b"}, StopAtFirstFailure: true},
	)
	// x comes first.
	tc := req.TestCases
	req.TestCases = []TestCase{tc[3], tc[4], tc[5], tc[2], tc[0], tc[1]}
	req.TestCases[2].IsHidden = true
	got := newJudge(e, 1).Execute(context.Background(), req)
	if want := []string{"x", "c", "a", "b"}; !slices.Equal(e.prog.started, want) {
		t.Errorf("ran %v, want %v", e.prog.started, want)
	}
	if want := []TestStatus{TestWrongAnswer, TestSkipped, TestSkipped, TestPassed, TestPassed, TestPassed}; !slices.Equal(statuses(got), want) {
		t.Errorf("statuses %v, want %v", statuses(got), want)
	}
	y, z := got.TestResults[1], got.TestResults[2]
	if !strings.Contains(deref(y.ErrorMessage), "subtask stops had already failed") || y.ExpectedOutput != "Y" {
		t.Errorf("skipped test: %+v", y)
	}
	if z.ExpectedOutput != "" {
		t.Errorf("a skipped hidden test shows its expected output: %+v", z)
	}
	if got.Status != StatusSomePassed || got.ErrorInfo != nil || *got.Score != 10 {
		t.Errorf("status %s, error info %+v, score %v", got.Status, got.ErrorInfo, *got.Score)
	}
}

// TestSkippedAfterTheFailure: the overall status and error_info come
// from the test that failed; a skipped test always comes after the
// failure that skipped it.
func TestSkippedAfterTheFailure(t *testing.T) {
	e, req := subtaskRequest(Subtask{ID: "s", Points: 1, Tests: []string{"z", "x"}, StopAtFirstFailure: true})
	req.TestCases = []TestCase{req.TestCases[5], req.TestCases[3]}
	got := newJudge(e, 1).Execute(context.Background(), req)
	if !slices.Equal(e.prog.started, []string{"z"}) {
		t.Errorf("ran %v", e.prog.started)
	}
	if got.Status != StatusTimeout || got.ErrorInfo == nil || got.ErrorInfo.Code != "TIMEOUT" {
		t.Errorf("status %s, error info %+v, tests %v", got.Status, got.ErrorInfo, statuses(got))
	}
}

func TestSubtaskValidation(t *testing.T) {
	many := make([]Subtask, MaxSubtasks+1)
	for i := range many {
		many[i] = Subtask{ID: strings.Repeat("s", i+1), Tests: []string{"a"}}
	}
	for _, tc := range []struct {
		name     string
		subtasks []Subtask
		dup      bool
		want     string
	}{
		{"no id", []Subtask{{Tests: []string{"a"}}}, false, "Subtask 0 has no id"},
		{"duplicate id", []Subtask{{ID: "s", Tests: []string{"a"}}, {ID: "s", Tests: []string{"b"}}}, false, `Duplicate subtask id "s"`},
		{"negative points", []Subtask{{ID: "s", Points: -1, Tests: []string{"a"}}}, false, "Invalid points"},
		{"huge points", []Subtask{{ID: "s", Points: 2e9, Tests: []string{"a"}}}, false, "Invalid points"},
		{"bad policy", []Subtask{{ID: "s", Tests: []string{"a"}, Policy: "max"}}, false, "Invalid policy"},
		{"no tests", []Subtask{{ID: "s"}}, false, `Subtask "s" has no tests`},
		{"unknown test", []Subtask{{ID: "s", Tests: []string{"q"}}}, false, `names test "q", which is not among the test cases`},
		{"test twice", []Subtask{{ID: "s", Tests: []string{"a", "a"}}}, false, `names test "a" twice`},
		{"too many", many, false, "Too many subtasks"},
		{"long id", []Subtask{{ID: strings.Repeat("s", MaxTestIDBytes+1), Tests: []string{"a"}}}, false, "Subtask id too long"},
		{"duplicate test ids", []Subtask{{ID: "s", Tests: []string{"a"}}}, true, `Duplicate test id "a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, req := subtaskRequest(tc.subtasks...)
			if tc.dup {
				req.TestCases[1].ID = "a"
			}
			got := newJudge(e, 1).Execute(context.Background(), req)
			if got.Status != StatusSandboxError || got.ErrorInfo == nil || !strings.Contains(got.ErrorInfo.Message, tc.want) {
				t.Errorf("%s: %+v", got.Status, got.ErrorInfo)
			}
			if len(e.prog.started) != 0 || e.prepared() != 0 {
				t.Error("a refused request ran")
			}
		})
	}
	// The references of all the subtasks together are bounded: 200
	// subtasks of the same 600 tests are 120000.
	var tests []TestCase
	var ids []string
	for i := range 600 {
		id := fmt.Sprintf("t%d", i)
		tests = append(tests, TestCase{ID: id, Input: "a"})
		ids = append(ids, id)
	}
	req := request("python", "code", tests...)
	for i := range 200 {
		req.Subtasks = append(req.Subtasks, Subtask{ID: strings.Repeat("s", i+1), Tests: ids})
	}
	e := newEngine(nil)
	if got := newJudge(e, 1).Execute(context.Background(), req); got.ErrorInfo == nil ||
		!strings.Contains(got.ErrorInfo.Message, "Too many test references in subtasks") {
		t.Errorf("120000 subtask references accepted: %+v", got.ErrorInfo)
	}
}
