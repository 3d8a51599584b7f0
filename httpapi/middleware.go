package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"runtime/debug"
	"time"

	"github.com/coderunner/coderunner/internal/httpguard"
	"github.com/coderunner/coderunner/session"
)

type ctxKey int

const requestIDKey ctxKey = iota

// requestID is the id of the request ctx belongs to.
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// recorder remembers the status a handler wrote, and gives each write
// wt to reach the client: a client that stops reading is cut off without
// bounding how long the answer may take to come.
type recorder struct {
	http.ResponseWriter
	status int
	rc     *http.ResponseController
	wt     time.Duration
}

// renew moves the write deadline wt ahead. Errors mean the writer has no
// connection (a test's recorder), which needs no deadline.
func (r *recorder) renew() { _ = r.rc.SetWriteDeadline(time.Now().Add(r.wt)) }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.renew()
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.renew()
	return r.ResponseWriter.Write(b)
}

// FlushError flushes with a renewed deadline, for http.ResponseController.
func (r *recorder) FlushError() error {
	r.renew()
	return r.rc.Flush()
}

// deadlineBody is a request body read under a deadline, which it lifts
// once the body is read whole: the connection's read deadline would
// otherwise cancel the request when it passes while the run goes on.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// bodyTimedOut reports whether err is the end of the body's deadline.
func bodyTimedOut(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// Unwrap lets http.ResponseController reach the connection.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// observe gives every request its id, logs it, counts it, and turns a
// panic into a 500 whose stack goes to the log only.
func (s *Server) observe(route string, next http.Handler) http.Handler {
	counted := s.metrics.requestCounters(route)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-ID")
		if !requestIDPattern.MatchString(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-ID", id)
		rl := &requestLog{}
		r = r.WithContext(context.WithValue(context.WithValue(r.Context(), requestIDKey, id), requestLogKey{}, rl))
		rc := http.NewResponseController(w)
		rec := &recorder{ResponseWriter: w, rc: rc, wt: s.wt}
		if r.Body != nil && r.Body != http.NoBody {
			// A body trickled slowly must not hold a connection, and the
			// request's place in the queue, for ever.
			if rc.SetReadDeadline(time.Now().Add(s.rt)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		start := time.Now()
		defer func() {
			if p := recover(); p != nil {
				if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
					panic(p)
				}
				s.log.Error("handler panicked", "event", "panic", "request_id", id, "path", r.URL.Path,
					"error", fmt.Sprint(p), "stack", string(debug.Stack()))
				if rec.status == 0 {
					writeError(rec, r, http.StatusInternalServerError, CodeInternal,
						"internal error; quote request id "+id+" to the operator")
				}
			}
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			counted(status).Inc()
			attrs := []any{"event", "http_request", "request_id", id,
				"method", r.Method, "path", r.URL.Path, "status", status,
				"duration_ms", time.Since(start).Milliseconds()}
			if rl.key != "" {
				// The key's name, never the key.
				attrs = append(attrs, "key", rl.key)
			}
			s.log.Log(r.Context(), levelFor(route), "request", attrs...)
		}()
		next.ServeHTTP(rec, r)
	})
}

// levelFor keeps probes and scrapes out of the info log.
func levelFor(route string) slog.Level {
	if route == "/health" || route == "/metrics" {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// authorize requires one of the API tokens or keys when any is set, and
// holds each client to its requests_per_second. The request then acts on
// the client's sessions, within its max_sessions.
func (s *Server) authorize(next http.Handler) http.Handler {
	if len(s.clients) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		// Each client owns its sessions: a session_id names a different
		// session for each, over /v1/run, the session endpoints and /mcp
		// alike. The owner is a name or a digest, never the key itself.
		ctx := session.WithOwner(context.WithValue(r.Context(), clientKey{}, c), c.owner)
		if c.maxSessions > 0 {
			ctx = session.WithMaxSessions(ctx, c.maxSessions)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// guard refuses, with 403, a request whose Host or Origin is not this
// server's (httpguard.Hosts): a web page the caller visits must not be
// able to drive the API through the caller's browser, whether by DNS
// rebinding onto a loopback listener or by a cross-site request.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.hosts.Check(r); err != nil {
			writeError(w, r, http.StatusForbidden, CodeForbidden, err.Error())
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireJSON refuses, with 415, a body that does not say it is JSON. A
// web page can post text/plain, a form or multipart to any address
// without asking the server first; application/json makes the browser ask
// (a CORS preflight), which this server never grants.
func (s *Server) requireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ct := r.Header.Get("Content-Type"); !httpguard.IsJSON(ct) {
			msg := fmt.Sprintf("Content-Type %q is not application/json: send the JSON body with Content-Type: application/json", ct)
			if ct == "" {
				msg = "Content-Type is missing: send the JSON body with Content-Type: application/json"
			}
			writeError(w, r, http.StatusUnsupportedMediaType, CodeUnsupportedMedia, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}
