package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/session"
)

// Keys of the tests: long random-looking strings, as operators make them.
const (
	aliceKey = "ck_alice_6f1d0c2b9a8e4f3d2c1b0a9f8e7d6c5b"
	bobKey   = "ck_bob_00112233445566778899aabbccddeeff00"
)

func bearerOf(key string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + key}
}

func keyOf(name, key string, edit func(*APIKey)) APIKey {
	k := APIKey{Name: name, SHA256: sha256.Sum256([]byte(key))}
	if edit != nil {
		edit(&k)
	}
	return k
}

// limitOf checks a 429 answer: its code, the limit it names, and a
// Retry-After of at least min seconds.
func limitOf(t *testing.T, rec *httptest.ResponseRecorder, code, limit string, minRetry int) {
	t.Helper()
	if rec.Code != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429: %s", rec.Code, rec.Body)
	}
	e := errOf(t, rec)
	if e.Code != code || e.Limit != limit {
		t.Errorf("error %+v, want code %s naming limit %s", e, code, limit)
	}
	if n, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || n < minRetry {
		t.Errorf("Retry-After %q, want at least %d", rec.Header().Get("Retry-After"), minRetry)
	}
}

func TestKeyRateLimit(t *testing.T) {
	// One request per thousand seconds after a burst of two: the third
	// request is refused whatever the machine's speed.
	s, _ := newTestServer(t, func(o *Options) {
		o.APIKeys = []APIKey{
			keyOf("alice", aliceKey, func(k *APIKey) { k.RequestsPerSecond, k.Burst = 0.001, 2 }),
			keyOf("bob", bobKey, nil),
		}
	})
	run := `{"language":"python","code":"print(1)"}`
	for i := range 2 {
		if rec := do(t, s, "POST", "/v1/run", run, bearerOf(aliceKey)); rec.Code != 200 {
			t.Fatalf("request %d of the burst: %d %s", i+1, rec.Code, rec.Body)
		}
	}
	// Every endpoint behind the key counts, and is refused alike.
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/v1/run", run},
		{"POST", "/v1/judge", `{"language":"python","code":"x","test_cases":[{"input":"","expected_output":""}]}`},
		{"POST", "/execute", `{"execution_id":"e1","language":"python","code":"x"}`},
		{"GET", "/v1/sessions", ""},
		{"GET", "/v1/sessions/s1", ""},
		{"DELETE", "/v1/sessions/s1", ""},
	} {
		rec := do(t, s, tc.method, tc.path, tc.body, bearerOf(aliceKey))
		limitOf(t, rec, CodeRateLimited, LimitRate, 900)
		if msg := errOf(t, rec).Message; !strings.Contains(msg, `key "alice"`) || !strings.Contains(msg, "0.001 requests per second (burst 2)") {
			t.Errorf("%s %s: message %q does not say which key and limit", tc.method, tc.path, msg)
		}
	}
	// Another key is not held by alice's bucket.
	for range 5 {
		if rec := do(t, s, "POST", "/v1/run", run, bearerOf(bobKey)); rec.Code != 200 {
			t.Fatalf("bob: %d %s", rec.Code, rec.Body)
		}
	}
	// The probes stay open.
	if rec := do(t, s, "GET", "/metrics", "", bearerOf(aliceKey)); rec.Code != 200 {
		t.Errorf("/metrics: %d", rec.Code)
	}
	if got := valueOf(s.metrics.keyLimited.WithLabelValues("alice", LimitRate)); got != 6 {
		t.Errorf("limited{alice,requests_per_second} = %v, want 6", got)
	}
	if got := valueOf(s.metrics.keyRequests.WithLabelValues("bob")); got != 5 {
		t.Errorf("requests{bob} = %v, want 5", got)
	}
}

// blockingRunner holds every run until release is closed.
type blockingRunner struct {
	started chan struct{}
	release chan struct{}
}

func newBlockingRunner() *blockingRunner {
	return &blockingRunner{started: make(chan struct{}, 10), release: make(chan struct{})}
}

func (b *blockingRunner) Execute(ctx context.Context, req execute.Request) (*execute.Result, error) {
	b.started <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return fakeRunner{}.Execute(ctx, req)
}

func TestKeyConcurrency(t *testing.T) {
	br := newBlockingRunner()
	s, ts := newMCPServer(t, func(o *Options) {
		o.Runner = br
		o.MaxConcurrent = 4
		o.APIKeys = []APIKey{
			keyOf("alice", aliceKey, func(k *APIKey) { k.MaxConcurrent = 1 }),
			keyOf("bob", bobKey, nil),
		}
	})
	run := `{"language":"python","code":"print(1)"}`
	var wg sync.WaitGroup
	wg.Go(func() {
		req, _ := http.NewRequest("POST", ts.URL+"/v1/run", strings.NewReader(run))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+aliceKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("the first run: %d", resp.StatusCode)
		}
	})
	<-br.started
	if got := valueOf(s.metrics.keyActive.WithLabelValues("alice")); got != 1 {
		t.Errorf("executions{alice} = %v while one runs", got)
	}
	// While it runs, alice's other executions are refused, everywhere.
	for _, tc := range []struct{ path, body string }{
		{"/v1/run", run},
		{"/v1/judge", `{"language":"python","code":"x","test_cases":[{"input":"","expected_output":""}]}`},
		{"/execute", `{"execution_id":"e1","language":"python","code":"x"}`},
	} {
		rec := do(t, s, "POST", tc.path, tc.body, bearerOf(aliceKey))
		limitOf(t, rec, CodeConcurrencyLimited, LimitConcurrency, 1)
	}
	// An MCP tool call too; an MCP notification is no execution.
	// post answers the status and Retry-After of an MCP POST.
	post := func(key, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"x"}}}`
	if code, retry := post(aliceKey, call); code != 429 || retry == "" {
		t.Errorf("alice's MCP tool call: %d, want 429 with Retry-After", code)
	}
	if code, _ := post(aliceKey, "["+call+"]"); code != 429 {
		t.Errorf("alice's MCP batch with a tool call: %d, want 429", code)
	}
	if code, _ := post(aliceKey, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`); code == 429 {
		t.Errorf("alice's MCP notification was refused as an execution")
	}
	// Bob is not held by alice's cap.
	if rec := do(t, s, "POST", "/execute", `{"execution_id":"e2","language":"python","code":"x"}`, bearerOf(bobKey)); rec.Code != 200 {
		t.Errorf("bob: %d %s", rec.Code, rec.Body)
	}
	close(br.release)
	wg.Wait()
	if got := valueOf(s.metrics.keyActive.WithLabelValues("alice")); got != 0 {
		t.Errorf("executions{alice} = %v after the run", got)
	}
	if rec := do(t, s, "POST", "/v1/run", run, bearerOf(aliceKey)); rec.Code != 200 {
		t.Errorf("alice after her run ended: %d %s", rec.Code, rec.Body)
	}
	if got := valueOf(s.metrics.keyLimited.WithLabelValues("alice", LimitConcurrency)); got != 5 {
		t.Errorf("limited{alice,max_concurrent} = %v, want 5", got)
	}
}

func TestKeySessionCap(t *testing.T) {
	store, err := session.Open(session.Options{Dir: t.TempDir(), NoTmpfs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s, _ := newTestServer(t, func(o *Options) {
		o.Runner = store.Wrap(fileRunner{})
		o.Sessions = store
		o.APIKeys = []APIKey{keyOf("alice", aliceKey, func(k *APIKey) { k.MaxSessions = 1 }), keyOf("bob", bobKey, nil)}
	})
	runIn := func(key, id string) *httptest.ResponseRecorder {
		return do(t, s, "POST", "/v1/run", fmt.Sprintf(`{"language":"python","code":"plant x","session_id":%q}`, id), bearerOf(key))
	}
	if rec := runIn(aliceKey, "one"); rec.Code != 200 {
		t.Fatalf("alice's first session: %d %s", rec.Code, rec.Body)
	}
	if rec := runIn(aliceKey, "one"); rec.Code != 200 {
		t.Fatalf("alice's session again: %d %s", rec.Code, rec.Body)
	}
	rec := runIn(aliceKey, "two")
	limitOf(t, rec, CodeTooManySessions, LimitSessions, 1)
	if msg := errOf(t, rec).Message; !strings.HasPrefix(msg, "session_id: ") || !strings.Contains(msg, "max_sessions") {
		t.Errorf("message %q", msg)
	}
	for _, id := range []string{"one", "two"} {
		if rec := runIn(bobKey, id); rec.Code != 200 {
			t.Errorf("bob's session %s: %d %s", id, rec.Code, rec.Body)
		}
	}
	if rec := do(t, s, "DELETE", "/v1/sessions/one", "", bearerOf(aliceKey)); rec.Code != 204 {
		t.Fatalf("delete: %d", rec.Code)
	}
	if rec := runIn(aliceKey, "two"); rec.Code != 200 {
		t.Errorf("alice after ending one: %d %s", rec.Code, rec.Body)
	}
}

func TestSessionEndpoints(t *testing.T) {
	store, err := session.Open(session.Options{Dir: t.TempDir(), NoTmpfs: true, MaxIdleTimeout: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s, _ := newTestServer(t, func(o *Options) {
		o.Runner = store.Wrap(fileRunner{})
		o.Sessions = store
		o.APIKeys = []APIKey{keyOf("alice", aliceKey, nil), keyOf("bob", bobKey, nil)}
	})
	before := time.Now().Add(-time.Second)
	rec := do(t, s, "POST", "/v1/run", `{"language":"python","code":"plant secret","session_id":"work","session_ttl_seconds":3600}`, bearerOf(aliceKey))
	if rec.Code != 200 {
		t.Fatalf("run: %d %s", rec.Code, rec.Body)
	}
	var list sessionList
	rec = do(t, s, "GET", "/v1/sessions", "", bearerOf(aliceKey))
	if err := json.Unmarshal(rec.Body.Bytes(), &list); rec.Code != 200 || err != nil || len(list.Sessions) != 1 {
		t.Fatalf("alice's list: %d %s", rec.Code, rec.Body)
	}
	got := list.Sessions[0]
	if got.ID != "work" || got.CreatedAt.Before(before) || got.IdleTimeoutSeconds != 3600 ||
		got.ExpiresAt.Sub(got.LastUsedAt) != time.Hour || got.DiskUsedBytes <= 0 || got.InUse {
		t.Errorf("alice's session: %+v", got)
	}
	rec = do(t, s, "GET", "/v1/sessions/work", "", bearerOf(aliceKey))
	var one session.Info
	if err := json.Unmarshal(rec.Body.Bytes(), &one); rec.Code != 200 || err != nil || one.ID != "work" {
		t.Errorf("GET /v1/sessions/work: %d %s", rec.Code, rec.Body)
	}
	// Bob sees none of it, and cannot end it.
	rec = do(t, s, "GET", "/v1/sessions", "", bearerOf(bobKey))
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"sessions":[]}` {
		t.Errorf("bob's list: %d %s", rec.Code, rec.Body)
	}
	for _, method := range []string{"GET", "DELETE"} {
		rec = do(t, s, method, "/v1/sessions/work", "", bearerOf(bobKey))
		if rec.Code != 404 || errOf(t, rec).Code != CodeNotFound || strings.Contains(rec.Body.String(), "secret") {
			t.Errorf("bob's %s of alice's session: %d %s", method, rec.Code, rec.Body)
		}
	}
	if rec := do(t, s, "GET", "/v1/sessions/work", "", nil); rec.Code != 401 {
		t.Errorf("no key: %d", rec.Code)
	}
	if rec := do(t, s, "GET", "/v1/sessions/a.b", "", bearerOf(aliceKey)); rec.Code != 400 {
		t.Errorf("invalid id: %d", rec.Code)
	}
	if rec := do(t, s, "GET", "/v1/sessions/work", "", bearerOf(aliceKey)); rec.Code != 200 {
		t.Errorf("bob's attempts touched alice's session: %d", rec.Code)
	}

	// session_ttl_seconds is checked before anything runs.
	for _, tc := range []struct{ body, want string }{
		{`{"language":"python","code":"x","session_ttl_seconds":60}`, "session_ttl_seconds: needs a session_id"},
		{`{"language":"python","code":"x","session_id":"t","session_ttl_seconds":0}`, "session_ttl_seconds: 0 must be at least 1"},
		{`{"language":"python","code":"x","session_id":"t","session_ttl_seconds":7201}`, "session_ttl_seconds: 7201 is more than the 7200 this server allows (sessions.max_idle_timeout)"},
		{`{"language":"python","code":"x","session_id":"t","session_ttl_seconds":"60"}`, "session_ttl_seconds: must be an integer, not a JSON string"},
	} {
		rec := do(t, s, "POST", "/v1/run", tc.body, bearerOf(aliceKey))
		if rec.Code != 400 || !strings.HasPrefix(errOf(t, rec).Message, tc.want) {
			t.Errorf("%s: %d %s, want 400 %q", tc.body, rec.Code, rec.Body, tc.want)
		}
	}
	if n := len(store.List(session.WithOwner(context.Background(), "key:alice"))); n != 1 {
		t.Errorf("a refused request started a session: alice has %d", n)
	}
}

// expiredSessions answers as a store whose session "old" expired.
type expiredSessions struct{ fakeSessions }

func (expiredSessions) expired(id string) error {
	return &session.ExpiredError{ID: id, At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (e expiredSessions) Info(ctx context.Context, id string) (session.Info, error) {
	if id == "old" {
		return session.Info{}, e.expired(id)
	}
	return e.fakeSessions.Info(ctx, id)
}

func (e expiredSessions) DeleteContext(ctx context.Context, id string) error {
	if id == "old" {
		return e.expired(id)
	}
	return e.fakeSessions.DeleteContext(ctx, id)
}

func TestExpiredSession(t *testing.T) {
	es := &expiredSessions{fakeSessions{live: map[string]bool{}}}
	s, _ := newTestServer(t, func(o *Options) {
		o.Sessions = es
		o.Runner = runnerFunc(func(context.Context, execute.Request) (*execute.Result, error) { return nil, es.expired("old") })
	})
	for _, tc := range []struct{ method, path, body, field string }{
		{"GET", "/v1/sessions/old", "", "id: "},
		{"DELETE", "/v1/sessions/old", "", "id: "},
		{"POST", "/v1/run", `{"language":"python","code":"x","session_id":"old"}`, "session_id: "},
	} {
		rec := do(t, s, tc.method, tc.path, tc.body, nil)
		e := errOf(t, rec)
		if rec.Code != 404 || e.Code != CodeSessionExpired || !strings.HasPrefix(e.Message, tc.field) ||
			!strings.Contains(e.Message, "2026-01-02T03:04:05Z") || !strings.Contains(e.Message, "files are gone") {
			t.Errorf("%s %s: %d %+v", tc.method, tc.path, rec.Code, e)
		}
	}
	// An id never seen is not_found, not expired.
	rec := do(t, s, "GET", "/v1/sessions/new", "", nil)
	if rec.Code != 404 || errOf(t, rec).Code != CodeNotFound {
		t.Errorf("unknown id: %d %s", rec.Code, rec.Body)
	}
}

type runnerFunc func(context.Context, execute.Request) (*execute.Result, error)

func (f runnerFunc) Execute(ctx context.Context, req execute.Request) (*execute.Result, error) {
	return f(ctx, req)
}

// TestSessionTTLReachesRunner: a valid session_ttl_seconds becomes the
// request's SessionTTL.
func TestSessionTTLReachesRunner(t *testing.T) {
	var got time.Duration
	s, _ := newTestServer(t, func(o *Options) {
		o.Sessions = &fakeSessions{}
		o.Runner = runnerFunc(func(ctx context.Context, req execute.Request) (*execute.Result, error) {
			got = req.SessionTTL
			return fakeRunner{}.Execute(ctx, req)
		})
	})
	if rec := do(t, s, "POST", "/v1/run", `{"language":"python","code":"x","session_id":"a","session_ttl_seconds":90}`, nil); rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if got != 90*time.Second {
		t.Errorf("SessionTTL = %s, want 90s", got)
	}
}

// TestWrongKeySameLength: a key that differs from a valid one only in
// its content, not its length, is refused like any other.
func TestWrongKeySameLength(t *testing.T) {
	s, _ := newTestServer(t, func(o *Options) {
		o.APIToken = strings.Repeat("a", 40)
		o.APIKeys = []APIKey{keyOf("alice", aliceKey, nil)}
	})
	for _, key := range []string{
		strings.Repeat("a", 39) + "b",
		aliceKey[:len(aliceKey)-1] + "X",
		strings.ToUpper(aliceKey),
		aliceKey + " ",
		"",
	} {
		rec := do(t, s, "GET", "/v1/sessions", "", bearerOf(key))
		if rec.Code != 401 || errOf(t, rec).Code != CodeUnauthorized {
			t.Errorf("key %q: %d %s", key, rec.Code, rec.Body)
		}
	}
	if rec := do(t, s, "GET", "/v1/sessions", "", map[string]string{"Authorization": aliceKey}); rec.Code != 401 {
		t.Errorf("a key without Bearer: %d", rec.Code)
	}
	for _, key := range []string{strings.Repeat("a", 40), aliceKey} {
		if rec := do(t, s, "GET", "/v1/sessions", "", bearerOf(key)); rec.Code != 200 {
			t.Errorf("valid key: %d %s", rec.Code, rec.Body)
		}
	}
	if got := valueOf(s.metrics.authFailures); got != 6 {
		t.Errorf("auth failures = %v, want 6", got)
	}
}

// TestKeyNeverLogged sends valid, wrong and limited keys and a token,
// and looks for them in the logs, the metrics and the answers.
func TestKeyNeverLogged(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	reg := prometheus.NewRegistry()
	const token = "tok_legacy_0123456789abcdef0123456789"
	s, _ := newTestServer(t, func(o *Options) {
		o.Logger = slog.New(slog.NewJSONHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
		o.Registry = reg
		o.APIToken = token
		o.APIKeys = []APIKey{keyOf("alice", aliceKey, func(k *APIKey) { k.RequestsPerSecond, k.Burst = 0.001, 1 })}
	})
	var answers bytes.Buffer
	for _, key := range []string{aliceKey, aliceKey, aliceKey + "x", token} {
		for _, r := range []struct{ method, path, body string }{
			{"POST", "/v1/run", `{"language":"python","code":"print(1)"}`},
			{"POST", "/v1/run", `{"language":"cobol","code":"x"}`},
			{"GET", "/v1/sessions/x", ""},
		} {
			rec := do(t, s, r.method, r.path, r.body, bearerOf(key))
			answers.Write(rec.Body.Bytes())
			for _, v := range rec.Header() {
				answers.WriteString(strings.Join(v, " "))
			}
		}
	}
	rec := do(t, s, "GET", "/metrics", "", nil)
	metrics := rec.Body.String()
	mu.Lock()
	logged := logs.String()
	mu.Unlock()
	for _, secret := range []string{aliceKey, token, aliceKey[3:20], token[4:20]} {
		for what, text := range map[string]string{"log": logged, "metrics": metrics, "answers": answers.String()} {
			if strings.Contains(text, secret) {
				t.Errorf("the %s hold a key (%q)", what, secret)
			}
		}
	}
	// What they hold instead: the key's name.
	if !strings.Contains(logged, `"key":"alice"`) || !strings.Contains(logged, `"key":"api_token"`) {
		t.Errorf("the request log does not name the keys:\n%s", logged)
	}
	if !strings.Contains(metrics, `coderunner_api_key_requests_total{key="alice"}`) ||
		!strings.Contains(metrics, `coderunner_api_key_limited_total{key="alice",limit="requests_per_second"}`) {
		t.Errorf("metrics lack the key's series:\n%s", metrics)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// valueOf is the value of a counter or gauge.
func valueOf(c prometheus.Metric) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

func TestKeyOptionsRefused(t *testing.T) {
	for _, keys := range [][]APIKey{
		{{Name: ""}},
		{keyOf("a", "k1", nil), keyOf("a", "k2", nil)},
		{keyOf("api_token_2", "k1", nil)},
		{keyOf("a", "k1", func(k *APIKey) { k.MaxConcurrent = -1 })},
	} {
		if _, err := New(Options{Executor: newFakeExecutor(), APIKeys: keys}); err == nil {
			t.Errorf("New accepted keys %+v", keys)
		}
	}
}
