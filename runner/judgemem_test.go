package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/judgetest"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/runner"
)

// TestJudgeMemoryBounded is the attack of one judge request on the
// server's memory: 40 tests, a 1 MiB expected output (which raises the
// per-stream cap to 2 MiB) and a program writing 2 MiB to each stream of
// every test. Every test's full stdout and stderr used to be kept: 160 MiB
// of result. Now outputs are judged as they stream, each test keeps at
// most judge.DefaultKeptOutputKB of each, and the whole result at most
// judge.DefaultKeptOutputTotalKB: the verdicts are the same, judged on the
// full outputs.
func TestJudgeMemoryBounded(t *testing.T) {
	r, _ := newRunner(t, runner.Options{})
	big := strings.Repeat("x", 1<<20)
	tests := []judge.TestCase{
		{ID: "pass", Input: "pass", ExpectedOutput: big},
		{ID: "late", Input: "late", ExpectedOutput: big},
	}
	for i := len(tests); i < 40; i++ {
		mode := "crash"
		if i%2 == 0 {
			mode = "wrong"
		}
		tests = append(tests, judge.TestCase{ID: fmt.Sprintf("%s%d", mode, i), Input: mode, ExpectedOutput: "x", IsHidden: i == 39})
	}
	j := judge.New(r, judge.Options{Parallel: 2})

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := j.Execute(context.Background(), judge.ExecutionRequest{
		Code: judgetest.CFlood, Language: "c", TestCases: tests, TimeoutMS: 20000, TotalTimeoutMS: 300000,
	})
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc

	if len(res.TestResults) != len(tests) {
		t.Fatalf("status %s, %d results: %s", res.Status, len(res.TestResults), res.Summary)
	}
	kept := 0
	for i, tr := range res.TestResults {
		want := judge.TestRuntimeError
		switch {
		case i == 0:
			want = judge.TestPassed
		case i == 1 || strings.HasPrefix(tr.TestID, "wrong"):
			want = judge.TestWrongAnswer
		}
		if tr.Status != want {
			t.Errorf("test %s: %s (%s), want %s", tr.TestID, tr.Status, firstBytes(tr.ErrorMessage), want)
		}
		n := len(tr.ActualOutput)
		if tr.ErrorMessage != nil {
			n += len(*tr.ErrorMessage)
		}
		kept += n
		if n > 2*judge.DefaultKeptOutputKB<<10 {
			t.Errorf("test %s keeps %d bytes of output", tr.TestID, n)
		}
		// Every stream was longer than what a test keeps, but a hidden
		// test says nothing of its output.
		if tr.Truncated == (i == len(tests)-1) {
			t.Errorf("test %s: truncated %v", tr.TestID, tr.Truncated)
		}
	}
	if hidden := res.TestResults[len(tests)-1]; hidden.ActualOutput != "" || strings.Contains(firstBytes(hidden.ErrorMessage), "xxxx") {
		t.Errorf("hidden test shows its output: %q, %q", firstBytes(&hidden.ActualOutput), firstBytes(hidden.ErrorMessage))
	}
	body, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	// The expected outputs are echoed (2 MiB); what the program wrote is
	// bounded by the budget. Tests past the budget still say how they
	// ended ("Exit code: 1").
	const budget = judge.DefaultKeptOutputTotalKB<<10 + 40*len("Exit code: 1")
	t.Logf("kept %d bytes of output, %d bytes of JSON, %d MiB allocated", kept, len(body), allocated>>20)
	if kept > budget {
		t.Errorf("the result keeps %d bytes of the program's output, more than the %d budget", kept, budget)
	}
	if len(body) > 2<<20+budget+64<<10 {
		t.Errorf("the result is %d bytes of JSON", len(body))
	}
	// Judging 160 MiB of output used to allocate more than twice that;
	// streamed, it allocates a few MiB beyond the request itself.
	if allocated > 64<<20 {
		t.Errorf("judging allocated %d MiB", allocated>>20)
	}
}

func firstBytes(s *string) string {
	if s == nil {
		return ""
	}
	if len(*s) > 60 {
		return (*s)[:60] + "..."
	}
	return *s
}
