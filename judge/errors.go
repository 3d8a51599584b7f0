package judge

import "errors"

// Error classes. Callers test them with errors.Is.
var (
	// ErrUnsupportedLanguage is wrapped by Engine.Prepare for a language it
	// does not know.
	ErrUnsupportedLanguage = errors.New("unsupported language")
	// ErrInvalidRequest is wrapped by DecodeRequest when the body is not a
	// well-formed request.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrRequestTooLarge is wrapped by DecodeRequest when the body exceeds
	// MaxRequestBytes.
	ErrRequestTooLarge = errors.New("request too large")
)

// CompileError is returned by Engine.Prepare when the code does not compile.
// It is a verdict on the code, not a failure of the machinery.
type CompileError struct {
	// Output is the compiler's diagnostics (usually its stderr), or a
	// short reason such as "Compilation timed out".
	Output string
	// Stdout is whatever else the compiler printed; it may be empty.
	Stdout string
}

// Error implements error.
func (e *CompileError) Error() string {
	if e.Output == "" {
		return "compilation failed"
	}
	return "compilation failed: " + e.Output
}
