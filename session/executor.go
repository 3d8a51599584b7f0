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
