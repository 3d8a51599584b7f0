package execute

import "errors"

// Error classes of refused requests. Callers test them with errors.Is; an
// unknown language is reported with lang.ErrUnknownLanguage, refused files
// or entry with a *multifile.Error (multifile.ErrInvalid) naming the field.
var (
	// ErrInvalidLimits: a field of ExecutionLimits is out of range. The
	// error is a *LimitError naming the field.
	ErrInvalidLimits = errors.New("invalid execution limits")
	// ErrEmptyCode: the request carries no code.
	ErrEmptyCode = errors.New("code is empty")
	// ErrCodeTooLarge: the code is longer than MaxCodeBytes.
	ErrCodeTooLarge = errors.New("code is too large")
	// ErrStdinTooLarge: the standard input is longer than MaxStdinBytes.
	ErrStdinTooLarge = errors.New("stdin is too large")
	// ErrInvalidSessionID: the session id does not match
	// ^[A-Za-z0-9_-]{1,64}$.
	ErrInvalidSessionID = errors.New("invalid session_id")
	// ErrInvalidArtifacts: the artifacts options are out of range.
	ErrInvalidArtifacts = errors.New("invalid artifacts options")
	// ErrInvalidMode: the mode is unknown, or the request does not fit
	// it (an interpreter's cell needs a session_id, Python, and no files,
	// stdin or program options).
	ErrInvalidMode = errors.New("invalid mode")
)
