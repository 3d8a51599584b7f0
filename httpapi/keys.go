package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/coderunner/coderunner/session"
)

// APIKey is one client's credential and limits. The server keeps only
// the key's digest.
type APIKey struct {
	// Name identifies the client in logs and metrics (a label: keep it
	// short and of a bounded set) and owns its sessions.
	Name string
	// SHA256 is the digest of the key the client sends as
	// "Authorization: Bearer <key>".
	SHA256 [sha256.Size]byte
	// RequestsPerSecond and Burst bound the client's requests with a
	// token bucket; RequestsPerSecond 0 means no bound, and Burst 0 means
	// RequestsPerSecond rounded up.
	RequestsPerSecond float64
	Burst             int
	// MaxConcurrent bounds the client's executions running or waiting
	// for a slot at once (its MCP calls included); 0 means no bound.
	MaxConcurrent int
	// MaxSessions bounds the client's open sessions; 0 means only the
	// session store's cap.
	MaxSessions int
}

// The limits a 429 names, in the error's limit field.
const (
	LimitRate        = "requests_per_second"
	LimitConcurrency = "max_concurrent"
	LimitSessions    = session.LimitOwnerSessions
	// LimitServerSessions is the server's cap on sessions
	// (sessions.max_count).
	LimitServerSessions = session.LimitServerSessions
)

// legacyName is the name of the i-th token of Options.APIToken and
// APITokens: api_token, api_token_2, ….
func legacyName(i int) string {
	if i == 0 {
		return "api_token"
	}
	return "api_token_" + strconv.Itoa(i+1)
}

// client is a credential the server accepts, with its limits and their
// state.
type client struct {
	name string
	hash [sha256.Size]byte
	// owner owns the client's sessions (session.WithOwner): for a named
	// key "key:" and its name, so that its sessions outlive a change of
	// the key; for a token of APIToken half its digest in hex, as before
	// keys had names. Never the key itself.
	owner       string
	limiter     *rate.Limiter // nil: no bound
	rps         float64
	burst       int
	maxConc     int
	maxSessions int

	mu     sync.Mutex
	active int

	requests  interface{ Inc() }
	executing interface{ Set(float64) }
}

// newClients builds the clients of the options' tokens and keys.
func newClients(opts Options, m *metrics) ([]*client, error) {
	var out []*client
	add := func(c *client) {
		c.requests = m.keyRequests.WithLabelValues(c.name)
		c.executing = m.keyActive.WithLabelValues(c.name)
		out = append(out, c)
	}
	n := 0
	for _, tok := range append([]string{opts.APIToken}, opts.APITokens...) {
		if tok == "" {
			continue
		}
		h := sha256.Sum256([]byte(tok))
		add(&client{name: legacyName(n), hash: h, owner: hex.EncodeToString(h[:16])})
		n++
	}
	names := map[string]bool{}
	for i, k := range opts.APIKeys {
		switch {
		case k.Name == "":
			return nil, fmt.Errorf("httpapi: API key %d has no name", i)
		case names[k.Name] || strings.HasPrefix(k.Name, "api_token"):
			return nil, fmt.Errorf("httpapi: API key name %q is used twice or reserved", k.Name)
		case math.IsNaN(k.RequestsPerSecond) || k.RequestsPerSecond < 0 || k.Burst < 0 || k.MaxConcurrent < 0 || k.MaxSessions < 0:
			return nil, fmt.Errorf("httpapi: API key %q has a negative limit", k.Name)
		}
		names[k.Name] = true
		c := &client{name: k.Name, hash: k.SHA256, owner: "key:" + k.Name,
			maxConc: k.MaxConcurrent, maxSessions: k.MaxSessions}
		if k.RequestsPerSecond > 0 {
			c.rps, c.burst = k.RequestsPerSecond, k.Burst
			if c.burst == 0 {
				c.burst = max(1, int(math.Ceil(k.RequestsPerSecond)))
			}
			c.limiter = rate.NewLimiter(rate.Limit(c.rps), c.burst)
		}
		add(c)
	}
	return out, nil
}

// match finds the client whose key is got, in time independent of which
// matched and of the key's length (digests are compared, every one).
func (s *Server) match(got string) *client {
	h := sha256.Sum256([]byte(got))
	found, which := 0, 0
	for i, c := range s.clients {
		eq := subtle.ConstantTimeCompare(h[:], c.hash[:])
		found |= eq
		which = subtle.ConstantTimeSelect(eq, i, which)
	}
	if found != 1 {
		return nil
	}
	return s.clients[which]
}

type clientKey struct{}

// clientOf is the client that sent the request of ctx, or nil without
// credentials.
func clientOf(ctx context.Context) *client {
	c, _ := ctx.Value(clientKey{}).(*client)
	return c
}

// allow takes one request from c's bucket; when it is empty, wait is how
// long until it holds one again.
func (c *client) allow(now time.Time) (wait time.Duration, ok bool) {
	if c.limiter == nil {
		return 0, true
	}
	r := c.limiter.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, false
	}
	return 0, true
}

// acquire counts n executions of c in, unless that would pass its
// max_concurrent. release must be called once when they end.
func (c *client) acquire(n int) (release func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.maxConc > 0 && c.active+n > c.maxConc {
		return nil, false
	}
	c.active += n
	c.executing.Set(float64(c.active))
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.active -= n
			c.executing.Set(float64(c.active))
			c.mu.Unlock()
		})
	}, true
}

// limited answers 429 naming the limit, with Retry-After in whole
// seconds, at least one.
func (s *Server) limited(w http.ResponseWriter, r *http.Request, code, limit string, retry time.Duration, msg string) {
	name := ""
	if c := clientOf(r.Context()); c != nil {
		name = c.name
	}
	s.metrics.keyLimited.WithLabelValues(name, limit).Inc()
	secs := max(1, int64(math.Ceil(retry.Seconds())))
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	writeJSON(w, http.StatusTooManyRequests, errorBody{Error: errorDetail{
		Code: code, Message: fmt.Sprintf("%s; retry in %d s", msg, secs), RequestID: requestID(r.Context()), Limit: limit,
	}})
}

// hold counts n executions of the request's client in, answering 429
// when that passes its max_concurrent. ok is false when the request was
// answered.
func (s *Server) hold(w http.ResponseWriter, r *http.Request, n int) (release func(), ok bool) {
	c := clientOf(r.Context())
	if c == nil || n == 0 {
		return func() {}, true
	}
	release, ok = c.acquire(n)
	if !ok {
		s.limited(w, r, CodeConcurrencyLimited, LimitConcurrency, time.Second,
			fmt.Sprintf("key %q has %d executions running or waiting, its max_concurrent", c.name, c.maxConc))
	}
	return release, ok
}

// authenticate finds the request's client, answering 401 when there is
// none and 429 when its requests_per_second is spent. ok is false when
// the request was answered.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*client, bool) {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	c := s.match(got)
	if !ok || c == nil {
		s.metrics.authFailures.Inc()
		writeError(w, r, http.StatusUnauthorized, CodeUnauthorized, "missing or wrong Authorization: Bearer token")
		return nil, false
	}
	if l := logOf(r.Context()); l != nil {
		l.key = c.name
	}
	c.requests.Inc()
	if wait, ok := c.allow(time.Now()); !ok {
		ctx := context.WithValue(r.Context(), clientKey{}, c)
		s.limited(w, r.WithContext(ctx), CodeRateLimited, LimitRate, wait,
			fmt.Sprintf("key %q sent more than %s requests per second (burst %d)", c.name, strconv.FormatFloat(c.rps, 'g', -1, 64), c.burst))
		return nil, false
	}
	return c, true
}

// mcpCalls counts the tool calls of an MCP POST body, which each run
// until answered on the POST's own stream: the executions the body
// starts. It reads the body and puts back what it read, followed by the
// reading's error, for the transport to answer as it does.
func mcpCalls(r *http.Request) int {
	b, err := io.ReadAll(r.Body)
	var rest io.Reader = bytes.NewReader(b)
	if err != nil {
		rest = io.MultiReader(rest, errReader{err})
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{rest, r.Body}
	type message struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	var msgs []message
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		_ = json.Unmarshal(t, &msgs)
	} else {
		var m message
		if json.Unmarshal(t, &m) == nil {
			msgs = append(msgs, m)
		}
	}
	n := 0
	for _, m := range msgs {
		if m.Method == "tools/call" && len(m.ID) > 0 && string(m.ID) != "null" {
			n++
		}
	}
	return n
}

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// requestLog is what the request log line learns from inner handlers.
type requestLog struct {
	// key is the name of the client's key.
	key string
}

type requestLogKey struct{}

func logOf(ctx context.Context) *requestLog {
	l, _ := ctx.Value(requestLogKey{}).(*requestLog)
	return l
}

// errNoSessions answers the session endpoints when sessions are off.
var errNoSessions = errors.New("sessions are turned off on this server")
