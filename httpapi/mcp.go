package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/coderunner/coderunner/execute"
)

// handleMCP is /mcp, the MCP streamable HTTP transport. A POST of tool
// calls counts against its key's max_concurrent while it lasts. Its
// requests end when the server drains, so that the long-lived event streams of MCP
// clients do not hold the shutdown until its deadline.
func (s *Server) handleMCP(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, s.maxBody)
	if c := clientOf(r.Context()); c != nil && c.maxConc > 0 && r.Method == http.MethodPost {
		// A tool call runs until its POST is answered (or goes away):
		// the POST holds the key's executions while it lasts.
		release, ok := s.hold(w, r, mcpCalls(r))
		if !ok {
			return
		}
		defer release()
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	stop := context.AfterFunc(s.runCtx, func() { cancel(context.Cause(s.runCtx)) })
	defer stop()
	s.mcp.ServeHTTP(w, r.WithContext(ctx))
}

// slotRunner runs the MCP endpoint's executions with the server's Runner
// in the running slots and queue that /v1/run uses: an MCP call waits
// for a slot like an HTTP request, and is refused, as a tool error whose
// message says why, when the queue is full or the server is not ready.
type slotRunner struct{ s *Server }

var _ Runner = slotRunner{}

func (sr slotRunner) Execute(ctx context.Context, req execute.Request) (*execute.Result, error) {
	s := sr.s
	ctx, release, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	start := time.Now()
	res, err := s.runner.Execute(ctx, req)
	if err != nil || res == nil {
		return res, err
	}
	s.metrics.finished("mcp", string(res.Status), runReason(res), time.Since(start))
	return res, nil
}
