package coderunner

import (
	"errors"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/multifile"
	"github.com/coderunner/coderunner/session"
)

// Error classes of refused requests. Callers test them with errors.Is.
var (
	// ErrUnsupportedLanguage: the language is not in the language table.
	ErrUnsupportedLanguage = errors.New("unsupported language")
	// ErrEmptyCode: the code is empty or only white space.
	ErrEmptyCode = execute.ErrEmptyCode
	// ErrInvalidLimits: a field of ExecutionLimits is out of range; the
	// error is an *execute.LimitError naming it.
	ErrInvalidLimits = execute.ErrInvalidLimits
	// ErrInvalidFiles: a file or the entry of a program of several files
	// is refused; the error is a *multifile.Error naming the field
	// ("files[2].path").
	ErrInvalidFiles = multifile.ErrInvalid
	// ErrInvalidSessionID: the session id does not match
	// ^[A-Za-z0-9_-]{1,64}$.
	ErrInvalidSessionID = execute.ErrInvalidSessionID
	// ErrInvalidMode: WithInterpreter without WithSession, in a language
	// other than Python and JavaScript, or with what a cell does not take.
	ErrInvalidMode = execute.ErrInvalidMode
	// ErrInvalidOption: the program arguments, compiler flags or
	// environment break a rule (WithArgs, WithCompilerFlags, WithEnv);
	// the error is a *lang.OptionError naming the field.
	ErrInvalidOption = lang.ErrInvalidOption
	// ErrBackendUnavailable: no sandbox backend works on this machine.
	ErrBackendUnavailable = errors.New("no sandbox backend is available")
	// ErrTooManySessions, ErrSessionFull and ErrDiskFull: a session cap
	// was reached; ErrSessionNotFound: no such session; ErrSessionExpired:
	// the session ended idle and its files are gone (it matches
	// ErrSessionNotFound too; the error is a *session.ExpiredError, and
	// only the first call naming the session fails with it);
	// ErrInvalidSessionTTL: WithSessionTTL is out of range or has no
	// WithSession.
	ErrTooManySessions   = session.ErrTooManySessions
	ErrSessionFull       = session.ErrSessionFull
	ErrDiskFull          = session.ErrDiskFull
	ErrSessionNotFound   = session.ErrNotFound
	ErrSessionExpired    = session.ErrExpired
	ErrInvalidSessionTTL = session.ErrInvalidTTL
)
