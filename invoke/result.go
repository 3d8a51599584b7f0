package invoke

import (
	"encoding/json"

	"github.com/coderunner/coderunner/execute"
)

// Status is the outcome of an /execute execution.
type Status string

// The statuses an /execute result takes.
const (
	// StatusSuccess: the code ran and exited with code 0.
	StatusSuccess Status = "success"
	// StatusFailed: the code failed: a non-zero exit (an exception in the
	// handler included), a signal, the memory or the output limit.
	StatusFailed Status = "failed"
	// StatusTimeout: the code ran out of time and was stopped.
	StatusTimeout Status = "timeout"
	// StatusError: the request was valid but could not be served: the
	// code defines no handler, its return value is not JSON, or the
	// sandbox failed.
	StatusError Status = "error"
	// StatusCrashed: the executor stopped (SIGTERM) while the code ran or
	// waited to run.
	StatusCrashed Status = "crashed"
)

// Exit codes a Result takes when the program has none of its own.
const (
	// ExitNone is the exit code of a run that timed out, crashed or never
	// started.
	ExitNone = -1
	// exitSignalBase plus the signal number is the code of a program
	// killed by a signal, as shells report it.
	exitSignalBase = 128
)

// Result is the outcome of one execution: the /execute response and the
// body of the control plane's result callback.
type Result struct {
	ExecutionID string `json:"execution_id"`
	Status      Status `json:"status"`
	Stdout      string `json:"stdout"`
	Stderr      string `json:"stderr"`
	// ExitCode is the program's exit code, 128+N when signal N killed it,
	// ExitNone when it timed out, crashed or could not start.
	ExitCode int `json:"exit_code"`
	// ExecutionTime is the wall time of the program in seconds.
	ExecutionTime float64 `json:"execution_time"`
	// ReturnValue is the handler's JSON return value; null without one.
	ReturnValue json.RawMessage `json:"return_value"`
	// Error says what went wrong; null on success.
	Error     *string            `json:"error"`
	Metrics   Metrics            `json:"metrics"`
	Artifacts []execute.Artifact `json:"artifacts"`
	// Reason classifies a result other than success for metrics and
	// logs: one of the Reason constants; empty on success. It is not part
	// of the JSON.
	Reason string `json:"-"`
}

// Reasons of a result other than success.
const (
	ReasonNonzeroExit     = "nonzero_exit"
	ReasonSignal          = "signal"
	ReasonTimeout         = "timeout"
	ReasonMemoryLimit     = "memory_limit"
	ReasonOutputLimit     = "output_limit"
	ReasonException       = "exception"
	ReasonMissingHandler  = "missing_handler"
	ReasonNotSerializable = "not_serializable"
	ReasonSandboxError    = "sandbox_error"
	ReasonCrashed         = "crashed"
)

// Metrics are the measurements of a run.
type Metrics struct {
	// DurationMS is the wall time in milliseconds.
	DurationMS float64 `json:"duration_ms"`
	// CPUTimeMS is the user+system CPU time of the whole process tree.
	CPUTimeMS float64 `json:"cpu_time_ms"`
	// PeakMemoryMB is the peak memory of the tree in MiB.
	PeakMemoryMB float64 `json:"peak_memory_mb"`
}

// Message returns the error message, or "".
func (r *Result) Message() string {
	if r.Error == nil {
		return ""
	}
	return *r.Error
}

// CrashedResult is the result of an execution cut short because the
// executor is stopping: status crashed, exit code -1, no output.
func CrashedResult(executionID, reason string) *Result {
	return noRun(executionID, StatusCrashed, ReasonCrashed, reason)
}

// ErrorResult is the result of a valid request that could not be served
// (status error, exit code -1) with msg as its error.
func ErrorResult(executionID, msg string) *Result {
	return noRun(executionID, StatusError, ReasonSandboxError, msg)
}

// noRun is the result of an execution that gave no program's outcome:
// exit code -1, no output, no artifacts, msg as its error.
func noRun(executionID string, status Status, reason, msg string) *Result {
	return &Result{
		ExecutionID: executionID,
		Status:      status,
		Reason:      reason,
		ExitCode:    ExitNone,
		Error:       &msg,
		Artifacts:   []execute.Artifact{},
	}
}
