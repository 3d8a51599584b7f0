package sandbox

import (
	"syscall"
	"time"
)

// Status is the verdict of a run. It is never an error: an error from
// Backend.Run means the sandbox failed, a Status describes the program.
type Status string

// The statuses, in the order they take precedence when several apply.
const (
	// StatusOutputLimit: stdout or stderr exceeded Limits.OutputBytes and
	// the program was stopped.
	StatusOutputLimit Status = "output_limit"
	// StatusTimeLimit: the wall-time or CPU-time limit was reached and the
	// program was stopped.
	StatusTimeLimit Status = "time_limit"
	// StatusMemoryLimit: the kernel killed the program for exceeding
	// Limits.Memory.
	StatusMemoryLimit Status = "memory_limit"
	// StatusSignaled: the program was killed by a signal.
	StatusSignaled Status = "signaled"
	// StatusNonzeroExit: the program exited with a non-zero code.
	StatusNonzeroExit Status = "nonzero_exit"
	// StatusOK: the program exited with code 0.
	StatusOK Status = "ok"
)

// Result is everything a run produced.
type Result struct {
	Status Status
	// ExitCode is the exit code of the program, or -1 when it was killed
	// by a signal.
	ExitCode int
	// Signal is the signal that killed the program, or 0.
	Signal syscall.Signal
	// TimeLimit tells which limit a StatusTimeLimit was for: "wall" or
	// "cpu".
	TimeLimit string
	// MemoryExceeded is true whenever the kernel OOM-killed any process of
	// the run, whatever the final Status.
	MemoryExceeded bool

	// CPUTime is the user+system time of the whole process tree.
	CPUTime time.Duration
	// WallTime is the elapsed time from the start of the program to the
	// end of the run.
	WallTime time.Duration
	// PeakMemory is the highest memory use of the whole tree, in bytes.
	PeakMemory int64

	Stdout          []byte
	Stderr          []byte
	StdoutTruncated bool
	StderrTruncated bool

	// Samples holds periodic measurements when Spec.SampleInterval was
	// set, and always one taken at the end of the run.
	Samples []Sample

	// Warnings tell where the backend could not give its full isolation
	// here (for example memory limited by rlimits because no cgroup is
	// available).
	Warnings []string
}

// Sample is one measurement of a running tree.
type Sample struct {
	// At is the time since the program started.
	At time.Duration
	// CPUTime is the cumulative CPU time of the tree.
	CPUTime time.Duration
	// Memory is the current memory use of the tree in bytes.
	Memory int64
}

// Truncated reports whether any output stream was cut at the cap.
func (r *Result) Truncated() bool { return r.StdoutTruncated || r.StderrTruncated }
