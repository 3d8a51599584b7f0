package execute

import (
	"encoding/json"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

// Status is the overall outcome of an execution.
type Status string

// The statuses a Result takes.
const (
	// StatusSuccess: the program ran and exited with code 0.
	StatusSuccess Status = "success"
	// StatusTimeout: the program ran out of time and was stopped.
	StatusTimeout Status = "timeout"
	// StatusExecutionError: the program failed: non-zero exit, signal,
	// memory or output limit, or its compilation failed.
	StatusExecutionError Status = "execution_error"
	// StatusSetupError: the sandbox could not run the program at all.
	StatusSetupError Status = "setup_error"
)

// Exit codes that Result.ExitCode takes when the program has none of its
// own. They follow the conventions of timeout(1) and of shells, so that
// `coderunner run` can exit with ExitCode whatever happened.
const (
	// ExitTimeout is the exit code of a program stopped for its time
	// limit, as timeout(1) reports it.
	ExitTimeout = 124
	// ExitSetupError is the exit code of a run the sandbox failed: -1, the
	// code of a system error.
	ExitSetupError = -1
	// exitSignalBase plus the signal number is the exit code of a program
	// killed by a signal, as shells report it (137 for SIGKILL, the usual
	// fate of a program over its memory limit).
	exitSignalBase = 128
)

// Result is the outcome of one execution. Its JSON is the object that
// ExecuteWithLimits returns, `coderunner run --json` prints and POST
// /v1/run answers.
type Result struct {
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	// ExitCode is the program's exit code; 128+N when signal N killed it;
	// ExitTimeout when it ran out of time; ExitSetupError when the
	// sandbox failed.
	ExitCode int `json:"exit_code"`
	// ExecutionTime is the wall time of the program in seconds, without
	// its compilation.
	ExecutionTime float64 `json:"execution_time"`
	Status        Status  `json:"status"`
	// ErrorMessage says what went wrong; nil on success.
	ErrorMessage  *string       `json:"error_message"`
	ResourceUsage ResourceUsage `json:"resource_usage"`
	LimitsApplied LimitsApplied `json:"limits_applied"`
	// Language is the language as the caller named it (e.g. "python3").
	Language string `json:"language"`
	// Backend is the name of the sandbox backend that ran the program.
	Backend string `json:"backend"`
	// SessionID echoes the request's session id, or is nil.
	SessionID *string `json:"session_id"`
	// Truncated is true when stdout or stderr was cut at MaxOutputChars.
	Truncated bool `json:"truncated"`
	// MemoryExceeded is true when the kernel killed any process of the run
	// for exceeding the memory limit.
	MemoryExceeded bool `json:"memory_exceeded"`
	// Artifacts lists the files the program left in its workspace.
	Artifacts []Artifact `json:"artifacts,omitempty"`
	// Warnings tell where the backend could not give its full isolation
	// (for example memory limited by rlimits alone), and which of Stdout
	// and Stderr is not valid UTF-8 (its JSON string shows U+FFFD for
	// each byte that is not); absent when there are none.
	Warnings []string `json:"warnings,omitempty"`
	// Stage is the step that decided the result, StageCompile or
	// StageRun; empty when the sandbox failed.
	Stage string `json:"-"`
	// Verdict is the sandbox's own verdict of that step; empty when the
	// sandbox failed. It tells apart what Status groups together, such as
	// a non-zero exit and a memory kill.
	Verdict sandbox.Status `json:"-"`

	// Interpreter marks the result of a cell run in a session's
	// interpreter (Request.Mode ModeInterpreter): its JSON adds "value"
	// and "display", and "restarted" when true.
	Interpreter bool `json:"-"`
	// Value is the repr of the cell's last expression; nil when the cell
	// ends with a statement or the expression is None.
	Value *string `json:"-"`
	// Display is what the cell showed: figures and the PNG and SVG files
	// it wrote.
	Display []Display `json:"-"`
	// Restarted is true when the session's interpreter was started anew
	// for this call, its state lost: the previous one was killed (a cell
	// that would not stop, a memory limit) or restarted on request.
	Restarted bool `json:"-"`
}

// Display is one rich output of a cell: MIME is its type ("image/png",
// "image/svg+xml", "text/plain"), Data its content, in standard base64
// for a binary type.
type Display struct {
	MIME string `json:"mime"`
	Data string `json:"data"`
}

// MarshalJSON writes the result's object, with "value", "display" and
// "restarted" for an interpreter's cell.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	if !r.Interpreter {
		return json.Marshal(plain(r))
	}
	d := r.Display
	if d == nil {
		d = []Display{}
	}
	return json.Marshal(struct {
		plain
		Value     *string   `json:"value"`
		Display   []Display `json:"display"`
		Restarted bool      `json:"restarted,omitempty"`
	}{plain(r), r.Value, d, r.Restarted})
}

// UnmarshalJSON reads a result's object; one with "display" is an
// interpreter's cell.
func (r *Result) UnmarshalJSON(b []byte) error {
	type plain Result
	var x struct {
		plain
		Value     *string    `json:"value"`
		Display   *[]Display `json:"display"`
		Restarted bool       `json:"restarted"`
	}
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	*r = Result(x.plain)
	if x.Display != nil {
		r.Interpreter, r.Value, r.Display, r.Restarted = true, x.Value, *x.Display, x.Restarted
	}
	return nil
}

// The steps of an execution, for Result.Stage.
const (
	StageCompile = "compile"
	StageRun     = "run"
)

// Message returns the error message, or "" on success.
func (r *Result) Message() string {
	if r.ErrorMessage == nil {
		return ""
	}
	return *r.ErrorMessage
}

// ResourceUsage is what the run consumed, as a ResourceMonitor reports
// it. Times are in seconds, memory in MB (2^20 bytes), CPU in
// percent of one core.
type ResourceUsage struct {
	ExecutionTimeSeconds float64 `json:"execution_time_seconds"`
	CPUTimeSeconds       float64 `json:"cpu_time_seconds"`
	// MemoryStartMB is the memory of the first sample.
	MemoryStartMB float64 `json:"memory_start_mb"`
	MemoryPeakMB  float64 `json:"memory_peak_mb"`
	// CPUSamples is the number of samples taken.
	CPUSamples int `json:"cpu_samples"`
	// CPUAveragePercent is the CPU time over the wall time of the run.
	CPUAveragePercent float64 `json:"cpu_average_percent"`
	// CPUPeakPercent is the highest CPU use over one sample interval.
	CPUPeakPercent float64 `json:"cpu_peak_percent"`
}

// LimitsApplied echoes the limits the run was held to.
type LimitsApplied struct {
	TimeLimitSeconds float64 `json:"time_limit_seconds"`
	MemoryLimitMB    int     `json:"memory_limit_mb"`
	CPULimitCores    float64 `json:"cpu_limit_cores"`
	MaxOutputChars   int     `json:"max_output_chars"`
}

// Artifact is a file the program left in its workspace, as the result
// lists it.
type Artifact struct {
	// Path is relative to the workspace, with forward slashes.
	Path string `json:"path"`
	// Size is in bytes.
	Size     int64  `json:"size"`
	MimeType string `json:"mime_type"`
	// Type is "log" for *.log files and "artifact" for the others.
	Type string `json:"type"`
	// CreatedAt is the file's modification time.
	CreatedAt time.Time `json:"created_at"`
	// Checksum is "sha256:" and the hex digest of the content; empty when
	// the scan's hashing budget (ArtifactLimits.MaxHashBytes) ran out.
	Checksum string `json:"checksum,omitempty"`
	// Content is the file's content in standard base64, when the request
	// asked for contents (ArtifactOptions) and the file fitted in what its
	// max_bytes left; absent otherwise.
	Content *string `json:"content,omitempty"`
}

func applied(l ExecutionLimits) LimitsApplied {
	return LimitsApplied{
		TimeLimitSeconds: l.TimeLimit,
		MemoryLimitMB:    l.MemoryLimit,
		CPULimitCores:    l.CPULimit,
		MaxOutputChars:   l.MaxOutputChars,
	}
}
