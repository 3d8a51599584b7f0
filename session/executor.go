package session

import (
	"context"
	"fmt"

	"github.com/coderunner/coderunner/execute"
)

// Executor runs single executions; *execute.Executor is one.
type Executor interface {
	Execute(ctx context.Context, req execute.Request) (*execute.Result, error)
}

// Execute runs req with ex. A request with a SessionID runs in that
// session's workspace, after the session's previous call and within its
// caps; the errors of Acquire are returned as refusals, like those of ex.
// A request without one runs as it is. On a nil Store, a request with a
// SessionID is refused with ErrDisabled.
func (s *Store) Execute(ctx context.Context, ex Executor, req execute.Request) (*execute.Result, error) {
	switch req.Mode {
	case "":
	case execute.ModeInterpreter:
		return s.interpret(ctx, req)
	default:
		return nil, fmt.Errorf("%w %q: it is either absent or %q", execute.ErrInvalidMode, req.Mode, execute.ModeInterpreter)
	}
	if req.SessionID == nil {
		if req.SessionTTL != 0 {
			return nil, fmt.Errorf("%w: an idle timeout needs a session_id", ErrInvalidTTL)
		}
		return ex.Execute(ctx, req)
	}
	if s == nil {
		return nil, fmt.Errorf("%w: session_id %q cannot be used", ErrDisabled, *req.SessionID)
	}
	if req.Workspace != "" {
		return nil, fmt.Errorf("session %q: the request already names a workspace", *req.SessionID)
	}
	lease, err := s.AcquireTTL(ctx, *req.SessionID, req.SessionTTL)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	req.Workspace = lease.Dir()
	return ex.Execute(ctx, req)
}

// Wrap returns an Executor that runs requests through s.Execute with ex,
// for callers that take an Executor (the HTTP API's Runner).
func (s *Store) Wrap(ex Executor) Executor { return wrapped{s, ex} }

type wrapped struct {
	s  *Store
	ex Executor
}

func (w wrapped) Execute(ctx context.Context, req execute.Request) (*execute.Result, error) {
	return w.s.Execute(ctx, w.ex, req)
}

// Interpreter runs a cell in the live interpreter of the session a lease
// holds (package interp's Manager).
type Interpreter interface {
	Run(ctx context.Context, lease *Lease, req execute.Request) (*execute.Result, error)
}

// SetInterpreter has requests in the interpreter mode run by in. Without
// one they are refused with ErrDisabled. Call it before the Store is used.
func (s *Store) SetInterpreter(in Interpreter) { s.interp = in }

// interpret runs an interpreter's cell in its session.
func (s *Store) interpret(ctx context.Context, req execute.Request) (*execute.Result, error) {
	if req.SessionID == nil {
		return nil, fmt.Errorf("%w: %q needs a session_id: the session keeps the interpreter", execute.ErrInvalidMode, req.Mode)
	}
	if s == nil || s.interp == nil {
		return nil, fmt.Errorf("%w: session_id %q cannot be used in the interpreter mode", ErrDisabled, *req.SessionID)
	}
	if err := execute.ValidateSessionID(*req.SessionID); err != nil {
		return nil, err
	}
	lease, err := s.AcquireTTL(ctx, *req.SessionID, req.SessionTTL)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	return s.interp.Run(ctx, lease, req)
}

// Restart ends the live process of the session id of ctx's owner (its
// interpreter), so that its next call starts a fresh one; its files stay.
// It fails with ErrNotFound (or an *ExpiredError) when there is no such
// session.
func (s *Store) Restart(ctx context.Context, id string) error {
	if _, err := s.Info(ctx, id); err != nil {
		return err
	}
	lease, err := s.Acquire(ctx, id)
	if err != nil {
		return err
	}
	defer lease.Release()
	if a := lease.Attached(); a != nil {
		lease.Attach(nil)
		return a.Close()
	}
	return nil
}
