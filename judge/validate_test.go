package judge

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestValidationMessages(t *testing.T) {
	ok := func(mod func(*ExecutionRequest)) ExecutionRequest {
		r := request("python", "print(1)", TestCase{ID: "t1", Input: "", ExpectedOutput: "1"})
		mod(&r)
		return r
	}
	many := make([]TestCase, MaxTests+1)
	tests := []struct {
		name string
		req  ExecutionRequest
		want string
	}{
		{"empty code", ok(func(r *ExecutionRequest) { r.Code = "" }), "Empty code"},
		{"blank code", ok(func(r *ExecutionRequest) { r.Code = " \n\t " }), "Empty code"},
		{"no tests", ok(func(r *ExecutionRequest) { r.TestCases = nil }), "No test cases provided"},
		{"empty tests", ok(func(r *ExecutionRequest) { r.TestCases = []TestCase{} }), "No test cases provided"},
		{"memory too small", ok(func(r *ExecutionRequest) { r.MemoryLimitMB = 15 }), "Invalid memory limit: 15MB"},
		{"memory too large", ok(func(r *ExecutionRequest) { r.MemoryLimitMB = 1025 }), "Invalid memory limit: 1025MB"},
		{"memory negative", ok(func(r *ExecutionRequest) { r.MemoryLimitMB = -1 }), "Invalid memory limit: -1MB"},
		{"timeout too small", ok(func(r *ExecutionRequest) { r.TimeoutMS = 99 }), "Invalid timeout: 99ms"},
		{"timeout too large", ok(func(r *ExecutionRequest) { r.TimeoutMS = 60001 }), "Invalid timeout: 60001ms"},
		{"timeout negative", ok(func(r *ExecutionRequest) { r.TimeoutMS = -5 }), "Invalid timeout: -5ms"},
		{"total timeout too small", ok(func(r *ExecutionRequest) { r.TotalTimeoutMS = 99 }), "Invalid total timeout: 99ms (must be between 100 and 600000)"},
		{"total timeout too large", ok(func(r *ExecutionRequest) { r.TotalTimeoutMS = 600001 }), "Invalid total timeout: 600001ms (must be between 100 and 600000)"},
		{"cpu negative", ok(func(r *ExecutionRequest) { r.CPULimit = -1 }), "Invalid CPU limit: -1 (must be above 0 and at most 64)"},
		{"cpu too large", ok(func(r *ExecutionRequest) { r.CPULimit = 65 }), "Invalid CPU limit: 65 (must be above 0 and at most 64)"},
		{"no language", ok(func(r *ExecutionRequest) { r.Language = " " }), "Missing language"},
		{"request id too long", ok(func(r *ExecutionRequest) { r.RequestID = strings.Repeat("r", 257) }), "Request id too long: 257 bytes (max 256)"},
		{"code too large", ok(func(r *ExecutionRequest) { r.Code = strings.Repeat("#", MaxCodeBytes+1) }), "Code too large: 1048577 bytes (max 1048576)"},
		{"too many tests", ok(func(r *ExecutionRequest) { r.TestCases = many }), "Too many test cases: 1001 (max 1000)"},
		{"bad compare", ok(func(r *ExecutionRequest) { r.Compare = "regex" }), `Invalid compare mode: "regex" (want normalized, exact, tokens or float:EPS with EPS >= 0)`},
		{"bad float compare", ok(func(r *ExecutionRequest) { r.Compare = "float:-1" }), `Invalid compare mode: "float:-1" (want normalized, exact, tokens or float:EPS with EPS >= 0)`},
		{"test id too long", ok(func(r *ExecutionRequest) { r.TestCases[0].ID = strings.Repeat("i", 257) }), "Test id too long: 257 bytes (max 256)"},
		{"test timeout too small", ok(func(r *ExecutionRequest) { r.TestCases[0].TimeoutMS = 50 }), `Invalid timeout for test "t1": 50ms`},
		{"test timeout too large", ok(func(r *ExecutionRequest) { r.TestCases[0].TimeoutMS = 60001 }), `Invalid timeout for test "t1": 60001ms`},
		{"test timeout negative", ok(func(r *ExecutionRequest) { r.TestCases[0].TimeoutMS = -1 }), `Invalid timeout for test "t1": -1ms`},
		{"input too large", ok(func(r *ExecutionRequest) { r.TestCases[0].Input = strings.Repeat("i", MaxTestFieldBytes+1) }), `Input of test "t1" too large: 8388609 bytes (max 8388608)`},
		{"expected too large", ok(func(r *ExecutionRequest) { r.TestCases[0].ExpectedOutput = strings.Repeat("e", MaxTestFieldBytes+1) }), `Expected output of test "t1" too large: 8388609 bytes (max 8388608)`},
		{"test data too large", ok(func(r *ExecutionRequest) {
			big := strings.Repeat("d", MaxTestFieldBytes)
			for i := range 5 {
				r.TestCases = append(r.TestCases, TestCase{ID: string(rune('a' + i)), Input: big})
			}
		}), "Test data too large: 41943041 bytes (max 33554432)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(nil)
			got := newJudge(e, 1).Execute(context.Background(), tt.req)
			if got.Status != StatusSandboxError {
				t.Errorf("status = %s, want sandbox_error", got.Status)
			}
			checkInfo(t, got.ErrorInfo, &ExecutionError{Code: CodeValidationError, Message: tt.want, Stage: StageValidation})
			if got.Summary != "Validation error: "+tt.want {
				t.Errorf("summary = %q", got.Summary)
			}
			if got.TestResults == nil || len(got.TestResults) != 0 {
				t.Errorf("test_results = %v, want []", got.TestResults)
			}
			if got.RequestID != tt.req.RequestID {
				t.Errorf("request_id = %q, want %q", got.RequestID, tt.req.RequestID)
			}
			if e.prepared() != 0 {
				t.Error("a refused request reached the engine")
			}
		})
	}
}

func TestValidateAcceptsBounds(t *testing.T) {
	for _, mod := range []func(*ExecutionRequest){
		func(r *ExecutionRequest) { r.MemoryLimitMB = 16 },
		func(r *ExecutionRequest) { r.MemoryLimitMB = 1024 },
		func(r *ExecutionRequest) { r.TimeoutMS = 100 },
		func(r *ExecutionRequest) { r.TimeoutMS = 60000 },
		func(r *ExecutionRequest) { r.TotalTimeoutMS = 100 },
		func(r *ExecutionRequest) { r.TotalTimeoutMS = 600000 },
		func(r *ExecutionRequest) { r.CPULimit = 0.01 },
		func(r *ExecutionRequest) { r.CPULimit = 64 },
		func(r *ExecutionRequest) { r.TestCases[0].TimeoutMS = 100 },
		func(r *ExecutionRequest) { r.TestCases[0].TimeoutMS = 60000 },
		func(r *ExecutionRequest) { r.Compare = "float:0" },
		func(r *ExecutionRequest) { r.TestCases = make([]TestCase, MaxTests) },
	} {
		r := request("python", "print(1)", TestCase{ID: "t1"})
		mod(&r)
		if err := r.WithDefaults().Validate(); err != nil {
			t.Errorf("Validate refused a request within bounds: %v", err)
		}
	}
}

func TestWithDefaults(t *testing.T) {
	r := ExecutionRequest{TestCases: []TestCase{{}, {ID: "x"}}}.WithDefaults()
	if r.TimeoutMS != 5000 || r.TotalTimeoutMS != 60000 || r.MemoryLimitMB != 256 || r.CPULimit != 1.0 || r.Compare != "normalized" {
		t.Errorf("defaults = %d %d %d %g %q", r.TimeoutMS, r.TotalTimeoutMS, r.MemoryLimitMB, r.CPULimit, r.Compare)
	}
	if r.TestCases[0].ID != "test_0" || r.TestCases[1].ID != "x" {
		t.Errorf("test ids = %q, %q", r.TestCases[0].ID, r.TestCases[1].ID)
	}
	var ve *ValidationError
	if err := (ExecutionRequest{}).WithDefaults().Validate(); !errors.As(err, &ve) || ve.Message != "Empty code" {
		t.Errorf("Validate() = %v, want *ValidationError Empty code", err)
	}
}

func TestInvalidRequestResult(t *testing.T) {
	got := InvalidRequestResult("r9", errors.New("bad json"), 3)
	if got.RequestID != "r9" || got.Status != StatusSandboxError || got.Summary != "Validation error: bad json" || got.TotalTimeMS != 3 {
		t.Errorf("got %+v", got)
	}
	checkInfo(t, got.ErrorInfo, &ExecutionError{Code: CodeValidationError, Message: "bad json", Stage: StageValidation})
}
