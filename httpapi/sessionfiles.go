package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/wsfile"
	"github.com/coderunner/coderunner/session"
)

// CodeConflict answers a file operation that the workspace's state
// refuses: a directory, a link or a special file where a file is asked
// for, or a workspace too large to list.
const CodeConflict = "conflict"

// SessionFiles reads and writes the files of sessions; *session.Store is
// one. A Sessions that is also a SessionFiles serves the files endpoints;
// otherwise they answer 404, as no session exists. The session is the one
// of the caller's credential (session.Owner of ctx).
type SessionFiles interface {
	WriteFile(ctx context.Context, id, path string, r io.Reader) (session.File, error)
	OpenFile(ctx context.Context, id, path string) (*session.FileReader, error)
	DeleteFile(ctx context.Context, id, path string) error
	ListFiles(ctx context.Context, id string) ([]session.File, error)
	// MaxFileBytes is the largest body a write takes.
	MaxFileBytes() int64
}

var _ SessionFiles = (*session.Store)(nil)

// sessionFiles returns the server's SessionFiles and the request's
// session id, or answers the request and returns false. None of the
// files endpoints takes a running slot: they are quick, and a client must
// be able to read or free its files while every slot is busy. They wait,
// with the request, for a call running in the session.
func (s *Server) sessionFiles(w http.ResponseWriter, r *http.Request) (SessionFiles, string, bool) {
	id := r.PathValue("id")
	if err := execute.ValidateSessionID(id); err != nil {
		writeError(w, r, http.StatusBadRequest, CodeBadRequest, "id: "+err.Error())
		return nil, "", false
	}
	files, ok := s.sessions.(SessionFiles)
	if !ok {
		writeError(w, r, http.StatusNotFound, CodeNotFound, "id: "+errNoSessions.Error())
		return nil, "", false
	}
	return files, id, true
}

// filePath returns the request's file path, or answers 400 naming it.
func filePath(w http.ResponseWriter, r *http.Request) (string, bool) {
	p := r.PathValue("path")
	if err := wsfile.CheckPath(p); err != nil {
		writeError(w, r, http.StatusBadRequest, CodeBadRequest, "path: "+err.Error())
		return "", false
	}
	return p, true
}

// handlePutFile is PUT /v1/sessions/{id}/files/{path}: the raw body
// becomes the file (any bytes; at most sessions.max_file_mb, read as it
// arrives and never held whole). The session starts if it is new.
func (s *Server) handlePutFile(w http.ResponseWriter, r *http.Request) {
	files, id, ok := s.sessionFiles(w, r)
	if !ok {
		return
	}
	p, ok := filePath(w, r)
	if !ok {
		return
	}
	limit := files.MaxFileBytes()
	if r.ContentLength > limit {
		writeError(w, r, http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
			fmt.Sprintf("body: %d bytes, more than the %d a file may hold (sessions.max_file_mb)", r.ContentLength, limit))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	body := &tracked{r: r.Body}
	f, err := files.WriteFile(r.Context(), id, p, body)
	if err != nil {
		if s.tooLarge(w, r, body) {
			return
		}
		s.refuseFile(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, f)
}

// handleGetFile is GET /v1/sessions/{id}/files/{path}: the file's bytes,
// application/octet-stream. Only a regular file is read: a link is never
// followed, a FIFO never opened for reading.
func (s *Server) handleGetFile(w http.ResponseWriter, r *http.Request) {
	files, id, ok := s.sessionFiles(w, r)
	if !ok {
		return
	}
	p, ok := filePath(w, r)
	if !ok {
		return
	}
	f, err := files.OpenFile(r.Context(), id, p)
	if err != nil {
		s.refuseFile(w, r, err)
		return
	}
	defer f.Close()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(f.Size, 10))
	// Bytes a program wrote: never rendered by a browser as a page of
	// this server's.
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Disposition", "attachment")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	if _, err := io.CopyN(w, f, f.Size); err != nil && r.Context().Err() == nil {
		// The answer is under way: the client sees a short body.
		s.log.Info("a file's answer was cut short", "event", "file_read_failed", "request_id", requestID(r.Context()), "error", err)
	}
}

// handleDeleteFile is DELETE /v1/sessions/{id}/files/{path}: the file (or
// link, never followed) is removed; a directory is refused.
func (s *Server) handleDeleteFile(w http.ResponseWriter, r *http.Request) {
	files, id, ok := s.sessionFiles(w, r)
	if !ok {
		return
	}
	p, ok := filePath(w, r)
	if !ok {
		return
	}
	if err := files.DeleteFile(r.Context(), id, p); err != nil {
		s.refuseFile(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleListFiles is GET /v1/sessions/{id}/files: the session's regular
// files, sorted by path, each with its size and SHA-256.
func (s *Server) handleListFiles(w http.ResponseWriter, r *http.Request) {
	files, id, ok := s.sessionFiles(w, r)
	if !ok {
		return
	}
	list, err := files.ListFiles(r.Context(), id)
	if err != nil {
		s.refuseFile(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// refuseFile answers a refused file operation, naming the field.
func (s *Server) refuseFile(w http.ResponseWriter, r *http.Request, err error) {
	status, code, field := http.StatusBadRequest, CodeBadRequest, "id"
	switch {
	case r.Context().Err() != nil:
		s.cancelled(w, r)
		return
	case errors.Is(err, session.ErrInvalidID):
	case errors.Is(err, wsfile.ErrInvalidPath):
		field = "path"
	case errors.Is(err, session.ErrExpired):
		status, code = http.StatusNotFound, CodeSessionExpired
	case errors.Is(err, session.ErrNotFound):
		status, code = http.StatusNotFound, CodeNotFound
	case errors.Is(err, wsfile.ErrNotFound):
		status, code, field = http.StatusNotFound, CodeNotFound, "path"
	case errors.Is(err, wsfile.ErrIsDir), errors.Is(err, wsfile.ErrNotRegular), errors.Is(err, wsfile.ErrLink):
		status, code, field = http.StatusConflict, CodeConflict, "path"
	case errors.Is(err, wsfile.ErrTooMany):
		status, code = http.StatusConflict, CodeConflict
	case errors.Is(err, wsfile.ErrTooLarge):
		status, code, field = http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "body"
	case errors.Is(err, wsfile.ErrNoSpace), errors.Is(err, session.ErrSessionFull), errors.Is(err, session.ErrDiskFull):
		status, code = http.StatusInsufficientStorage, CodeStorageFull
	case errors.Is(err, session.ErrTooManySessions):
		s.sessionLimited(w, r, err, "id")
		return
	case errors.Is(err, session.ErrClosed):
		status, code = http.StatusServiceUnavailable, CodeShuttingDown
	default:
		s.log.Error("a file operation failed", "event", "file_failed", "request_id", requestID(r.Context()), "error", err)
		writeError(w, r, http.StatusInternalServerError, CodeInternal, "internal error; quote request id "+requestID(r.Context()))
		return
	}
	writeError(w, r, status, code, field+": "+err.Error())
}

// sessionLimited answers 429 a write that would start a session over a
// cap, naming the cap and when to retry.
func (s *Server) sessionLimited(w http.ResponseWriter, r *http.Request, err error, field string) {
	var le *session.LimitError
	if !errors.As(err, &le) {
		le = &session.LimitError{Limit: LimitServerSessions, RetryAfter: time.Second}
	}
	s.limited(w, r, CodeTooManySessions, le.Limit, le.RetryAfter, field+": "+err.Error())
}
