package session

import (
	"errors"

	"github.com/coderunner/coderunner/execute"
)

// Error classes of the Store. Callers test them with errors.Is; the
// messages of the wrapping errors name the session and the cap.
var (
	// ErrInvalidID: the id does not match ^[A-Za-z0-9_-]{1,64}$. It is
	// execute.ErrInvalidSessionID, so either name matches.
	ErrInvalidID = execute.ErrInvalidSessionID
	// ErrNotFound: no session has this id (it was never used, or it ended).
	ErrNotFound = errors.New("session not found")
	// ErrTooManySessions: starting the session would pass
	// Options.MaxSessions.
	ErrTooManySessions = errors.New("too many sessions")
	// ErrSessionFull: the session's workspace holds more than
	// Options.MaxBytes or Options.MaxFiles; it takes no more calls.
	ErrSessionFull = errors.New("session workspace is over its cap")
	// ErrDiskFull: all sessions together use Options.MaxTotalBytes.
	ErrDiskFull = errors.New("sessions use all the disk allowed to them")
	// ErrDisabled: a request names a session but no Store was configured.
	ErrDisabled = errors.New("sessions are turned off")
	// ErrClosed: the Store was closed.
	ErrClosed = errors.New("session store is closed")
)
