package session

import (
	"errors"
	"fmt"
	"time"

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
	// ErrExpired: the session ended because it was idle for its idle
	// timeout; its files are gone. An *ExpiredError says when. It
	// matches ErrNotFound too.
	ErrExpired = errors.New("session expired")
	// ErrInvalidTTL: a requested idle timeout is under 1 s or over
	// Options.MaxIdleTimeout.
	ErrInvalidTTL = errors.New("invalid session idle timeout")
	// ErrTooManySessions: starting the session would pass
	// Options.MaxSessions, or the owner's cap (WithMaxSessions). The
	// error is a *LimitError.
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

// ExpiredError is a session that expired: idle for its idle timeout, it
// ended and its files were removed. The Store remembers recent expiries
// (Options.RememberExpired) to tell them apart from ids never used.
type ExpiredError struct {
	// ID is the session's id.
	ID string
	// At is when it expired.
	At time.Time
}

func (e *ExpiredError) Error() string {
	return fmt.Sprintf("%v: session %q was idle for its idle timeout and ended at %s; its files are gone (a new call with this id starts it anew)",
		ErrExpired, e.ID, e.At.UTC().Format(time.RFC3339))
}

// Is makes an ExpiredError match ErrExpired and ErrNotFound.
func (e *ExpiredError) Is(target error) bool { return target == ErrExpired || target == ErrNotFound }

// The limits a LimitError names.
const (
	// LimitOwnerSessions is the owner's cap (WithMaxSessions): an API
	// key's max_sessions.
	LimitOwnerSessions = "max_sessions"
	// LimitServerSessions is Options.MaxSessions (sessions.max_count).
	LimitServerSessions = "sessions.max_count"
)

// LimitError is a session refused by a cap on the number of sessions. It
// matches ErrTooManySessions.
type LimitError struct {
	// Limit is LimitOwnerSessions or LimitServerSessions.
	Limit string
	// Max is the cap.
	Max int
	// RetryAfter is when an idle session may have expired and made room.
	RetryAfter time.Duration
	msg        string
}

func (e *LimitError) Error() string { return e.msg }

// Unwrap makes a LimitError match ErrTooManySessions.
func (e *LimitError) Unwrap() error { return ErrTooManySessions }
