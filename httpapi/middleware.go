package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
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
		r = r.WithContext(context.WithValue(r.Context(), requestIDKey, id))
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
			s.log.Log(r.Context(), levelFor(route), "request", "event", "http_request", "request_id", id,
				"method", r.Method, "path", r.URL.Path, "status", status,
				"duration_ms", time.Since(start).Milliseconds())
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

// authorize requires one of the API tokens when they are set.
func (s *Server) authorize(next http.Handler) http.Handler {
	if len(s.tokenHashes) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		// Comparing digests keeps the time independent of the length of
		// the token as well as of its content; every token is compared,
		// so the time does not say which matched either.
		h := sha256.Sum256([]byte(got))
		match, which := 0, 0
		for i, th := range s.tokenHashes {
			eq := subtle.ConstantTimeCompare(h[:], th)
			match |= eq
			which = subtle.ConstantTimeSelect(eq, i, which)
		}
		if !ok || match != 1 {
			writeError(w, r, http.StatusUnauthorized, CodeUnauthorized, "missing or wrong Authorization: Bearer token")
			return
		}
		// Each token owns its sessions: a session_id names a different
		// session for each client, over /v1/run, DELETE /v1/sessions and
		// /mcp alike. The owner is a digest, never the token itself.
		next.ServeHTTP(w, r.WithContext(session.WithOwner(r.Context(), s.tokenOwners[which])))
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
