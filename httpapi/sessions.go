package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/session"
)

// handleDeleteSession is DELETE /v1/sessions/{id}: it ends the session and
// removes its workspace (a call running in it finishes first). It takes
// no running slot: removing a workspace is quick, and a client must be
// able to free its disk while every slot is busy.
func (s *Server) handleDeleteSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := execute.ValidateSessionID(id); err != nil {
		writeError(w, r, http.StatusBadRequest, CodeBadRequest, "id: "+err.Error())
		return
	}
	if s.sessions == nil {
		writeError(w, r, http.StatusNotFound, CodeNotFound, "id: "+errNoSessions.Error())
		return
	}
	err := s.sessions.DeleteContext(r.Context(), id)
	switch {
	case err == nil:
		w.WriteHeader(http.StatusNoContent)
	case s.refuseSession(w, r, err):
	default:
		s.log.Error("unable to delete a session", "event", "session_delete_failed", "request_id", requestID(r.Context()), "error", err)
		writeError(w, r, http.StatusInternalServerError, CodeInternal, "internal error; quote request id "+requestID(r.Context()))
	}
}

// restarter restarts a session's interpreter; *session.Store is one.
type restarter interface {
	Restart(ctx context.Context, id string) error
}

// handleRestartSession is POST /v1/sessions/{id}/restart: the session's
// interpreter is ended (its variables lost, its files kept) and the next
// call in the interpreter mode starts a fresh one.
func (s *Server) handleRestartSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := execute.ValidateSessionID(id); err != nil {
		writeError(w, r, http.StatusBadRequest, CodeBadRequest, "id: "+err.Error())
		return
	}
	rs, ok := s.sessions.(restarter)
	if s.sessions == nil || !ok {
		writeError(w, r, http.StatusNotFound, CodeNotFound, "id: "+errNoSessions.Error())
		return
	}
	err := rs.Restart(r.Context(), id)
	switch {
	case err == nil:
		w.WriteHeader(http.StatusNoContent)
	case s.refuseSession(w, r, err):
	case r.Context().Err() != nil:
		s.cancelled(w, r)
	default:
		s.log.Error("unable to restart a session", "event", "session_restart_failed", "request_id", requestID(r.Context()), "error", err)
		writeError(w, r, http.StatusInternalServerError, CodeInternal, "internal error; quote request id "+requestID(r.Context()))
	}
}

// sessionList is the GET /v1/sessions body.
type sessionList struct {
	Sessions []session.Info `json:"sessions"`
}

// handleListSessions is GET /v1/sessions: the caller's sessions (those
// of its key), none of any other.
func (s *Server) handleListSessions(w http.ResponseWriter, r *http.Request) {
	list := []session.Info{}
	if s.sessions != nil {
		list = s.sessions.List(r.Context())
	}
	writeJSON(w, http.StatusOK, sessionList{Sessions: list})
}

// handleGetSession is GET /v1/sessions/{id}: one of the caller's
// sessions. One that expired recently answers 404 session_expired, one
// never seen (or another key's) 404 not_found.
func (s *Server) handleGetSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := execute.ValidateSessionID(id); err != nil {
		writeError(w, r, http.StatusBadRequest, CodeBadRequest, "id: "+err.Error())
		return
	}
	if s.sessions == nil {
		writeError(w, r, http.StatusNotFound, CodeNotFound, "id: "+errNoSessions.Error())
		return
	}
	info, err := s.sessions.Info(r.Context(), id)
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, info)
	case s.refuseSession(w, r, err):
	default:
		s.log.Error("unable to describe a session", "event", "session_info_failed", "request_id", requestID(r.Context()), "error", err)
		writeError(w, r, http.StatusInternalServerError, CodeInternal, "internal error; quote request id "+requestID(r.Context()))
	}
}

// refuseSession answers the errors of a call on one session (an invalid
// id, an expired or unknown session, a store shutting down) and reports
// whether err was one of them.
func (s *Server) refuseSession(w http.ResponseWriter, r *http.Request, err error) bool {
	switch {
	case errors.Is(err, session.ErrInvalidID):
		writeError(w, r, http.StatusBadRequest, CodeBadRequest, "id: "+err.Error())
	case errors.Is(err, session.ErrExpired):
		writeError(w, r, http.StatusNotFound, CodeSessionExpired, "id: "+err.Error())
	case errors.Is(err, session.ErrNotFound):
		writeError(w, r, http.StatusNotFound, CodeNotFound, "id: "+err.Error())
	case errors.Is(err, session.ErrClosed):
		writeError(w, r, http.StatusServiceUnavailable, CodeShuttingDown, err.Error())
	default:
		return false
	}
	return true
}
