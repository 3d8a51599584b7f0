package judge

import "github.com/coderunner/coderunner/multifile"

// ExecutionRequest asks the judge to run code against test cases (the body
// of /v1/judge and of `coderunner judge`).
//
// A zero TimeoutMS, TotalTimeoutMS, MemoryLimitMB or CPULimit takes its
// default (DefaultTimeoutMS, DefaultTotalTimeoutMS, DefaultMemoryLimitMB,
// DefaultCPULimit), as a zero field of sandbox.Limits does; an empty Compare
// means "normalized". The JSON form therefore treats an absent field and an
// explicit 0 alike.
type ExecutionRequest struct {
	// RequestID identifies the request; it is echoed in the result. The
	// judge does not invent one when it is empty.
	RequestID string `json:"request_id"`
	// Code is the program's source.
	Code string `json:"code"`
	// Language is a language id or alias of the language table; the result
	// echoes it as given.
	Language string `json:"language"`
	// TestCases are run in parallel; results keep this order.
	TestCases []TestCase `json:"test_cases"`
	// TimeoutMS is the wall-clock (and CPU) time limit of each test.
	TimeoutMS int `json:"timeout_ms"`
	// TotalTimeoutMS bounds the wall-clock time of all the tests together.
	TotalTimeoutMS int `json:"total_timeout_ms"`
	// MemoryLimitMB is the memory limit of each run, in MiB.
	MemoryLimitMB int `json:"memory_limit_mb"`
	// CPULimit is the CPU bandwidth of each run, in cores.
	CPULimit float64 `json:"cpu_limit"`
	// Metadata is carried along for the caller and never interpreted.
	Metadata map[string]any `json:"metadata,omitempty"`
	// Compare is the output comparison mode (see ParseCompare).
	Compare string `json:"compare,omitempty"`
	// Subtasks, when given, group the tests for scoring: the result then
	// has a score, a max_score and each subtask's score.
	Subtasks []Subtask `json:"subtasks,omitempty"`

	// Files are written beneath /workspace with the code before the
	// solution is compiled (see package multifile); Entry names the file
	// to run or compile, empty meaning the code's. Code may be empty when
	// Files and Entry are given. The tests are unchanged.
	Files []multifile.File `json:"files,omitempty"`
	Entry string           `json:"entry,omitempty"`
	// Args are the program's arguments, appended to the run argv of
	// every test.
	Args []string `json:"args,omitempty"`
	// CompilerFlags are added to the compile step, from the language's
	// allow-list (see lang.Language.CheckCompilerFlags); a language
	// without a compile step refuses any.
	CompilerFlags []string `json:"compiler_flags,omitempty"`
	// Env adds variables to the environment of every test's run; names
	// match ^[A-Z_][A-Z0-9_]*$, and PATH, HOME, LD_*, the recipe's own
	// and the server's are refused.
	Env map[string]string `json:"env,omitempty"`

	// Checker, when given, judges each test's output instead of Compare:
	// it runs as `checker INPUT OUTPUT ANSWER` with testlib's exit codes.
	Checker *Tool `json:"checker,omitempty"`
	// Interactor, when given, makes the problem interactive: it runs as
	// `interactor INPUT OUTPUT` beside the solution, each one's stdout
	// piped to the other's stdin, and its exit code gives the verdict.
	Interactor *Tool `json:"interactor,omitempty"`
}

// ProgramOptions returns what the request adds to its code, for
// Engine.Prepare: its files decoded (see multifile.Decode), its entry,
// compiler flags, arguments and environment. An error is a
// *ValidationError naming the field of files at fault.
func (r ExecutionRequest) ProgramOptions() (ProgramOptions, error) {
	files, err := multifile.Decode(r.Files)
	if err != nil {
		return ProgramOptions{}, &ValidationError{Message: err.Error()}
	}
	return ProgramOptions{Files: files, Entry: r.Entry, CompilerFlags: r.CompilerFlags, Args: r.Args, Env: r.Env}, nil
}

// TestCase is one input with its expected output. When
// decoded from JSON, "expected" is accepted as another name for
// "expected_output".
type TestCase struct {
	// ID names the test in the result; an empty ID becomes "test_<index>".
	ID string `json:"id"`
	// Input is given to the program on stdin.
	Input string `json:"input"`
	// ExpectedOutput is compared with the program's stdout.
	ExpectedOutput string `json:"expected_output"`
	// IsHidden keeps the test's outputs out of the result.
	IsHidden bool `json:"is_hidden"`
	// TimeoutMS, when not zero, replaces the request's TimeoutMS for this
	// test, larger or smaller.
	TimeoutMS int `json:"timeout_ms,omitempty"`
	// Description is for humans.
	Description string `json:"description,omitempty"`
}

// ExecutionResult is the judge's answer.
type ExecutionResult struct {
	// RequestID echoes the request's.
	RequestID string `json:"request_id"`
	// Status is the overall verdict.
	Status ExecutionStatus `json:"status"`
	// TestResults are in the request's test order; empty (never null) when
	// the request was refused or did not compile.
	TestResults []TestResult `json:"test_results"`
	// TotalTimeMS is the time Execute took, compilation included.
	TotalTimeMS int64 `json:"total_time_ms"`
	// CompilationOutput is the compiler's diagnostics when compilation
	// failed, else nil.
	CompilationOutput *string `json:"compilation_output"`
	// Summary is a one-line human-readable account.
	Summary string `json:"summary"`
	// ErrorInfo describes the first failure, or is nil when the status is
	// all_passed or some_passed.
	ErrorInfo *ExecutionError `json:"error_info"`
	// Score and MaxScore are the points earned and the points there were,
	// when the request has subtasks and its tests ran or its code did not
	// compile (a score of 0); absent otherwise.
	Score    *float64 `json:"score,omitempty"`
	MaxScore *float64 `json:"max_score,omitempty"`
	// SubtaskResults are the subtasks' scores, in the request's order,
	// alongside Score.
	SubtaskResults []SubtaskResult `json:"subtask_results,omitempty"`
}

// ExecutionStatus is the overall verdict of a request.
type ExecutionStatus string

// The overall verdicts.
const (
	StatusAllPassed        ExecutionStatus = "all_passed"
	StatusSomePassed       ExecutionStatus = "some_passed"
	StatusAllFailed        ExecutionStatus = "all_failed"
	StatusCompilationError ExecutionStatus = "compilation_error"
	StatusRuntimeError     ExecutionStatus = "runtime_error"
	StatusTimeout          ExecutionStatus = "timeout"
	StatusMemoryExceeded   ExecutionStatus = "memory_exceeded"
	// StatusSandboxError means the request was refused or the machinery
	// failed; it says nothing about the program.
	StatusSandboxError ExecutionStatus = "sandbox_error"
	// StatusJudgeError means the checker or the interactor failed (did
	// not compile, crashed, timed out, exited with a code of its own) on
	// at least one test: the solution's verdict is not known.
	StatusJudgeError ExecutionStatus = "judge_error"
)

// TestResult is the verdict on one test case.
type TestResult struct {
	// TestID is the test case's id.
	TestID string `json:"test_id"`
	// Status is the verdict on this test.
	Status TestStatus `json:"status"`
	// ActualOutput is the program's stdout; empty for hidden tests.
	ActualOutput string `json:"actual_output"`
	// ExpectedOutput echoes the test's expected output; empty for hidden
	// tests.
	ExpectedOutput string `json:"expected_output"`
	// ExecutionTimeMS is the wall time of the run.
	ExecutionTimeMS int64 `json:"execution_time_ms"`
	// MemoryUsedKB is the peak memory of the run's process tree.
	MemoryUsedKB int64 `json:"memory_used_kb"`
	// ErrorMessage explains a failure other than a wrong answer, else nil.
	ErrorMessage *string `json:"error_message"`
	// Truncated is true when ActualOutput or ErrorMessage holds only the
	// start of what the program wrote: the output passed the cap, or the
	// result keeps only so much of each test's output (and of all the
	// tests' together). The verdict is always on the whole output. Absent
	// when false, and for hidden tests.
	Truncated bool `json:"truncated,omitempty"`
	// CheckerMessage is what the checker or the interactor said of the
	// test (its stdout and stderr, bounded by MaxCheckerMessageBytes);
	// absent without one, when it said nothing, and for hidden tests.
	CheckerMessage *string `json:"checker_message,omitempty"`
	// Points is a partial verdict's share of the test, from 0 to 1.
	Points *float64 `json:"points,omitempty"`
}

// TestStatus is the verdict on one test case.
type TestStatus string

// The per-test verdicts.
const (
	TestPassed         TestStatus = "passed"
	TestWrongAnswer    TestStatus = "wrong_answer"
	TestRuntimeError   TestStatus = "runtime_error"
	TestTimeout        TestStatus = "timeout"
	TestMemoryExceeded TestStatus = "memory_exceeded"
	// TestSkipped is a test that did not run: every subtask it belongs to
	// stops at its first failure and had failed.
	TestSkipped TestStatus = "skipped"
	// TestPresentationError is a checker's or an interactor's exit code 2.
	TestPresentationError TestStatus = "presentation_error"
	// TestPartial is a checker's or an interactor's exit code 7: the test
	// earns Points of its share.
	TestPartial TestStatus = "partial"
	// TestJudgeError is a test the checker or the interactor could not
	// judge: it crashed, timed out, exited with code 3 or a code of its
	// own. It says nothing of the solution.
	TestJudgeError TestStatus = "judge_error"
)

// ExecutionError describes why a request did not pass.
type ExecutionError struct {
	// Code is one of the Code* constants or an upper-cased TestStatus.
	Code string `json:"code"`
	// Message says what went wrong, for humans.
	Message string `json:"message"`
	// Stage is "validation", "compilation" or "execution".
	Stage string `json:"stage"`
	// Details holds further output (the start of the failing test's
	// stdout, the compiler's stdout), or nil.
	Details *string `json:"details"`
}

// Error codes of ExecutionError that do not come from a test verdict.
const (
	CodeValidationError     = "VALIDATION_ERROR"
	CodeUnsupportedLanguage = "UNSUPPORTED_LANGUAGE"
	CodeCompilationError    = "COMPILATION_ERROR"
	CodeNoTests             = "NO_TESTS"
	CodeSandboxError        = "SANDBOX_ERROR"
	CodeJudgeError          = "JUDGE_ERROR"
)

// Stages of ExecutionError.
const (
	StageValidation  = "validation"
	StageCompilation = "compilation"
	StageExecution   = "execution"
)

// strp returns a pointer to a copy of s, for the nullable JSON fields.
func strp(s string) *string { return &s }
