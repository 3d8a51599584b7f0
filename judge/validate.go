package judge

import (
	"fmt"
	"strings"

	"github.com/coderunner/coderunner/lang"
)

// Defaults of a request's zero fields (the configuration's limits
// section has the same).
const (
	DefaultTimeoutMS      = 5000
	DefaultTotalTimeoutMS = 60000
	DefaultMemoryLimitMB  = 256
	DefaultCPULimit       = 1.0
)

// Bounds that Validate enforces. The first four are the documented
// request limits; the others keep one request from making the judge allocate or run without limit.
const (
	MinMemoryLimitMB = 16
	MaxMemoryLimitMB = 1024
	MinTimeoutMS     = 100
	MaxTimeoutMS     = 60000
	// MinTotalTimeoutMS and MaxTotalTimeoutMS bound total_timeout_ms.
	MinTotalTimeoutMS = 100
	MaxTotalTimeoutMS = 600000
	// MaxCPULimit bounds cpu_limit, which must also be positive.
	MaxCPULimit = 64
	// MaxCodeBytes bounds the source code.
	MaxCodeBytes = 1 << 20
	// MaxTests bounds the number of test cases.
	MaxTests = 1000
	// MaxTestFieldBytes bounds the input and the expected output of each
	// test.
	MaxTestFieldBytes = 8 << 20
	// MaxTestDataBytes bounds the inputs and expected outputs of all the
	// tests together.
	MaxTestDataBytes = 32 << 20
	// MaxRequestIDBytes bounds request_id.
	MaxRequestIDBytes = 256
	// MaxTestIDBytes bounds a test's id.
	MaxTestIDBytes = 256
)

// WithDefaults returns r with every zero field replaced by its default and
// every empty test id replaced by "test_<index>" (as the Fleet conversion
// names them). The test cases are copied, never modified in
// place.
func (r ExecutionRequest) WithDefaults() ExecutionRequest {
	if r.TimeoutMS == 0 {
		r.TimeoutMS = DefaultTimeoutMS
	}
	if r.TotalTimeoutMS == 0 {
		r.TotalTimeoutMS = DefaultTotalTimeoutMS
	}
	if r.MemoryLimitMB == 0 {
		r.MemoryLimitMB = DefaultMemoryLimitMB
	}
	if r.CPULimit == 0 {
		r.CPULimit = DefaultCPULimit
	}
	if r.Compare == "" {
		r.Compare = CompareNormalized
	}
	if r.TestCases != nil {
		tcs := make([]TestCase, len(r.TestCases))
		copy(tcs, r.TestCases)
		for i := range tcs {
			if tcs[i].ID == "" {
				tcs[i].ID = fmt.Sprintf("test_%d", i)
			}
		}
		r.TestCases = tcs
	}
	return r
}

// Validate reports the first reason to refuse a request that went through
// WithDefaults. Its messages are the documented ones ("Empty
// code", "No test cases provided", "Invalid memory limit: 8MB", "Invalid
// timeout: 50ms") followed by the project's own checks, those of args and
// env that hold for every language among them. An unknown language is not
// a validation error: only the Engine knows the languages, and checks the
// compiler flags and the names a language's recipe keeps.
func (r ExecutionRequest) Validate() error {
	switch {
	case strings.TrimSpace(r.Code) == "" && (len(r.Files) == 0 || r.Entry == ""):
		return invalidf("Empty code")
	case len(r.TestCases) == 0:
		return invalidf("No test cases provided")
	case r.MemoryLimitMB < MinMemoryLimitMB || r.MemoryLimitMB > MaxMemoryLimitMB:
		return invalidf("Invalid memory limit: %dMB", r.MemoryLimitMB)
	case !validTimeout(r.TimeoutMS):
		return invalidf("Invalid timeout: %dms", r.TimeoutMS)
	case r.TotalTimeoutMS < MinTotalTimeoutMS || r.TotalTimeoutMS > MaxTotalTimeoutMS:
		return invalidf("Invalid total timeout: %dms (must be between %d and %d)", r.TotalTimeoutMS, MinTotalTimeoutMS, MaxTotalTimeoutMS)
	case !(r.CPULimit > 0 && r.CPULimit <= MaxCPULimit):
		return invalidf("Invalid CPU limit: %g (must be above 0 and at most %d)", r.CPULimit, MaxCPULimit)
	case strings.TrimSpace(r.Language) == "":
		return invalidf("Missing language")
	case len(r.RequestID) > MaxRequestIDBytes:
		return invalidf("Request id too long: %d bytes (max %d)", len(r.RequestID), MaxRequestIDBytes)
	case len(r.Code) > MaxCodeBytes:
		return invalidf("Code too large: %d bytes (max %d)", len(r.Code), MaxCodeBytes)
	case len(r.TestCases) > MaxTests:
		return invalidf("Too many test cases: %d (max %d)", len(r.TestCases), MaxTests)
	}
	if _, err := r.ProgramOptions(); err != nil {
		return err
	}
	if err := lang.CheckArgs(r.Args); err != nil {
		return invalidf("Invalid %v", err)
	}
	if err := lang.CheckEnv(r.Env); err != nil {
		return invalidf("Invalid %v", err)
	}
	if len(r.CompilerFlags) > lang.MaxCompilerFlags {
		return invalidf("Invalid compiler_flags: %d flags, at most %d", len(r.CompilerFlags), lang.MaxCompilerFlags)
	}
	if _, err := ParseCompare(r.Compare); err != nil {
		return invalidf("Invalid compare mode: %q (want normalized, exact, tokens or float:EPS with EPS >= 0)", r.Compare)
	}
	total := 0
	for _, tc := range r.TestCases {
		switch {
		case len(tc.ID) > MaxTestIDBytes:
			return invalidf("Test id too long: %d bytes (max %d)", len(tc.ID), MaxTestIDBytes)
		case tc.TimeoutMS != 0 && !validTimeout(tc.TimeoutMS):
			return invalidf("Invalid timeout for test %q: %dms", tc.ID, tc.TimeoutMS)
		case len(tc.Input) > MaxTestFieldBytes:
			return invalidf("Input of test %q too large: %d bytes (max %d)", tc.ID, len(tc.Input), MaxTestFieldBytes)
		case len(tc.ExpectedOutput) > MaxTestFieldBytes:
			return invalidf("Expected output of test %q too large: %d bytes (max %d)", tc.ID, len(tc.ExpectedOutput), MaxTestFieldBytes)
		}
		total += len(tc.Input) + len(tc.ExpectedOutput)
	}
	if total > MaxTestDataBytes {
		return invalidf("Test data too large: %d bytes (max %d)", total, MaxTestDataBytes)
	}
	if err := r.validateTools(); err != nil {
		return err
	}
	return r.validateSubtasks()
}

// ValidationError is a reason to refuse a request. Its message is shown to
// users as is, capitalised.
type ValidationError struct {
	// Message is the reason, e.g. "Invalid timeout: 50ms".
	Message string
}

// Error implements error.
func (e *ValidationError) Error() string { return e.Message }

func invalidf(format string, args ...any) error {
	return &ValidationError{Message: fmt.Sprintf(format, args...)}
}

func validTimeout(ms int) bool { return ms >= MinTimeoutMS && ms <= MaxTimeoutMS }
