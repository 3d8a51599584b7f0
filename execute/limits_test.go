package execute

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

func TestValidateLimits(t *testing.T) {
	cores := float64(runtime.NumCPU())
	with := func(f func(*ExecutionLimits)) ExecutionLimits {
		l := DefaultLimits()
		f(&l)
		return l
	}
	tests := []struct {
		name  string
		l     ExecutionLimits
		field string // "" when valid
	}{
		{"defaults", DefaultLimits(), ""},
		{"smallest", ExecutionLimits{TimeLimit: 1, MemoryLimit: 16, CPULimit: 0.01, MaxOutputChars: 1, Pids: 1}, ""},
		{"largest", ExecutionLimits{TimeLimit: 300, MemoryLimit: 8192, CPULimit: cores, MaxOutputChars: 10_000_000, Pids: 1024}, ""},
		{"fractional time", with(func(l *ExecutionLimits) { l.TimeLimit = 1.5 }), ""},
		{"time zero", with(func(l *ExecutionLimits) { l.TimeLimit = 0 }), "time_limit"},
		{"time below 1", with(func(l *ExecutionLimits) { l.TimeLimit = 0.5 }), "time_limit"},
		{"time above 300", with(func(l *ExecutionLimits) { l.TimeLimit = 301 }), "time_limit"},
		{"time NaN", with(func(l *ExecutionLimits) { l.TimeLimit = math.NaN() }), "time_limit"},
		{"time infinite", with(func(l *ExecutionLimits) { l.TimeLimit = math.Inf(1) }), "time_limit"},
		{"memory below 16", with(func(l *ExecutionLimits) { l.MemoryLimit = 15 }), "memory_limit"},
		{"memory negative", with(func(l *ExecutionLimits) { l.MemoryLimit = -1 }), "memory_limit"},
		{"memory above max", with(func(l *ExecutionLimits) { l.MemoryLimit = 8193 }), "memory_limit"},
		{"cpu zero", with(func(l *ExecutionLimits) { l.CPULimit = 0 }), "cpu_limit"},
		{"cpu negative", with(func(l *ExecutionLimits) { l.CPULimit = -0.5 }), "cpu_limit"},
		{"cpu above cores", with(func(l *ExecutionLimits) { l.CPULimit = cores + 0.5 }), "cpu_limit"},
		{"cpu NaN", with(func(l *ExecutionLimits) { l.CPULimit = math.NaN() }), "cpu_limit"},
		{"output zero", with(func(l *ExecutionLimits) { l.MaxOutputChars = 0 }), "max_output_chars"},
		{"output above max", with(func(l *ExecutionLimits) { l.MaxOutputChars = 10_000_001 }), "max_output_chars"},
		{"pids zero", with(func(l *ExecutionLimits) { l.Pids = 0 }), "pids"},
		{"pids above max", with(func(l *ExecutionLimits) { l.Pids = 1025 }), "pids"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.l.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate(%+v) = %v, want nil", tt.l, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%+v) = nil, want an error naming %s", tt.l, tt.field)
			}
			if !errors.Is(err, ErrInvalidLimits) {
				t.Errorf("error %v is not ErrInvalidLimits", err)
			}
			var le *LimitError
			if !errors.As(err, &le) || le.Field != tt.field {
				t.Errorf("error %v does not carry field %s", err, tt.field)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("message %q does not name %s", err, tt.field)
			}
		})
	}
}

func TestWithDefaults(t *testing.T) {
	got := ExecutionLimits{MemoryLimit: 64, TimeLimit: -3}.WithDefaults()
	want := ExecutionLimits{TimeLimit: -3, MemoryLimit: 64, CPULimit: 0.5, MaxOutputChars: 100000, Pids: 50}
	if got != want {
		t.Errorf("WithDefaults() = %+v, want %+v", got, want)
	}
	if got := (ExecutionLimits{}).WithDefaults(); got != DefaultLimits() {
		t.Errorf("zero limits with defaults = %+v, want %+v", got, DefaultLimits())
	}
}

func TestSandboxLimits(t *testing.T) {
	l := ExecutionLimits{TimeLimit: 1.5, MemoryLimit: 64, CPULimit: 0.25, MaxOutputChars: 1000, Pids: 7}
	got := l.sandboxLimits().WithDefaults()
	want := sandbox.DefaultLimits
	want.WallTime = 1500 * time.Millisecond
	want.CPUTime = 1500 * time.Millisecond
	want.Memory = 64 << 20
	want.CPUs = 0.25
	want.Processes = 7
	want.OutputBytes = 1000
	if got != want {
		t.Errorf("sandboxLimits() = %+v, want %+v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("translated limits refused by the sandbox: %v", err)
	}
}
