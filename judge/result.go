package judge

import (
	"fmt"
	"strings"
)

// maxDetailsRunes is how much of a failing test's stdout error_info.details
// quotes: its first 500 characters.
const maxDetailsRunes = 500

// buildResult makes the overall status, the summary
// and the error info from the per-test verdicts, which are in request order
// and already redacted for hidden tests.
func buildResult(req ExecutionRequest, results []TestResult, totalMS int64) ExecutionResult {
	passed, total, earned, unjudged := 0, len(results), false, 0
	for _, r := range results {
		switch {
		case r.Status == TestPassed:
			passed++
			earned = true
		case r.Status == TestPartial && r.Points != nil && *r.Points > 0:
			earned = true
		case r.Status == TestJudgeError:
			unjudged++
		}
	}
	if total == 0 {
		return ExecutionResult{
			RequestID:   req.RequestID,
			Status:      StatusSandboxError,
			TestResults: []TestResult{},
			TotalTimeMS: totalMS,
			Summary:     "No test cases were executed",
			ErrorInfo: &ExecutionError{
				Code:    CodeNoTests,
				Message: "No test results produced",
				Stage:   StageExecution,
			},
		}
	}

	has := func(s TestStatus) bool {
		for _, r := range results {
			if r.Status == s {
				return true
			}
		}
		return false
	}
	var status ExecutionStatus
	switch {
	case unjudged > 0:
		// The checker failed on some tests: whatever the others say, the
		// verdict on the solution is not known.
		status = StatusJudgeError
	case passed == total:
		status = StatusAllPassed
	case earned:
		status = StatusSomePassed
	case has(TestTimeout):
		status = StatusTimeout
	case has(TestMemoryExceeded):
		status = StatusMemoryExceeded
	case has(TestRuntimeError):
		status = StatusRuntimeError
	default:
		status = StatusAllFailed
	}

	summary := fmt.Sprintf("%d/%d test cases passed", passed, total)
	switch status {
	case StatusAllPassed:
		summary = fmt.Sprintf("All %d test cases passed", total)
	case StatusJudgeError:
		summary = fmt.Sprintf("%d/%d test cases passed; %d could not be judged", passed, total, unjudged)
	case StatusRuntimeError:
		for _, r := range results {
			if r.Status == TestRuntimeError {
				summary = fmt.Sprintf("%d/%d passed. Runtime error: %s", passed, total, deref(r.ErrorMessage))
				break
			}
		}
	}

	var info *ExecutionError
	if status != StatusAllPassed && status != StatusSomePassed {
		for i, r := range results {
			if r.Status == TestPassed || status == StatusJudgeError && r.Status != TestJudgeError {
				continue
			}
			info = &ExecutionError{
				Code:    strings.ToUpper(string(r.Status)),
				Message: deref(r.ErrorMessage),
				Stage:   StageExecution,
			}
			if info.Message == "" {
				info.Message = fmt.Sprintf("Test %s failed", r.TestID)
			}
			switch {
			case i < len(req.TestCases) && req.TestCases[i].IsHidden:
				info.Details = strp("")
			case r.ActualOutput != "":
				info.Details = strp(firstRunes(r.ActualOutput, maxDetailsRunes))
			}
			break
		}
	}

	return ExecutionResult{
		RequestID:   req.RequestID,
		Status:      status,
		TestResults: results,
		TotalTimeMS: totalMS,
		Summary:     summary,
		ErrorInfo:   info,
	}
}

// InvalidRequestResult is the result of a refused request: sandbox_error with error_info
// {code: VALIDATION_ERROR, stage: validation} and no test results. Callers
// that fail to decode a request use it too, so that every refusal looks
// alike.
func InvalidRequestResult(requestID string, err error, totalMS int64) ExecutionResult {
	msg := err.Error()
	return ExecutionResult{
		RequestID:   requestID,
		Status:      StatusSandboxError,
		TestResults: []TestResult{},
		TotalTimeMS: totalMS,
		Summary:     "Validation error: " + msg,
		ErrorInfo: &ExecutionError{
			Code:    CodeValidationError,
			Message: msg,
			Stage:   StageValidation,
		},
	}
}

// unsupportedLanguageResult is the answer to a language the engine does not
// know: sandbox_error with error_info UNSUPPORTED_LANGUAGE.
func unsupportedLanguageResult(req ExecutionRequest, totalMS int64) ExecutionResult {
	return ExecutionResult{
		RequestID:   req.RequestID,
		Status:      StatusSandboxError,
		TestResults: []TestResult{},
		TotalTimeMS: totalMS,
		Summary:     "Unsupported language: " + req.Language,
		ErrorInfo: &ExecutionError{
			Code:    CodeUnsupportedLanguage,
			Message: fmt.Sprintf("Language %s is not supported", req.Language),
			Stage:   StageValidation,
		},
	}
}

// compilationErrorResult is the answer to a failed compilation.
func compilationErrorResult(req ExecutionRequest, ce *CompileError, totalMS int64) ExecutionResult {
	msg := ce.Output
	if msg == "" {
		msg = "Compilation failed"
	}
	info := &ExecutionError{
		Code:    CodeCompilationError,
		Message: msg,
		Stage:   StageCompilation,
		Details: strp(ce.Stdout),
	}
	return ExecutionResult{
		RequestID:         req.RequestID,
		Status:            StatusCompilationError,
		TestResults:       []TestResult{},
		TotalTimeMS:       totalMS,
		CompilationOutput: strp(msg),
		Summary:           "Compilation failed: " + msg,
		ErrorInfo:         info,
	}
}

// sandboxErrorResult reports a failure of the machinery at a stage. It
// carries no test results: none of them can be trusted.
func sandboxErrorResult(req ExecutionRequest, stage string, err error, totalMS int64) ExecutionResult {
	msg := err.Error()
	return ExecutionResult{
		RequestID:   req.RequestID,
		Status:      StatusSandboxError,
		TestResults: []TestResult{},
		TotalTimeMS: totalMS,
		Summary:     "Sandbox error: " + msg,
		ErrorInfo: &ExecutionError{
			Code:    CodeSandboxError,
			Message: msg,
			Stage:   stage,
		},
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func firstRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}
