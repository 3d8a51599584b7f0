package sandbox

import "errors"

// Error classes returned by backends. Callers test them with errors.Is.
var (
	// ErrInvalidSpec: the spec is malformed or a limit is out of range.
	ErrInvalidSpec = errors.New("invalid sandbox spec")
	// ErrUnavailable: the backend cannot work on this machine.
	ErrUnavailable = errors.New("sandbox backend unavailable")
	// ErrSetup: the sandbox could not be prepared or the program could not
	// be started (for example its interpreter is missing).
	ErrSetup = errors.New("sandbox setup failed")
)
