package judge

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// The request's args, compiler flags and environment reach the engine
// once, with the build, and every test runs the program so prepared.
func TestProgramOptionsReachTheEngine(t *testing.T) {
	e := newEngine(map[string]script{"": prints("1\n")})
	req := request("python", "print(1)", TestCase{ExpectedOutput: "1"}, TestCase{ExpectedOutput: "1"})
	req.Args = []string{"a", "b c"}
	req.CompilerFlags = []string{"-O0"}
	req.Env = map[string]string{"GREETING": "hi"}
	res := newJudge(e, 2).Execute(context.Background(), req)
	if res.Status != StatusAllPassed {
		t.Fatalf("status %s (%s), want all_passed", res.Status, res.Summary)
	}
	if len(e.opts) != 1 {
		t.Fatalf("Prepare called %d times, want once", len(e.opts))
	}
	got := e.opts[0]
	if !slices.Equal(got.Args, req.Args) || !slices.Equal(got.CompilerFlags, req.CompilerFlags) || got.Env["GREETING"] != "hi" {
		t.Errorf("engine got %+v, want the request's args, flags and env", got)
	}
}

// An engine's refusal of the options is a validation error, with no
// tests run, as the judge's own refusals are.
func TestRefusedOptionsAreAValidationError(t *testing.T) {
	e := newEngine(nil)
	e.prepareErr = &ValidationError{Message: `Invalid compiler_flags[0]: "-B/tmp" is refused`}
	res := newJudge(e, 1).Execute(context.Background(), request("c", "int main(){}", TestCase{ExpectedOutput: ""}))
	if res.Status != StatusSandboxError || res.ErrorInfo == nil || res.ErrorInfo.Code != CodeValidationError ||
		res.ErrorInfo.Stage != StageValidation {
		t.Fatalf("result %+v (%+v), want sandbox_error with VALIDATION_ERROR at validation", res, res.ErrorInfo)
	}
	if res.ErrorInfo.Message != e.prepareErr.Error() || len(res.TestResults) != 0 {
		t.Errorf("message %q with %d test results, want %q and none", res.ErrorInfo.Message, len(res.TestResults), e.prepareErr.Error())
	}
}

// The rules of args and env that hold for every language refuse a
// request before any engine sees it.
func TestValidateOptions(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*ExecutionRequest)
		want string
	}{
		{"NUL argument", func(r *ExecutionRequest) { r.Args = []string{"ok", "a\x00b"} }, "Invalid args[1]: contains a NUL byte"},
		{"LD_PRELOAD", func(r *ExecutionRequest) { r.Env = map[string]string{"LD_PRELOAD": "x.so"} }, "Invalid env.LD_PRELOAD"},
		{"PATH", func(r *ExecutionRequest) { r.Env = map[string]string{"PATH": "/workspace"} }, "Invalid env.PATH"},
		{"lower case", func(r *ExecutionRequest) { r.Env = map[string]string{"home": "x"} }, `Invalid env["home"]`},
		{"too many flags", func(r *ExecutionRequest) { r.CompilerFlags = make([]string, 33) }, "Invalid compiler_flags: 33 flags"},
	} {
		req := request("python", "print(1)", TestCase{ExpectedOutput: "1"})
		tt.edit(&req)
		e := newEngine(nil)
		res := newJudge(e, 1).Execute(context.Background(), req)
		if res.ErrorInfo == nil || res.ErrorInfo.Code != CodeValidationError || !strings.HasPrefix(res.ErrorInfo.Message, tt.want) {
			t.Errorf("%s: result %+v, want VALIDATION_ERROR %q", tt.name, res.ErrorInfo, tt.want)
		}
		if len(e.opts) != 0 {
			t.Errorf("%s: the engine was asked to prepare a refused request", tt.name)
		}
	}
}
