package judge

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

func newJudge(e Engine, parallel int) *Judge {
	return New(e, Options{Parallel: parallel, Now: fakeClock(42 * time.Millisecond)})
}

func request(language, code string, tests ...TestCase) ExecutionRequest {
	return ExecutionRequest{
		RequestID:      "req-1",
		Code:           code,
		Language:       language,
		TestCases:      tests,
		TimeoutMS:      1000,
		TotalTimeoutMS: 30000,
	}
}

func statuses(r ExecutionResult) []TestStatus {
	var s []TestStatus
	for _, t := range r.TestResults {
		s = append(s, t.Status)
	}
	return s
}

func messages(r ExecutionResult) []string {
	var s []string
	for _, t := range r.TestResults {
		s = append(s, deref(t.ErrorMessage))
	}
	return s
}

const twoSum = `
def two_sum(nums, target):
    seen = {}
    for i, num in enumerate(nums):
        complement = target - num
        if complement in seen:
            return [seen[complement], i]
        seen[num] = i
    return []

nums = list(map(int, input().split()))
target = int(input())
result = two_sum(nums, target)
print(" ".join(map(str, result)))
`

func twoSumRequest() ExecutionRequest {
	r := request("python", twoSum,
		TestCase{ID: "test_1", Input: "2 7 11 15\n9", ExpectedOutput: "0 1"},
		TestCase{ID: "test_2", Input: "3 2 4\n6", ExpectedOutput: "1 2"},
		TestCase{ID: "test_3", Input: "3 3\n6", ExpectedOutput: "0 1"},
	)
	r.RequestID, r.TimeoutMS, r.TotalTimeoutMS = "test-001", 5000, 30000
	return r
}

func twoSumEngine() *fakeEngine {
	return newEngine(map[string]script{
		"2 7 11 15\n9": prints("0 1\n"),
		"3 2 4\n6":     prints("1 2\n"),
		"3 3\n6":       prints("0 1\n"),
	})
}

// TestSpecExamples runs the judge's documented usage example and unit
// tests against the fake engine, which answers as the real programs would.
func TestSpecExamples(t *testing.T) {
	zeroDiv := "Traceback (most recent call last):\n  File \"solution.py\", line 1, in <module>\nZeroDivisionError: division by zero\n"
	cppCode := "#include <iostream>\nint main() {\n    int x;\n    std::cin >> x;\n    std::cout << x * 2 << std::endl;\n    return 0;\n}\n"
	cppDiag := "solution.cpp: In function 'int main()':\nsolution.cpp:4:5: error: 'cout' was not declared in this scope\n"

	tests := []struct {
		name        string
		req         ExecutionRequest
		engine      *fakeEngine
		wantStatus  ExecutionStatus
		wantSummary string
		wantTests   []TestStatus
		wantInfo    *ExecutionError
		wantCompile *string
	}{
		{
			name:        "two sum accepted",
			req:         twoSumRequest(),
			engine:      twoSumEngine(),
			wantStatus:  StatusAllPassed,
			wantSummary: "All 3 test cases passed",
			wantTests:   []TestStatus{TestPassed, TestPassed, TestPassed},
		},
		{
			name: "simple python execution",
			req: request("python", "print(int(input()) * 2)",
				TestCase{ID: "t1", Input: "5", ExpectedOutput: "10"},
				TestCase{ID: "t2", Input: "0", ExpectedOutput: "0"}),
			engine:      newEngine(map[string]script{"5": prints("10\n"), "0": prints("0\n")}),
			wantStatus:  StatusAllPassed,
			wantSummary: "All 2 test cases passed",
			wantTests:   []TestStatus{TestPassed, TestPassed},
		},
		{
			name: "timeout handling",
			req: func() ExecutionRequest {
				r := request("python", "import time; time.sleep(10); print('done')",
					TestCase{ID: "t1", Input: "", ExpectedOutput: "done"})
				r.TimeoutMS, r.TotalTimeoutMS = 1000, 5000
				return r
			}(),
			engine:      newEngine(map[string]script{"": timesOut}),
			wantStatus:  StatusTimeout,
			wantSummary: "0/1 test cases passed",
			wantTests:   []TestStatus{TestTimeout},
			wantInfo:    &ExecutionError{Code: "TIMEOUT", Message: "Test execution timed out", Stage: StageExecution},
		},
		{
			name: "runtime error",
			req: request("python", "x = 1/0",
				TestCase{ID: "t1", Input: "", ExpectedOutput: ""}),
			engine:      newEngine(map[string]script{"": exits(1, "", zeroDiv)}),
			wantStatus:  StatusRuntimeError,
			wantSummary: "0/1 passed. Runtime error: " + strings.TrimSpace(zeroDiv),
			wantTests:   []TestStatus{TestRuntimeError},
			wantInfo:    &ExecutionError{Code: "RUNTIME_ERROR", Message: strings.TrimSpace(zeroDiv), Stage: StageExecution},
		},
		{
			name:        "cpp compilation",
			req:         request("cpp", cppCode, TestCase{ID: "t1", Input: "5", ExpectedOutput: "10"}),
			engine:      newEngine(map[string]script{"5": prints("10\n")}),
			wantStatus:  StatusAllPassed,
			wantSummary: "All 1 test cases passed",
			wantTests:   []TestStatus{TestPassed},
		},
		{
			name: "cpp compilation error",
			req: request("cpp", strings.Replace(cppCode, "std::cout", "cout", 1),
				TestCase{ID: "t1", Input: "5", ExpectedOutput: "10"}),
			engine:      &fakeEngine{prepareErr: &CompileError{Output: cppDiag}},
			wantStatus:  StatusCompilationError,
			wantSummary: "Compilation failed: " + cppDiag,
			wantInfo:    &ExecutionError{Code: "COMPILATION_ERROR", Message: cppDiag, Stage: StageCompilation, Details: strp("")},
			wantCompile: strp(cppDiag),
		},
		{
			name:        "compilation timed out",
			req:         request("rust", "fn main() {}", TestCase{ID: "t1"}),
			engine:      &fakeEngine{prepareErr: &CompileError{}},
			wantStatus:  StatusCompilationError,
			wantSummary: "Compilation failed: Compilation failed",
			wantInfo:    &ExecutionError{Code: "COMPILATION_ERROR", Message: "Compilation failed", Stage: StageCompilation, Details: strp("")},
			wantCompile: strp("Compilation failed"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newJudge(tt.engine, 4).Execute(context.Background(), tt.req)
			if got.RequestID != tt.req.RequestID {
				t.Errorf("request_id = %q, want %q", got.RequestID, tt.req.RequestID)
			}
			if got.Status != tt.wantStatus || got.Summary != tt.wantSummary {
				t.Errorf("status, summary = %q, %q; want %q, %q", got.Status, got.Summary, tt.wantStatus, tt.wantSummary)
			}
			if !slices.Equal(statuses(got), tt.wantTests) {
				t.Errorf("test statuses = %v, want %v", statuses(got), tt.wantTests)
			}
			if got.TestResults == nil {
				t.Error("test_results is nil; it must encode as []")
			}
			checkInfo(t, got.ErrorInfo, tt.wantInfo)
			if deref(got.CompilationOutput) != deref(tt.wantCompile) || (got.CompilationOutput == nil) != (tt.wantCompile == nil) {
				t.Errorf("compilation_output = %v, want %v", got.CompilationOutput, tt.wantCompile)
			}
			if got.TotalTimeMS != 42 {
				t.Errorf("total_time_ms = %d, want 42 (one tick of the fake clock)", got.TotalTimeMS)
			}
		})
	}
}

func checkInfo(t *testing.T, got, want *ExecutionError) {
	t.Helper()
	if (got == nil) != (want == nil) {
		t.Fatalf("error_info = %+v, want %+v", got, want)
	}
	if got == nil {
		return
	}
	if got.Code != want.Code || got.Message != want.Message || got.Stage != want.Stage ||
		(got.Details == nil) != (want.Details == nil) || deref(got.Details) != deref(want.Details) {
		t.Errorf("error_info = {%s %q %s %v}, want {%s %q %s %v}",
			got.Code, got.Message, got.Stage, ptrString(got.Details), want.Code, want.Message, want.Stage, ptrString(want.Details))
	}
}

func ptrString(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return "\"" + *s + "\""
}

// TestStatusPaths covers every overall status and the precedence rules of
// the overall result.
func TestStatusPaths(t *testing.T) {
	big := strings.Repeat("x", 600)
	tests := []struct {
		name        string
		language    string
		scripts     map[string]script
		wantStatus  ExecutionStatus
		wantSummary string
		wantTests   []TestStatus
		wantMsgs    []string
		wantInfo    *ExecutionError
	}{
		{
			name:        "some passed",
			scripts:     map[string]script{"a": prints("A"), "b": prints("nope")},
			wantStatus:  StatusSomePassed,
			wantSummary: "1/2 test cases passed",
			wantTests:   []TestStatus{TestPassed, TestWrongAnswer},
			wantMsgs:    []string{"", ""},
		},
		{
			name:        "some passed hides a runtime error",
			scripts:     map[string]script{"a": prints("A"), "b": exits(1, "", "boom")},
			wantStatus:  StatusSomePassed,
			wantSummary: "1/2 test cases passed",
			wantTests:   []TestStatus{TestPassed, TestRuntimeError},
			wantMsgs:    []string{"", "boom"},
		},
		{
			name:        "all failed on wrong answers",
			scripts:     map[string]script{"a": prints("1"), "b": prints(big)},
			wantStatus:  StatusAllFailed,
			wantSummary: "0/2 test cases passed",
			wantTests:   []TestStatus{TestWrongAnswer, TestWrongAnswer},
			wantMsgs:    []string{"", ""},
			wantInfo:    &ExecutionError{Code: "WRONG_ANSWER", Message: "Test ta failed", Stage: StageExecution, Details: strp("1")},
		},
		{
			name:        "details quote 500 characters",
			scripts:     map[string]script{"a": prints(big), "b": prints("2")},
			wantStatus:  StatusAllFailed,
			wantSummary: "0/2 test cases passed",
			wantTests:   []TestStatus{TestWrongAnswer, TestWrongAnswer},
			wantMsgs:    []string{"", ""},
			wantInfo:    &ExecutionError{Code: "WRONG_ANSWER", Message: "Test ta failed", Stage: StageExecution, Details: strp(big[:500])},
		},
		{
			name:        "timeout wins over runtime error, info names the first failure",
			scripts:     map[string]script{"a": exits(2, "", "bad"), "b": timesOut},
			wantStatus:  StatusTimeout,
			wantSummary: "0/2 test cases passed",
			wantTests:   []TestStatus{TestRuntimeError, TestTimeout},
			wantMsgs:    []string{"bad", "Test execution timed out"},
			wantInfo:    &ExecutionError{Code: "RUNTIME_ERROR", Message: "bad", Stage: StageExecution},
		},
		{
			name:        "memory wins over runtime error",
			scripts:     map[string]script{"a": exits(2, "", "bad"), "b": returns(result(sandbox.StatusMemoryLimit, "", ""))},
			wantStatus:  StatusMemoryExceeded,
			wantSummary: "0/2 test cases passed",
			wantTests:   []TestStatus{TestRuntimeError, TestMemoryExceeded},
			wantMsgs:    []string{"bad", "Memory limit exceeded"},
			wantInfo:    &ExecutionError{Code: "RUNTIME_ERROR", Message: "bad", Stage: StageExecution},
		},
		{
			name:        "timeout wins over memory",
			scripts:     map[string]script{"a": returns(result(sandbox.StatusMemoryLimit, "", "")), "b": timesOut},
			wantStatus:  StatusTimeout,
			wantSummary: "0/2 test cases passed",
			wantTests:   []TestStatus{TestMemoryExceeded, TestTimeout},
			wantMsgs:    []string{"Memory limit exceeded", "Test execution timed out"},
			wantInfo:    &ExecutionError{Code: "MEMORY_EXCEEDED", Message: "Memory limit exceeded", Stage: StageExecution},
		},
		{
			name:        "runtime error wins over wrong answer, summary names the first runtime error",
			scripts:     map[string]script{"a": prints("1"), "b": killedBy(syscall.SIGSEGV)},
			wantStatus:  StatusRuntimeError,
			wantSummary: "0/2 passed. Runtime error: Killed by signal 11 (segmentation fault)",
			wantTests:   []TestStatus{TestWrongAnswer, TestRuntimeError},
			wantMsgs:    []string{"", "Killed by signal 11 (segmentation fault)"},
			wantInfo:    &ExecutionError{Code: "WRONG_ANSWER", Message: "Test ta failed", Stage: StageExecution, Details: strp("1")},
		},
		{
			name:        "exit code without stderr",
			scripts:     map[string]script{"a": exits(3, "A", "  \n"), "b": prints("B")},
			wantStatus:  StatusSomePassed,
			wantSummary: "1/2 test cases passed",
			wantTests:   []TestStatus{TestRuntimeError, TestPassed},
			wantMsgs:    []string{"Exit code: 3", ""},
		},
		{
			name:        "output limit is a wrong answer",
			scripts:     map[string]script{"a": returns(result(sandbox.StatusOutputLimit, "AAAA", "")), "b": returns(result(sandbox.StatusOutputLimit, "", ""))},
			wantStatus:  StatusAllFailed,
			wantSummary: "0/2 test cases passed",
			wantTests:   []TestStatus{TestWrongAnswer, TestWrongAnswer},
			wantMsgs:    []string{"output limit exceeded", "output limit exceeded"},
			wantInfo:    &ExecutionError{Code: "WRONG_ANSWER", Message: "output limit exceeded", Stage: StageExecution, Details: strp("AAAA")},
		},
		{
			name:     "java OutOfMemoryError is memory exceeded",
			language: "java",
			scripts: map[string]script{
				"a": exits(1, "", "Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space"),
				"b": exits(1, "", "Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space"),
			},
			wantStatus:  StatusMemoryExceeded,
			wantSummary: "0/2 test cases passed",
			wantTests:   []TestStatus{TestMemoryExceeded, TestMemoryExceeded},
			wantMsgs:    []string{"Memory limit exceeded", "Memory limit exceeded"},
			wantInfo:    &ExecutionError{Code: "MEMORY_EXCEEDED", Message: "Memory limit exceeded", Stage: StageExecution},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lang := tt.language
			if lang == "" {
				lang = "python"
			}
			req := request(lang, "code",
				TestCase{ID: "ta", Input: "a", ExpectedOutput: "A"},
				TestCase{ID: "tb", Input: "b", ExpectedOutput: "B"})
			got := newJudge(newEngine(tt.scripts), 2).Execute(context.Background(), req)
			if got.Status != tt.wantStatus || got.Summary != tt.wantSummary {
				t.Errorf("status, summary = %q, %q; want %q, %q", got.Status, got.Summary, tt.wantStatus, tt.wantSummary)
			}
			if !slices.Equal(statuses(got), tt.wantTests) {
				t.Errorf("test statuses = %v, want %v", statuses(got), tt.wantTests)
			}
			if !slices.Equal(messages(got), tt.wantMsgs) {
				t.Errorf("error messages = %q, want %q", messages(got), tt.wantMsgs)
			}
			checkInfo(t, got.ErrorInfo, tt.wantInfo)
		})
	}
}

func TestVerdict(t *testing.T) {
	withOOM := func(s sandbox.Status) *sandbox.Result {
		r := result(s, "A\n", "")
		r.MemoryExceeded = true
		return r
	}
	javaOOM := result(sandbox.StatusNonzeroExit, "", "Exception in thread \"main\" java.lang.OutOfMemoryError")
	javaOOM.ExitCode = 1
	tests := []struct {
		name     string
		language string
		res      *sandbox.Result
		want     TestStatus
		wantMsg  string
		wantErr  bool
	}{
		{name: "ok match", res: result(sandbox.StatusOK, "A  \r\n\n", ""), want: TestPassed},
		{name: "ok mismatch", res: result(sandbox.StatusOK, "B", ""), want: TestWrongAnswer},
		{name: "ok with stderr still compares", res: result(sandbox.StatusOK, "A", "warning"), want: TestPassed},
		{name: "output limit", res: result(sandbox.StatusOutputLimit, "A", ""), want: TestWrongAnswer, wantMsg: "output limit exceeded"},
		{name: "time limit", res: result(sandbox.StatusTimeLimit, "A", ""), want: TestTimeout, wantMsg: "Test execution timed out"},
		{name: "time limit after an OOM kill", res: withOOM(sandbox.StatusTimeLimit), want: TestTimeout, wantMsg: "Test execution timed out"},
		{name: "memory limit", res: result(sandbox.StatusMemoryLimit, "", ""), want: TestMemoryExceeded, wantMsg: "Memory limit exceeded"},
		{name: "OOM kill of a child, clean exit", res: withOOM(sandbox.StatusOK), want: TestMemoryExceeded, wantMsg: "Memory limit exceeded"},
		{name: "OOM kill of a child, nonzero exit", res: withOOM(sandbox.StatusNonzeroExit), want: TestMemoryExceeded, wantMsg: "Memory limit exceeded"},
		{name: "java OOM", language: "java", res: javaOOM, want: TestMemoryExceeded, wantMsg: "Memory limit exceeded"},
		{name: "OOM text from python is a runtime error", language: "python", res: javaOOM, want: TestRuntimeError, wantMsg: "Exception in thread \"main\" java.lang.OutOfMemoryError"},
		{name: "nonzero exit with stderr", res: func() *sandbox.Result {
			r := result(sandbox.StatusNonzeroExit, "", "\n oops \n")
			r.ExitCode = 2
			return r
		}(), want: TestRuntimeError, wantMsg: "oops"},
		{name: "signal without stderr", res: func() *sandbox.Result {
			r := result(sandbox.StatusSignaled, "", "")
			r.ExitCode, r.Signal = -1, syscall.SIGABRT
			return r
		}(), want: TestRuntimeError, wantMsg: "Killed by signal 6 (aborted)"},
		{name: "unknown status", res: result("exploded", "", ""), wantErr: true},
	}
	cmp, _ := ParseCompare("")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc := TestCase{ID: "t", ExpectedOutput: "A"}
			out := newOutput(cmp, tc)
			_, _ = out.stdout.Write(tt.res.Stdout)
			_, _ = out.stderr.Write(tt.res.Stderr)
			got, err := verdict(tc, tt.language, tt.res, out, nil)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if got.Status != tt.want || deref(got.ErrorMessage) != tt.wantMsg {
				t.Errorf("verdict = %s %q, want %s %q", got.Status, deref(got.ErrorMessage), tt.want, tt.wantMsg)
			}
			if tt.wantMsg == "" && got.ErrorMessage != nil {
				t.Errorf("error_message = %q, want null", *got.ErrorMessage)
			}
			if got.ExecutionTimeMS != 15 || got.MemoryUsedKB != 8192 {
				t.Errorf("time, memory = %d ms, %d KB; want 15 ms, 8192 KB", got.ExecutionTimeMS, got.MemoryUsedKB)
			}
			if got.ActualOutput != string(tt.res.Stdout) || got.ExpectedOutput != "A" {
				t.Errorf("outputs = %q, %q", got.ActualOutput, got.ExpectedOutput)
			}
		})
	}
}

// TestTotalTimeout: tests still running when total_timeout_ms runs out, and
// tests not started yet, are timeouts with "Total timeout exceeded"; tests
// that finished keep their verdict.
func TestTotalTimeout(t *testing.T) {
	for _, tt := range []struct {
		name     string
		parallel int
		blocker  script
	}{
		{"sequential, backend returns an error", 1, blocks},
		{"sequential, backend returns a kill", 1, blocksThenKilled},
		{"parallel, backend returns an error", 2, blocks},
		{"parallel, backend returns a kill", 2, blocksThenKilled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(map[string]script{"1": prints("1"), "2": tt.blocker, "3": tt.blocker, "4": prints("4")})
			req := request("python", "code",
				TestCase{ID: "t1", Input: "1", ExpectedOutput: "1"},
				TestCase{ID: "t2", Input: "2", ExpectedOutput: "2"},
				TestCase{ID: "t3", Input: "3", ExpectedOutput: "3", IsHidden: true},
				TestCase{ID: "t4", Input: "4", ExpectedOutput: "4"})
			req.TotalTimeoutMS = 200
			got := newJudge(e, tt.parallel).Execute(context.Background(), req)

			if got.Status != StatusSomePassed || got.Summary != "1/4 test cases passed" {
				t.Errorf("status, summary = %q, %q", got.Status, got.Summary)
			}
			want := []TestStatus{TestPassed, TestTimeout, TestTimeout, TestTimeout}
			if !slices.Equal(statuses(got), want) {
				t.Fatalf("statuses = %v, want %v", statuses(got), want)
			}
			for _, r := range got.TestResults[1:] {
				if deref(r.ErrorMessage) != "Total timeout exceeded" || r.ActualOutput != "" {
					t.Errorf("%s: message %q, output %q; want Total timeout exceeded and no output", r.TestID, deref(r.ErrorMessage), r.ActualOutput)
				}
			}
			if got.TestResults[2].ExpectedOutput != "" {
				t.Errorf("hidden t3 echoes its expected output %q", got.TestResults[2].ExpectedOutput)
			}
			if got.TestResults[3].ExpectedOutput != "4" {
				t.Errorf("t4 expected_output = %q, want 4", got.TestResults[3].ExpectedOutput)
			}
			if slices.Contains(e.prog.started, "4") {
				t.Error("t4 was started after the total timeout")
			}
			if e.prog.closed != 1 {
				t.Errorf("program closed %d times, want 1", e.prog.closed)
			}
		})
	}
}

func TestPerTestTimeout(t *testing.T) {
	e := newEngine(map[string]script{"default": prints(""), "bigger": prints(""), "smaller": prints("")})
	req := request("python", "code",
		TestCase{ID: "default", Input: "default"},
		TestCase{ID: "bigger", Input: "bigger", TimeoutMS: 5000},
		TestCase{ID: "smaller", Input: "smaller", TimeoutMS: 200})
	req.TimeoutMS, req.TotalTimeoutMS = 1000, 2000
	got := newJudge(e, 1).Execute(context.Background(), req)
	if got.Status != StatusAllPassed {
		t.Fatalf("status = %s (%s)", got.Status, got.Summary)
	}
	for in, want := range map[string]time.Duration{"default": time.Second, "bigger": 5 * time.Second, "smaller": 200 * time.Millisecond} {
		l := e.prog.limitsFor(in)
		if l.WallTime != want || l.CPUTime != want {
			t.Errorf("%s: WallTime, CPUTime = %v, %v; want %v", in, l.WallTime, l.CPUTime, want)
		}
	}
}

func TestLimits(t *testing.T) {
	tests := []struct {
		name       string
		opts       Options
		expected   string
		memoryMB   int
		cpus       float64
		wantOutput int64
		wantMemory int64
		wantCPUs   float64
	}{
		{name: "defaults", expected: "x", wantOutput: 64 << 10, wantMemory: 256 << 20, wantCPUs: 1},
		{name: "configured cap", opts: Options{MaxOutputKB: 8}, expected: "x", memoryMB: 16, cpus: 0.5, wantOutput: 8 << 10, wantMemory: 16 << 20, wantCPUs: 0.5},
		{name: "twice the largest expected output", opts: Options{MaxOutputKB: 8}, expected: strings.Repeat("y", 100<<10), memoryMB: 1024, cpus: 2, wantOutput: 200 << 10, wantMemory: 1 << 30, wantCPUs: 2},
		{name: "raised no higher than the ceiling", opts: Options{MaxOutputKB: 8, MaxOutputCeilingKB: 150}, expected: strings.Repeat("y", 100<<10), wantOutput: 150 << 10, wantMemory: 256 << 20, wantCPUs: 1},
		{name: "a ceiling below the cap does not lower it", opts: Options{MaxOutputKB: 64, MaxOutputCeilingKB: 16}, expected: strings.Repeat("y", 10<<10), wantOutput: 64 << 10, wantMemory: 256 << 20, wantCPUs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(map[string]script{"a": prints(""), "b": prints("")})
			req := request("python", "code",
				TestCase{ID: "a", Input: "a", ExpectedOutput: "a"},
				TestCase{ID: "b", Input: "b", ExpectedOutput: tt.expected})
			req.MemoryLimitMB, req.CPULimit = tt.memoryMB, tt.cpus
			tt.opts.Parallel = 2
			New(e, tt.opts).Execute(context.Background(), req)
			for _, in := range []string{"a", "b"} {
				want := sandbox.Limits{
					WallTime:    time.Second,
					CPUTime:     time.Second,
					Memory:      tt.wantMemory,
					CPUs:        tt.wantCPUs,
					OutputBytes: tt.wantOutput,
				}
				if got := e.prog.limitsFor(in); got != want {
					t.Errorf("limits for %s = %+v, want %+v", in, got, want)
				}
			}
		})
	}
}

// TestParallelOrder: runs finish in the reverse of the request order, and
// the results still keep the request order.
func TestParallelOrder(t *testing.T) {
	const n = 5
	scripts := map[string]script{}
	gates := make([]chan struct{}, n+1)
	for i := range gates {
		gates[i] = make(chan struct{})
	}
	close(gates[n])
	// The order is recorded inside the script, before the run opens the
	// next gate: recorded after Run returned, the next run could overtake it.
	var mu sync.Mutex
	var finished []string
	var tests []TestCase
	for i := range n {
		in := string(rune('a' + i))
		record := func(ctx context.Context, l sandbox.Limits) (*sandbox.Result, error) {
			mu.Lock()
			finished = append(finished, in)
			mu.Unlock()
			return prints(strings.ToUpper(in))(ctx, l)
		}
		// Run i may finish only once run i+1 has finished.
		scripts[in] = after(gates[i+1], gates[i], record)
		tests = append(tests, TestCase{ID: "t" + in, Input: in, ExpectedOutput: strings.ToUpper(in)})
	}
	e := newEngine(scripts)
	got := newJudge(e, n).Execute(context.Background(), request("python", "code", tests...))
	if got.Status != StatusAllPassed {
		t.Fatalf("status = %s (%s)", got.Status, got.Summary)
	}
	if want := []string{"e", "d", "c", "b", "a"}; !slices.Equal(finished, want) {
		t.Fatalf("runs finished in order %v, want %v", finished, want)
	}
	for i, r := range got.TestResults {
		if r.TestID != tests[i].ID || r.ActualOutput != tests[i].ExpectedOutput {
			t.Errorf("result %d = %s %q, want %s", i, r.TestID, r.ActualOutput, tests[i].ID)
		}
	}
}

func TestSequentialStartsInOrder(t *testing.T) {
	e := newEngine(map[string]script{"a": prints(""), "b": prints(""), "c": prints("")})
	newJudge(e, 1).Execute(context.Background(), request("python", "code",
		TestCase{ID: "1", Input: "c"}, TestCase{ID: "2", Input: "a"}, TestCase{ID: "3", Input: "b"}))
	if want := []string{"c", "a", "b"}; !slices.Equal(e.prog.started, want) {
		t.Errorf("started %v, want %v", e.prog.started, want)
	}
}

func TestHiddenRedaction(t *testing.T) {
	e := newEngine(map[string]script{
		"secret-1": prints("wrong secret answer"),
		"secret-2": exits(1, "", "I read secret-2 from stdin"),
		"secret-3": prints("right"),
		"open":     prints("shown"),
	})
	req := request("python", "code",
		TestCase{ID: "h1", Input: "secret-1", ExpectedOutput: "secret expected", IsHidden: true},
		TestCase{ID: "h2", Input: "secret-2", ExpectedOutput: "x", IsHidden: true},
		TestCase{ID: "h3", Input: "secret-3", ExpectedOutput: "right", IsHidden: true},
		TestCase{ID: "open", Input: "open", ExpectedOutput: "other"})
	got := newJudge(e, 2).Execute(context.Background(), req)

	if got.Status != StatusSomePassed {
		t.Fatalf("status = %s", got.Status)
	}
	wantStatus := []TestStatus{TestWrongAnswer, TestRuntimeError, TestPassed, TestWrongAnswer}
	if !slices.Equal(statuses(got), wantStatus) {
		t.Errorf("statuses = %v, want %v", statuses(got), wantStatus)
	}
	for _, r := range got.TestResults[:3] {
		if r.ActualOutput != "" || r.ExpectedOutput != "" {
			t.Errorf("hidden %s shows outputs %q / %q", r.TestID, r.ActualOutput, r.ExpectedOutput)
		}
		if r.ExecutionTimeMS != 15 || r.MemoryUsedKB != 8192 {
			t.Errorf("hidden %s hides time or memory: %d ms, %d KB", r.TestID, r.ExecutionTimeMS, r.MemoryUsedKB)
		}
	}
	if msg := deref(got.TestResults[1].ErrorMessage); msg != "Exit code: 1" {
		t.Errorf("hidden runtime error message = %q, want it not to quote stderr", msg)
	}
	if open := got.TestResults[3]; open.ActualOutput != "shown" || open.ExpectedOutput != "other" {
		t.Errorf("visible test redacted: %q / %q", open.ActualOutput, open.ExpectedOutput)
	}

	// A hidden first failure gives error_info.details "" (not null) and a
	// summary that does not quote stderr.
	e = newEngine(map[string]script{"s": exits(1, "out", "secret in stderr")})
	got = newJudge(e, 1).Execute(context.Background(), request("python", "code",
		TestCase{ID: "h", Input: "s", ExpectedOutput: "exp", IsHidden: true}))
	checkInfo(t, got.ErrorInfo, &ExecutionError{Code: "RUNTIME_ERROR", Message: "Exit code: 1", Stage: StageExecution, Details: strp("")})
	if strings.Contains(got.Summary, "secret") {
		t.Errorf("summary %q quotes a hidden test's stderr", got.Summary)
	}
}

func TestInfrastructureFailures(t *testing.T) {
	boom := errors.New("cgroup vanished")
	tests := []struct {
		name      string
		engine    func() *fakeEngine
		ctx       func(t *testing.T) context.Context
		wantStage string
		wantMsg   string
	}{
		{
			name:      "prepare fails",
			engine:    func() *fakeEngine { return &fakeEngine{prepareErr: boom} },
			wantStage: StageCompilation,
			wantMsg:   "unable to prepare the program: cgroup vanished",
		},
		{
			name:      "prepare returns no program",
			engine:    func() *fakeEngine { return &fakeEngine{} },
			wantStage: StageCompilation,
			wantMsg:   "unable to prepare the program",
		},
		{
			name: "prepare panics",
			engine: func() *fakeEngine {
				return &fakeEngine{onPrepare: func() { panic("compiler on fire") }}
			},
			wantStage: StageCompilation,
			wantMsg:   "internal error",
		},
		{
			name:      "run fails",
			engine:    func() *fakeEngine { return newEngine(map[string]script{"a": prints("A"), "b": failsWith(boom)}) },
			wantStage: StageExecution,
			wantMsg:   "test tb: cgroup vanished",
		},
		{
			name: "run fails while another runs: the other is cancelled",
			engine: func() *fakeEngine {
				return newEngine(map[string]script{"a": blocks, "b": failsWith(boom)})
			},
			wantStage: StageExecution,
			wantMsg:   "test tb: cgroup vanished",
		},
		{
			name: "run panics",
			engine: func() *fakeEngine {
				return newEngine(map[string]script{"a": prints("A"), "b": func(context.Context, sandbox.Limits) (*sandbox.Result, error) { panic("oops") }})
			},
			wantStage: StageExecution,
			wantMsg:   "internal error while running test tb",
		},
		{
			name: "run returns neither result nor error",
			engine: func() *fakeEngine {
				return newEngine(map[string]script{"a": prints("A"), "b": failsWith(nil)})
			},
			wantStage: StageExecution,
			wantMsg:   "test tb: the engine returned no result",
		},
		{
			name: "unknown sandbox status",
			engine: func() *fakeEngine {
				return newEngine(map[string]script{"a": prints("A"), "b": returns(result("exploded", "", ""))})
			},
			wantStage: StageExecution,
			wantMsg:   `test tb: sandbox returned unknown status "exploded"`,
		},
		{
			name:   "caller cancels",
			engine: func() *fakeEngine { return newEngine(map[string]script{"a": blocks, "b": blocks}) },
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				t.Cleanup(cancel)
				return ctx
			},
			wantStage: StageExecution,
			wantMsg:   "judging stopped: context deadline exceeded",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.ctx != nil {
				ctx = tt.ctx(t)
			}
			var logs bytes.Buffer
			e := tt.engine()
			j := New(e, Options{Parallel: 2, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			got := j.Execute(ctx, request("python", "code",
				TestCase{ID: "ta", Input: "a", ExpectedOutput: "A"},
				TestCase{ID: "tb", Input: "b", ExpectedOutput: "B"}))
			if got.Status != StatusSandboxError || len(got.TestResults) != 0 || got.TestResults == nil {
				t.Errorf("status = %s with %d test results, want sandbox_error with []", got.Status, len(got.TestResults))
			}
			checkInfo(t, got.ErrorInfo, &ExecutionError{Code: CodeSandboxError, Message: tt.wantMsg, Stage: tt.wantStage})
			if got.Summary != "Sandbox error: "+tt.wantMsg {
				t.Errorf("summary = %q", got.Summary)
			}
			if !strings.Contains(logs.String(), `"request_id":"req-1"`) {
				t.Errorf("failure not logged with the request id: %s", logs.String())
			}
			if e.prog != nil && e.prog.closed != 1 {
				t.Errorf("program closed %d times, want 1", e.prog.closed)
			}
		})
	}
}

func TestUnsupportedLanguage(t *testing.T) {
	e := newEngine(nil)
	e.known = []string{"python"}
	got := newJudge(e, 1).Execute(context.Background(), request("cobol", "DISPLAY 'HI'.", TestCase{ID: "t1"}))
	if got.Status != StatusSandboxError || got.Summary != "Unsupported language: cobol" {
		t.Errorf("status, summary = %s, %q", got.Status, got.Summary)
	}
	checkInfo(t, got.ErrorInfo, &ExecutionError{Code: CodeUnsupportedLanguage, Message: "Language cobol is not supported", Stage: StageValidation})
	if len(got.TestResults) != 0 || got.TestResults == nil {
		t.Errorf("test_results = %v, want []", got.TestResults)
	}
}

func TestCloseErrorIsLogged(t *testing.T) {
	e := newEngine(map[string]script{"a": prints("A")})
	e.prog.closeErr = errors.New("rm failed")
	var logs bytes.Buffer
	j := New(e, Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	got := j.Execute(context.Background(), request("python", "code", TestCase{ID: "t", Input: "a", ExpectedOutput: "A"}))
	if got.Status != StatusAllPassed {
		t.Errorf("status = %s; a Close failure must not change the verdict", got.Status)
	}
	if !strings.Contains(logs.String(), "rm failed") {
		t.Errorf("Close error not logged: %s", logs.String())
	}
}

func TestSanitizeInExecute(t *testing.T) {
	e := newEngine(map[string]script{"a": prints("A")})
	var logs bytes.Buffer
	j := New(e, Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	got := j.Execute(context.Background(), request("python", "import os\x00\nprint(eval('1'))", TestCase{ID: "t", Input: "a", ExpectedOutput: "A"}))
	if got.Status != StatusAllPassed {
		t.Fatalf("status = %s; suspicious code must not be blocked", got.Status)
	}
	if e.codes[0] != "import os\nprint(eval('1'))" {
		t.Errorf("engine got %q, want the code without NUL bytes", e.codes[0])
	}
	for _, p := range []string{`import\\s+os`, `eval\\s*\\(`} {
		if !strings.Contains(logs.String(), p) {
			t.Errorf("pattern %s not logged: %s", p, logs.String())
		}
	}
	if !strings.Contains(logs.String(), `"level":"WARN"`) {
		t.Errorf("suspicious code not logged as a warning: %s", logs.String())
	}
}

func TestDefaultTestIDs(t *testing.T) {
	e := newEngine(map[string]script{"a": prints("A"), "b": prints("B")})
	tests := []TestCase{{Input: "a", ExpectedOutput: "A"}, {ID: "named", Input: "b", ExpectedOutput: "B"}}
	got := newJudge(e, 1).Execute(context.Background(), request("python", "code", tests...))
	if got.TestResults[0].TestID != "test_0" || got.TestResults[1].TestID != "named" {
		t.Errorf("test ids = %s, %s; want test_0, named", got.TestResults[0].TestID, got.TestResults[1].TestID)
	}
	if tests[0].ID != "" {
		t.Error("Execute modified the caller's test cases")
	}
}

func TestBuildResultWithoutTests(t *testing.T) {
	got := buildResult(ExecutionRequest{RequestID: "r"}, nil, 7)
	if got.Status != StatusSandboxError || got.Summary != "No test cases were executed" || got.TotalTimeMS != 7 {
		t.Errorf("got %s %q %d", got.Status, got.Summary, got.TotalTimeMS)
	}
	checkInfo(t, got.ErrorInfo, &ExecutionError{Code: CodeNoTests, Message: "No test results produced", Stage: StageExecution})
}

func TestCompareModeInExecute(t *testing.T) {
	e := newEngine(map[string]script{"a": prints("3.1415927 x\n")})
	for mode, want := range map[string]TestStatus{
		"":           TestWrongAnswer,
		"tokens":     TestWrongAnswer,
		"float:1e-6": TestPassed,
		"float:1e-9": TestWrongAnswer,
		"exact":      TestWrongAnswer,
	} {
		req := request("python", "code", TestCase{ID: "t", Input: "a", ExpectedOutput: "3.14159265  x"})
		req.Compare = mode
		got := newJudge(e, 1).Execute(context.Background(), req)
		if got.TestResults[0].Status != want {
			t.Errorf("compare %q: %s, want %s", mode, got.TestResults[0].Status, want)
		}
	}
}

// TestTotalTimeoutCountsCompilation: the total timeout runs from the
// judge's start, so a compilation that outlasts it leaves no time for the
// tests, and none is started.
func TestTotalTimeoutCountsCompilation(t *testing.T) {
	e := newEngine(map[string]script{"a": prints("A"), "b": prints("B")})
	e.onPrepare = func() { time.Sleep(150 * time.Millisecond) }
	req := request("java", "code",
		TestCase{ID: "ta", Input: "a", ExpectedOutput: "A"},
		TestCase{ID: "tb", Input: "b", ExpectedOutput: "B"})
	req.TotalTimeoutMS = 100
	got := newJudge(e, 2).Execute(context.Background(), req)
	if got.Status != StatusTimeout || !slices.Equal(messages(got), []string{"Total timeout exceeded", "Total timeout exceeded"}) {
		t.Errorf("status %s, messages %q; want timeout, Total timeout exceeded", got.Status, messages(got))
	}
	if len(e.prog.started) != 0 {
		t.Errorf("tests %v started after the total timeout", e.prog.started)
	}
	checkInfo(t, got.ErrorInfo, &ExecutionError{Code: "TIMEOUT", Message: "Total timeout exceeded", Stage: StageExecution})
}

// TestProgress reports every finished test once, with its index and its
// redacted result, and nothing for tests the total timeout cut off.
func TestProgress(t *testing.T) {
	e := newEngine(map[string]script{"a": prints("A"), "b": prints("x"), "c": prints("C")})
	var mu sync.Mutex
	seen := map[int]TestResult{}
	j := New(e, Options{Parallel: 2, Progress: func(i int, r TestResult) {
		mu.Lock()
		defer mu.Unlock()
		if _, dup := seen[i]; dup {
			t.Errorf("test %d reported twice", i)
		}
		seen[i] = r
	}})
	got := j.Execute(context.Background(), request("python", "code",
		TestCase{ID: "1", Input: "a", ExpectedOutput: "A"},
		TestCase{ID: "2", Input: "b", ExpectedOutput: "B", IsHidden: true},
		TestCase{ID: "3", Input: "c", ExpectedOutput: "C"}))
	if len(seen) != 3 {
		t.Fatalf("%d tests reported, want 3", len(seen))
	}
	for i, r := range got.TestResults {
		if seen[i].TestID != r.TestID || seen[i].Status != r.Status {
			t.Errorf("test %d reported %s %s, result says %s %s", i, seen[i].TestID, seen[i].Status, r.TestID, r.Status)
		}
	}
	if seen[1].ActualOutput != "" || seen[1].Status != TestWrongAnswer {
		t.Errorf("hidden test reported unredacted or wrong: %+v", seen[1])
	}
}
