package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coderunner/coderunner/callback"
	"github.com/coderunner/coderunner/judge"
)

var testSecret = []byte("callback-secret-for-tests")

// blockingJudge judges once released, or when its context ends.
type blockingJudge struct {
	started chan string
	release chan struct{}
	result  judge.ExecutionResult
}

func newBlockingJudge() *blockingJudge {
	return &blockingJudge{started: make(chan string, 10), release: make(chan struct{}),
		result: judge.ExecutionResult{Status: judge.StatusAllPassed, Summary: "1/1 passed",
			TestResults: []judge.TestResult{{TestID: "1", Status: judge.TestPassed, ActualOutput: "3\n", ExpectedOutput: "3\n"}}}}
}

func (b *blockingJudge) Execute(ctx context.Context, req judge.ExecutionRequest) judge.ExecutionResult {
	b.started <- req.RequestID
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	res := b.result
	res.RequestID = req.RequestID
	return res
}

// receiver is a callback endpoint on loopback that checks every
// delivery's signature as a real receiver would, answering with the
// statuses of fail first.
type receiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	// fail are the statuses of the first deliveries; then 200.
	fail      []int
	got       [][]byte
	headers   []http.Header
	delivered chan struct{}
	// refused counts the deliveries whose signature did not verify.
	refused atomic.Int32
}

func newReceiver(t *testing.T, fail ...int) *receiver {
	rc := &receiver{fail: fail, delivered: make(chan struct{}, 10)}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err := callback.VerifySignature(testSecret, r.Header.Get(callback.SignatureHeader), body, 5*time.Minute); err != nil {
		rc.refused.Add(1)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	rc.mu.Lock()
	rc.got = append(rc.got, body)
	rc.headers = append(rc.headers, r.Header.Clone())
	status := http.StatusOK
	if len(rc.fail) > 0 {
		status, rc.fail = rc.fail[0], rc.fail[1:]
	}
	rc.mu.Unlock()
	w.WriteHeader(status)
	if status == http.StatusOK {
		rc.delivered <- struct{}{}
	}
}

// asyncServer is a server with submissions on, the judge j, callbacks
// allowed to loopback, retries at once.
func asyncServer(t *testing.T, j Judge, spool string, edit func(*Options)) *Server {
	t.Helper()
	s, _ := newTestServer(t, func(o *Options) {
		o.Judge = j
		o.Submissions = SubmissionOptions{Secret: testSecret, SpoolDir: spool, AllowedHosts: []string{"127.0.0.1"},
			Backoff: []time.Duration{time.Millisecond}}
		if edit != nil {
			edit(o)
		}
	})
	t.Cleanup(func() { <-s.subs.drain(time.Now()) })
	return s
}

func judgeBody(callbackURL string) string {
	return `{"request_id":"r-1","code":"print(3)","language":"python","test_cases":[{"id":"1","expected_output":"3"}],"callback_url":` +
		mustJSON(callbackURL) + `}`
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func submissionOf(t *testing.T, body []byte) SubmissionStatus {
	t.Helper()
	var st SubmissionStatus
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("submission %q: %v", body, err)
	}
	return st
}

// waitFor polls GET /v1/judge/{id} until ok says the state is reached.
func waitFor(t *testing.T, s *Server, id string, header map[string]string, ok func(SubmissionStatus) bool) SubmissionStatus {
	t.Helper()
	for {
		rec := do(t, s, "GET", "/v1/judge/"+id, "", header)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET: %d %s", rec.Code, rec.Body)
		}
		st := submissionOf(t, rec.Body.Bytes())
		if ok(st) {
			return st
		}
		runtimeGosched()
	}
}

// TestSubmissionLifecycle: 202 at once, queued then running while the
// judge works, done with the result; the result reaches the receiver
// signed, after a failed attempt is retried; a replay of it later is
// refused by the receiver's check.
func TestSubmissionLifecycle(t *testing.T) {
	j := newBlockingJudge()
	rc := newReceiver(t, http.StatusInternalServerError)
	s := asyncServer(t, j, t.TempDir(), nil)

	rec := do(t, s, "POST", "/v1/judge", judgeBody(rc.srv.URL+"/hook"), nil)
	if rec.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", rec.Code, rec.Body)
	}
	st := submissionOf(t, rec.Body.Bytes())
	if st.Status != SubmissionQueued || st.RequestID != "r-1" || !submissionIDPattern.MatchString(st.SubmissionID) ||
		rec.Header().Get("Location") != "/v1/judge/"+st.SubmissionID || st.Callback.State != DeliveryWaiting {
		t.Fatalf("202 body %s, Location %q", rec.Body, rec.Header().Get("Location"))
	}
	<-j.started
	running := waitFor(t, s, st.SubmissionID, nil, func(st SubmissionStatus) bool { return st.Status == SubmissionRunning })
	if string(running.Result) != "null" || running.StartedAt == nil {
		t.Fatalf("running: %+v", running)
	}
	close(j.release)
	<-rc.delivered
	done := waitFor(t, s, st.SubmissionID, nil, func(st SubmissionStatus) bool { return st.Callback.State == DeliveryDelivered })
	if done.Status != SubmissionDone || done.Callback.Attempts != 2 || done.ExpiresAt == nil || done.FinishedAt == nil {
		t.Fatalf("done: %+v", done)
	}
	var res judge.ExecutionResult
	if err := json.Unmarshal(done.Result, &res); err != nil || res.Status != judge.StatusAllPassed || res.RequestID != "r-1" {
		t.Fatalf("result %s: %v", done.Result, err)
	}

	rc.mu.Lock()
	got, hdr := rc.got[len(rc.got)-1], rc.headers[len(rc.headers)-1]
	rc.mu.Unlock()
	if string(got) != string(done.Result) || hdr.Get(callback.SubmissionHeader) != st.SubmissionID {
		t.Fatalf("delivered %s with id %q; GET says %s", got, hdr.Get(callback.SubmissionHeader), done.Result)
	}
	if rc.refused.Load() != 0 {
		t.Fatalf("%d deliveries failed the signature check", rc.refused.Load())
	}
	// A replay: the same body signed ten minutes ago, and a body changed
	// under a fresh signature of the original.
	for _, tc := range []struct {
		header, body string
	}{
		{callback.Sign(testSecret, time.Now().Add(-10*time.Minute), got), string(got)},
		{hdr.Get(callback.SignatureHeader), strings.Replace(string(got), "all_passed", "all_failed", 1)},
	} {
		req, _ := http.NewRequest("POST", rc.srv.URL+"/hook", strings.NewReader(tc.body))
		req.Header.Set(callback.SignatureHeader, tc.header)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("replayed delivery answered %d", resp.StatusCode)
		}
	}
}

// TestSubmissionRefusals: a callback_url is refused without a secret,
// and wherever it would reach the server's own network.
func TestSubmissionRefusals(t *testing.T) {
	off, _ := newTestServer(t, nil)
	rec := do(t, off, "POST", "/v1/judge", judgeBody("https://example.com/hook"), nil)
	if rec.Code != http.StatusBadRequest || !strings.HasPrefix(errOf(t, rec).Message, "callback_url:") {
		t.Fatalf("no secret: %d %s", rec.Code, rec.Body)
	}

	j := newBlockingJudge()
	s, _ := newTestServer(t, func(o *Options) {
		o.Judge = j
		o.Submissions = SubmissionOptions{Secret: testSecret, SpoolDir: t.TempDir()}
	})
	t.Cleanup(func() { <-s.subs.drain(time.Now()) })
	for _, u := range []string{
		"http://127.0.0.1:9/hook", "http://169.254.169.254/latest/meta-data/", "http://[::1]/hook",
		"http://localhost/hook", "http://[::ffff:127.0.0.1]/", "http://10.0.0.1/", "http://0.0.0.0/",
		"file:///etc/passwd", "gopher://example.com/", "http://user:pw@example.com/", "not a url",
	} {
		rec := do(t, s, "POST", "/v1/judge", judgeBody(u), nil)
		if rec.Code != http.StatusBadRequest || !strings.HasPrefix(errOf(t, rec).Message, "callback_url:") {
			t.Errorf("%s: %d %s", u, rec.Code, rec.Body)
		}
	}
	// A request refused by validation is refused as without a callback.
	rec = do(t, s, "POST", "/v1/judge", `{"code":"","language":"python","test_cases":[],"callback_url":"http://127.0.0.1/"}`, nil)
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("invalid request: %d", rec.Code)
	}
	select {
	case id := <-j.started:
		t.Fatalf("a refused submission was judged: %s", id)
	default:
	}
}

// TestCallbackRedirectNotFollowed: a receiver the operator allowed
// answers with a redirect; the delivery stops there (retried, never
// followed to the redirect's target).
func TestCallbackRedirectNotFollowed(t *testing.T) {
	var target atomic.Int32
	inner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { target.Add(1) }))
	defer inner.Close()
	var hits atomic.Int32
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, inner.URL, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	j := newBlockingJudge()
	close(j.release)
	s := asyncServer(t, j, t.TempDir(), nil)
	rec := do(t, s, "POST", "/v1/judge", judgeBody(redirector.URL), nil)
	if rec.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", rec.Code, rec.Body)
	}
	id := submissionOf(t, rec.Body.Bytes()).SubmissionID
	st := waitFor(t, s, id, nil, func(st SubmissionStatus) bool {
		return st.Callback.Attempts >= 3 && st.Callback.LastError != "" && hits.Load() >= 3
	})
	if st.Callback.State != DeliverySending || !strings.Contains(st.Callback.LastError, "307") {
		t.Fatalf("callback %+v", st.Callback)
	}
	if target.Load() != 0 || hits.Load() < 3 {
		t.Fatalf("redirect target reached %d times, redirector %d", target.Load(), hits.Load())
	}
}

// TestSubmissionOwners: a submission is its key's; another key's GET
// finds nothing, as for an id never made.
func TestSubmissionOwners(t *testing.T) {
	j := newBlockingJudge()
	close(j.release)
	rc := newReceiver(t)
	s := asyncServer(t, j, t.TempDir(), func(o *Options) {
		o.APIKeys = []APIKey{{Name: "alice", SHA256: sha256.Sum256([]byte("key-a"))}, {Name: "bob", SHA256: sha256.Sum256([]byte("key-b"))}}
	})
	alice := map[string]string{"Authorization": "Bearer key-a"}
	bob := map[string]string{"Authorization": "Bearer key-b"}
	rec := do(t, s, "POST", "/v1/judge", judgeBody(rc.srv.URL), alice)
	if rec.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", rec.Code, rec.Body)
	}
	id := submissionOf(t, rec.Body.Bytes()).SubmissionID
	waitFor(t, s, id, alice, func(st SubmissionStatus) bool { return st.Status == SubmissionDone })
	if rec := do(t, s, "GET", "/v1/judge/"+id, "", bob); rec.Code != http.StatusNotFound {
		t.Fatalf("bob: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, s, "GET", "/v1/judge/"+id, "", nil); rec.Code != http.StatusUnauthorized {
		t.Fatalf("no key: %d", rec.Code)
	}
	if rec := do(t, s, "GET", "/v1/judge/sub_"+strings.Repeat("0", 32), "", alice); rec.Code != http.StatusNotFound {
		t.Fatalf("unknown: %d", rec.Code)
	}
	if rec := do(t, s, "GET", "/v1/judge/..%2f..%2fetc", "", alice); rec.Code != http.StatusBadRequest {
		t.Fatalf("bad id: %d", rec.Code)
	}
}

// TestSubmissionExpires: a done submission is forgotten after its TTL.
func TestSubmissionExpires(t *testing.T) {
	j := newBlockingJudge()
	close(j.release)
	rc := newReceiver(t)
	s := asyncServer(t, j, t.TempDir(), func(o *Options) { o.Submissions.TTL = time.Nanosecond })
	rec := do(t, s, "POST", "/v1/judge", judgeBody(rc.srv.URL), nil)
	id := submissionOf(t, rec.Body.Bytes()).SubmissionID
	<-rc.delivered
	for {
		rec := do(t, s, "GET", "/v1/judge/"+id, "", nil)
		if rec.Code == http.StatusNotFound {
			break
		}
		if st := submissionOf(t, rec.Body.Bytes()); st.Status == SubmissionDone {
			t.Fatalf("a done submission outlived its TTL: %s", rec.Body)
		}
		runtimeGosched()
	}
}

// TestSubmissionLimits: past server.max_submissions a submission is 503
// with Retry-After; a result over the size bound loses its outputs.
func TestSubmissionLimits(t *testing.T) {
	j := newBlockingJudge()
	j.result.TestResults[0].ActualOutput = strings.Repeat("x", 4096)
	rc := newReceiver(t)
	s := asyncServer(t, j, t.TempDir(), func(o *Options) {
		o.Submissions.Max = 1
		o.Submissions.MaxResultBytes = 1024
	})
	rec := do(t, s, "POST", "/v1/judge", judgeBody(rc.srv.URL), nil)
	if rec.Code != http.StatusAccepted {
		t.Fatalf("first: %d", rec.Code)
	}
	id := submissionOf(t, rec.Body.Bytes()).SubmissionID
	rec = do(t, s, "POST", "/v1/judge", judgeBody(rc.srv.URL), nil)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || errOf(t, rec).Code != CodeTooManySubmissions {
		t.Fatalf("second: %d %s", rec.Code, rec.Body)
	}
	close(j.release)
	<-rc.delivered
	st := waitFor(t, s, id, nil, func(st SubmissionStatus) bool { return st.Status == SubmissionDone })
	var res judge.ExecutionResult
	if err := json.Unmarshal(st.Result, &res); err != nil || len(st.Result) > 1024 ||
		res.Status != judge.StatusAllPassed || res.TestResults[0].ActualOutput != "" {
		t.Fatalf("bounded result %s: %v", st.Result, err)
	}
}

// TestCallbackSurvivesRestart: a result the receiver did not take before
// the server stopped is delivered by the next server on the same spool.
func TestCallbackSurvivesRestart(t *testing.T) {
	spool := t.TempDir()
	j := newBlockingJudge()
	close(j.release)
	down := newReceiver(t, http.StatusServiceUnavailable, http.StatusServiceUnavailable, http.StatusServiceUnavailable)
	first, _ := newTestServer(t, func(o *Options) {
		o.Judge = j
		o.Submissions = SubmissionOptions{Secret: testSecret, SpoolDir: spool, AllowedHosts: []string{"127.0.0.0/8"},
			Backoff: []time.Duration{time.Hour}}
	})
	rec := do(t, first, "POST", "/v1/judge", judgeBody(down.srv.URL), nil)
	if rec.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", rec.Code, rec.Body)
	}
	id := submissionOf(t, rec.Body.Bytes()).SubmissionID
	waitFor(t, first, id, nil, func(st SubmissionStatus) bool { return st.Callback.Attempts == 1 && st.Callback.LastError != "" })
	<-first.subs.drain(time.Now())

	second := asyncServer(t, newBlockingJudge(), spool, nil)
	second.subs.start()
	<-down.delivered
	// The next server shows it too, once it took it from the spool; its
	// attempts are its own: two more 503s, then the 200.
	st := waitFor(t, second, id, nil, func(st SubmissionStatus) bool { return st.Callback.State == DeliveryDelivered })
	if st.Status != SubmissionDone || st.RequestID != "r-1" || st.Callback.Attempts != 3 || st.ExpiresAt == nil {
		t.Fatalf("after the restart: %+v", st)
	}
	down.mu.Lock()
	defer down.mu.Unlock()
	last := down.got[len(down.got)-1]
	var res judge.ExecutionResult
	if err := json.Unmarshal(last, &res); err != nil || res.RequestID != "r-1" || down.headers[len(down.headers)-1].Get(callback.SubmissionHeader) != id {
		t.Fatalf("delivered %s: %v", last, err)
	}
}

// TestSubmissionInterruptedByShutdown: a submission the shutdown stops
// still gets a result, INTERRUPTED, stored for delivery.
func TestSubmissionInterruptedByShutdown(t *testing.T) {
	j := newBlockingJudge()
	rc := newReceiver(t)
	s := asyncServer(t, j, t.TempDir(), nil)
	rec := do(t, s, "POST", "/v1/judge", judgeBody(rc.srv.URL), nil)
	id := submissionOf(t, rec.Body.Bytes()).SubmissionID
	<-j.started
	s.stopRuns(errors.New("shutdown"))
	<-rc.delivered
	st := waitFor(t, s, id, nil, func(st SubmissionStatus) bool { return st.Status == SubmissionDone })
	var res judge.ExecutionResult
	if err := json.Unmarshal(st.Result, &res); err != nil || res.Status != judge.StatusSandboxError || res.ErrorInfo == nil || res.ErrorInfo.Code != CodeInterrupted {
		t.Fatalf("result %s: %v", st.Result, err)
	}
}

// rebinder resolves a name to a public address at the first lookup (the
// check of the request) and to loopback after (the connection).
type rebinder struct{ calls atomic.Int32 }

func (r *rebinder) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if host != "hook.example" {
		return nil, errors.New("no such host")
	}
	if r.calls.Add(1) == 1 {
		return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// TestCallbackRebindingRefused: a name that passed the check and
// resolves to loopback when the result is sent reaches nothing; the
// delivery is given up at once.
func TestCallbackRebindingRefused(t *testing.T) {
	rc := newReceiver(t)
	port := rc.srv.URL[strings.LastIndex(rc.srv.URL, ":")+1:]
	j := newBlockingJudge()
	close(j.release)
	res := &rebinder{}
	s := asyncServer(t, j, t.TempDir(), func(o *Options) {
		o.Submissions.AllowedHosts = nil
		o.Submissions.Resolver = res
	})
	rec := do(t, s, "POST", "/v1/judge", judgeBody("http://hook.example:"+port+"/"), nil)
	if rec.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", rec.Code, rec.Body)
	}
	id := submissionOf(t, rec.Body.Bytes()).SubmissionID
	st := waitFor(t, s, id, nil, func(st SubmissionStatus) bool { return st.Callback.State == DeliveryFailed })
	if st.Callback.Attempts != 1 || !strings.Contains(st.Callback.LastError, "not allowed") {
		t.Fatalf("callback %+v", st.Callback)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.got) != 0 || rc.refused.Load() != 0 {
		t.Fatalf("the loopback receiver was reached")
	}
}

// TestCallbackGivenUpAfterMaxAge: a result not delivered within
// callback_max_age is given up, and GET says so.
func TestCallbackGivenUpAfterMaxAge(t *testing.T) {
	rc := newReceiver(t)
	j := newBlockingJudge()
	close(j.release)
	s := asyncServer(t, j, t.TempDir(), func(o *Options) { o.Submissions.MaxAge = time.Nanosecond })
	rec := do(t, s, "POST", "/v1/judge", judgeBody(rc.srv.URL), nil)
	id := submissionOf(t, rec.Body.Bytes()).SubmissionID
	st := waitFor(t, s, id, nil, func(st SubmissionStatus) bool { return st.Callback.State == DeliveryFailed })
	if !strings.Contains(st.Callback.LastError, "callback_max_age") {
		t.Fatalf("callback %+v", st.Callback)
	}
}

// TestSubmissionsShareTheQueue: submissions take the server's running
// slots and queue places; once both are taken the next is 503
// queue_full, and a key's max_concurrent counts its submissions.
func TestSubmissionsShareTheQueue(t *testing.T) {
	rc := newReceiver(t)
	j := newBlockingJudge()
	s := asyncServer(t, j, t.TempDir(), func(o *Options) {
		o.MaxConcurrent, o.QueueSize = 1, 1
		o.APIKeys = []APIKey{{Name: "a", SHA256: sha256.Sum256([]byte("key-a")), MaxConcurrent: 2}, {Name: "b", SHA256: sha256.Sum256([]byte("key-b"))}}
	})
	a := map[string]string{"Authorization": "Bearer key-a"}
	b := map[string]string{"Authorization": "Bearer key-b"}
	for i := range 2 {
		if rec := do(t, s, "POST", "/v1/judge", judgeBody(rc.srv.URL), a); rec.Code != http.StatusAccepted {
			t.Fatalf("submission %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	rec := do(t, s, "POST", "/v1/judge", judgeBody(rc.srv.URL), a)
	if rec.Code != http.StatusTooManyRequests || errOf(t, rec).Code != CodeConcurrencyLimited {
		t.Fatalf("over max_concurrent: %d %s", rec.Code, rec.Body)
	}
	rec = do(t, s, "POST", "/v1/judge", judgeBody(rc.srv.URL), b)
	if rec.Code != http.StatusServiceUnavailable || errOf(t, rec).Code != CodeQueueFull {
		t.Fatalf("queue full: %d %s", rec.Code, rec.Body)
	}
	// A synchronous request finds the queue full too.
	rec = do(t, s, "POST", "/v1/judge", `{"code":"print(3)","language":"python","test_cases":[{"expected_output":"3"}]}`, b)
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("synchronous judge: %d %s", rec.Code, rec.Body)
	}
	close(j.release)
	for range 2 {
		<-rc.delivered
	}
}

// TestSubmissionRouteMethods: /v1/judge/{id} takes GET only, and leaves
// /v1/judge/batch to the batch endpoint.
func TestSubmissionRouteMethods(t *testing.T) {
	s := asyncServer(t, newBlockingJudge(), t.TempDir(), nil)
	id := "/v1/judge/sub_" + strings.Repeat("a", 32)
	if rec := do(t, s, "POST", id, "{}", nil); rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST %s: %d %q", id, rec.Code, rec.Header().Get("Allow"))
	}
	if rec := do(t, s, "DELETE", id, "", nil); rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("DELETE %s: %d", id, rec.Code)
	}
	if rec := do(t, s, "GET", "/v1/judge/batch", "", nil); rec.Code != http.StatusMethodNotAllowed || !strings.Contains(rec.Header().Get("Allow"), "POST") {
		t.Fatalf("GET /v1/judge/batch: %d %q", rec.Code, rec.Header().Get("Allow"))
	}
	if rec := do(t, s, "GET", id, "", nil); rec.Code != http.StatusNotFound {
		t.Fatalf("GET %s: %d", id, rec.Code)
	}
}
