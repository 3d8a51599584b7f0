package execute

import (
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

// ExecutionLimits bounds one execution. The JSON names are those of the /v1/run request's "limits" object.
type ExecutionLimits struct {
	// TimeLimit is the wall-clock and CPU time the program may use, in
	// seconds (fractions allowed), from MinTimeLimit to MaxTimeLimit.
	TimeLimit float64 `json:"time_limit"`
	// MemoryLimit is the memory of the whole process tree in MB, from
	// MinMemoryLimit to MaxMemoryLimit.
	MemoryLimit int `json:"memory_limit"`
	// CPULimit is the CPU bandwidth in cores: more than 0 and at most the
	// number of cores of this machine.
	CPULimit float64 `json:"cpu_limit"`
	// MaxOutputChars caps stdout and stderr, each on its own, counted in
	// bytes, from 1 to MaxMaxOutputChars.
	MaxOutputChars int `json:"max_output_chars"`
	// Pids is the number of processes and threads of the tree, from 1 to
	// MaxPids.
	Pids int `json:"pids,omitempty"`
}

// Defaults and bounds of ExecutionLimits. The bounds of time (1 to 300
// seconds) are those of execute_code; the others are chosen so that one
// request cannot take a machine (memory, processes) or the caller's own
// memory (output) for itself, while leaving room for JVMs, compilers and
// data-heavy scripts.
const (
	DefaultTimeLimit      = 30
	DefaultMemoryLimit    = 256
	DefaultCPULimit       = 0.5
	DefaultMaxOutputChars = 100000
	DefaultPids           = 50

	MinTimeLimit      = 1
	MaxTimeLimit      = 300
	MinMemoryLimit    = 16
	MaxMemoryLimit    = 8192
	MaxMaxOutputChars = 10_000_000
	MaxPids           = 1024
)

// DefaultLimits returns the defaults of a run: 30 s, 256 MB, 0.5 CPU, 100000
// output characters, 50 processes.
func DefaultLimits() ExecutionLimits {
	return ExecutionLimits{
		TimeLimit:      DefaultTimeLimit,
		MemoryLimit:    DefaultMemoryLimit,
		CPULimit:       DefaultCPULimit,
		MaxOutputChars: DefaultMaxOutputChars,
		Pids:           DefaultPids,
	}
}

// WithDefaults returns l with every zero field replaced by its default, so
// that a request may name only the limits it cares about. Negative values
// are kept for Validate to refuse.
func (l ExecutionLimits) WithDefaults() ExecutionLimits { return DefaultLimits().Overlay(l) }

// Overlay returns l with every non-zero field of o put over it.
func (l ExecutionLimits) Overlay(o ExecutionLimits) ExecutionLimits {
	if o.TimeLimit != 0 {
		l.TimeLimit = o.TimeLimit
	}
	if o.MemoryLimit != 0 {
		l.MemoryLimit = o.MemoryLimit
	}
	if o.CPULimit != 0 {
		l.CPULimit = o.CPULimit
	}
	if o.MaxOutputChars != 0 {
		l.MaxOutputChars = o.MaxOutputChars
	}
	if o.Pids != 0 {
		l.Pids = o.Pids
	}
	return l
}

// LimitError is the error Validate returns. It wraps ErrInvalidLimits.
type LimitError struct {
	// Field is the JSON name of the offending limit, e.g. "memory_limit".
	Field string
	// Reason says what is wrong with it, e.g. "must be between 16 and 8192".
	Reason string
}

// Error names the field and why it is refused.
func (e *LimitError) Error() string {
	return fmt.Sprintf("invalid execution limits: %s %s", e.Field, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidLimits) true.
func (e *LimitError) Unwrap() error { return ErrInvalidLimits }

// Validate reports the first limit out of range as a *LimitError naming
// its field. Zero is out of range for every field: call WithDefaults first
// to have zero mean the default.
func (l ExecutionLimits) Validate() error {
	bad := func(field, format string, a ...any) error {
		return &LimitError{Field: field, Reason: fmt.Sprintf(format, a...)}
	}
	switch {
	case math.IsNaN(l.TimeLimit) || l.TimeLimit < MinTimeLimit || l.TimeLimit > MaxTimeLimit:
		return bad("time_limit", "%g must be between %d and %d seconds", l.TimeLimit, MinTimeLimit, MaxTimeLimit)
	case l.MemoryLimit < MinMemoryLimit || l.MemoryLimit > MaxMemoryLimit:
		return bad("memory_limit", "%d must be between %d and %d MB", l.MemoryLimit, MinMemoryLimit, MaxMemoryLimit)
	case math.IsNaN(l.CPULimit) || l.CPULimit <= 0 || l.CPULimit > float64(runtime.NumCPU()):
		return bad("cpu_limit", "%g must be more than 0 and at most %d (the cores of this machine)", l.CPULimit, runtime.NumCPU())
	case l.MaxOutputChars < 1 || l.MaxOutputChars > MaxMaxOutputChars:
		return bad("max_output_chars", "%d must be between 1 and %d", l.MaxOutputChars, MaxMaxOutputChars)
	case l.Pids < 1 || l.Pids > MaxPids:
		return bad("pids", "%d must be between 1 and %d", l.Pids, MaxPids)
	}
	return nil
}

// Duration is TimeLimit as a time.Duration.
func (l ExecutionLimits) Duration() time.Duration {
	return time.Duration(l.TimeLimit * float64(time.Second))
}

// sandboxLimits translates validated limits into the backend's, leaving
// the limits it does not name zero. The time
// limit bounds both wall and CPU time: a sleeping program times out, and a
// program that spins several threads cannot use more CPU than it was given
// time.
func (l ExecutionLimits) sandboxLimits() sandbox.Limits {
	d := l.Duration()
	return sandbox.Limits{
		WallTime:    d,
		CPUTime:     d,
		Memory:      int64(l.MemoryLimit) * sandbox.MiB,
		CPUs:        l.CPULimit,
		Processes:   l.Pids,
		OutputBytes: int64(l.MaxOutputChars),
	}
}
