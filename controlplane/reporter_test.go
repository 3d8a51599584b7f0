package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const token = "s3cret-internal-token"

// call is one request the fake control plane received.
type call struct {
	path, auth, contentType string
	body                    map[string]any
	at                      time.Time
}

// fakeCP is a control plane that records calls and answers with the
// status its answer function picks.
type fakeCP struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	calls  []call
	answer func(n int, c call) int // n counts calls to the same path, from 0
	seen   map[string]int
	notify chan call
}

func newFakeCP(t *testing.T, answer func(n int, c call) int) *fakeCP {
	f := &fakeCP{t: t, answer: answer, seen: map[string]int{}, notify: make(chan call, 1000)}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		c := call{path: r.URL.Path, auth: r.Header.Get("Authorization"), contentType: r.Header.Get("Content-Type"), at: time.Now()}
		if err := json.Unmarshal(raw, &c.body); err != nil || r.Method != http.MethodPost {
			t.Errorf("%s %s with body %q", r.Method, r.URL.Path, raw)
		}
		f.mu.Lock()
		n := f.seen[c.path]
		f.seen[c.path]++
		f.calls = append(f.calls, c)
		f.mu.Unlock()
		code := http.StatusOK
		if f.answer != nil {
			code = f.answer(n, c)
		}
		w.WriteHeader(code)
		f.notify <- c
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// next waits for the next call to path.
func (f *fakeCP) next(path string) call {
	f.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case c := <-f.notify:
			if c.path == path {
				return c
			}
		case <-timeout:
			f.t.Fatalf("no call to %s", path)
		}
	}
}

func (f *fakeCP) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[path]
}

// newReporter makes a Reporter on f with millisecond backoff and a log
// buffer.
func newReporter(t *testing.T, f *fakeCP, dir string, edit func(*Options)) (*Reporter, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	opts := Options{
		URL: f.srv.URL, Token: token, ContainerID: "c-1", ResultsDir: dir,
		Logger:            slog.New(slog.NewJSONHandler(logs, nil)),
		Backoff:           []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 10 * time.Millisecond},
		HeartbeatInterval: 20 * time.Millisecond,
	}
	if edit != nil {
		edit(&opts)
	}
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r, logs
}

// logBuffer keeps a reporter's logs: the reporter writes from its own
// goroutines while a test reads, so both go through the lock.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestResultDelivered(t *testing.T) {
	f := newFakeCP(t, nil)
	dir := t.TempDir()
	r, _ := newReporter(t, f, dir, nil)
	if err := r.Result("exec-1", map[string]any{"execution_id": "exec-1", "status": "success"}); err != nil {
		t.Fatal(err)
	}
	c := f.next("/internal/executions/exec-1/result")
	if c.auth != "Bearer "+token || c.contentType != "application/json" || c.body["status"] != "success" {
		t.Errorf("call %+v", c)
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "exec-1.json")); !os.IsNotExist(err) {
		t.Errorf("delivered result still stored: %v", err)
	}
}

func TestResultRetriedAndStored(t *testing.T) {
	dir := t.TempDir()
	statuses := []int{http.StatusServiceUnavailable, http.StatusUnauthorized, http.StatusInternalServerError, http.StatusBadGateway, http.StatusOK}
	var storedDuringFailure bool
	f := newFakeCP(t, func(n int, c call) int {
		if n == 1 {
			_, err := os.Stat(filepath.Join(dir, "exec-2.json"))
			storedDuringFailure = err == nil
		}
		return statuses[min(n, len(statuses)-1)]
	})
	r, logs := newReporter(t, f, dir, nil)
	if err := r.Result("exec-2", map[string]any{"status": "failed"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := f.count("/internal/executions/exec-2/result"); n != len(statuses) {
		t.Errorf("%d attempts, want %d", n, len(statuses))
	}
	if !storedDuringFailure {
		t.Error("the result was not stored while undelivered")
	}
	if _, err := os.Stat(filepath.Join(dir, "exec-2.json")); !os.IsNotExist(err) {
		t.Errorf("delivered result still stored: %v", err)
	}
	_ = r.Close() // no log line after this
	if !strings.Contains(logs.String(), `"event":"auth_failed"`) {
		t.Errorf("401 not logged as an authentication failure: %s", logs)
	}
	if strings.Contains(logs.String(), token) {
		t.Error("the token is in the logs")
	}
}

func TestBackoffSchedule(t *testing.T) {
	dir := t.TempDir()
	f := newFakeCP(t, func(n int, c call) int {
		if n < 6 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	backoff := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 100 * time.Millisecond}
	r, _ := newReporter(t, f, dir, func(o *Options) { o.Backoff = backoff })
	if err := r.Result("b", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	want := []time.Duration{10, 20, 40, 100, 100, 100}
	for i := 1; i < len(f.calls); i++ {
		// Each gap is at least the backoff step: waits never shrink.
		if gap := f.calls[i].at.Sub(f.calls[i-1].at); gap < want[i-1]*time.Millisecond {
			t.Errorf("retry %d came after %v, before its backoff %v", i, gap, want[i-1]*time.Millisecond)
		}
	}
}

func TestResendAtStart(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("old-1.json", `{"execution_id":"old-1","status":"success"}`)
	write("old-2.json", `{"execution_id":"old-2","status":"crashed"}`)
	write("bad name!.json", `{}`)
	write("broken.json", `{not json`)
	write("notes.txt", `x`)
	if err := os.Symlink("/etc/hostname", filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	f := newFakeCP(t, nil)
	r, _ := newReporter(t, f, dir, nil)
	if n := r.Start(); n != 2 {
		t.Errorf("Start found %d results, want 2", n)
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"old-1", "old-2"} {
		if f.count("/internal/executions/"+id+"/result") != 1 {
			t.Errorf("%s not re-sent", id)
		}
		if _, err := os.Stat(filepath.Join(dir, id+".json")); !os.IsNotExist(err) {
			t.Errorf("%s still stored after delivery", id)
		}
	}
	if f.count("/internal/executions/link/result") != 0 || f.count("/internal/executions/broken/result") != 0 {
		t.Error("a link or a broken file was sent")
	}
}

func TestUndeliveredSurvivesClose(t *testing.T) {
	dir := t.TempDir()
	f := newFakeCP(t, func(int, call) int { return http.StatusInternalServerError })
	r, _ := newReporter(t, f, dir, nil)
	if err := r.Result("kept", map[string]any{"status": "success"}); err != nil {
		t.Fatal(err)
	}
	f.next("/internal/executions/kept/result")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := r.Flush(ctx); err == nil {
		t.Error("Flush succeeded with a result undelivered")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "kept.json"))
	if err != nil || !strings.Contains(string(got), "success") {
		t.Errorf("stored result %q, %v", got, err)
	}
	// The next process sends it.
	f2 := newFakeCP(t, nil)
	r2, _ := newReporter(t, f2, dir, nil)
	r2.Start()
	f2.next("/internal/executions/kept/result")
}

func TestNewerResultForSameID(t *testing.T) {
	dir := t.TempDir()
	release := make(chan struct{})
	f := newFakeCP(t, func(n int, c call) int {
		if n == 0 {
			<-release
		}
		return http.StatusOK
	})
	r, _ := newReporter(t, f, dir, nil)
	if err := r.Result("dup", map[string]any{"v": 1}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // let the first attempt start
	if err := r.Result("dup", map[string]any{"v": 2}); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	last := f.calls[len(f.calls)-1]
	f.mu.Unlock()
	if last.body["v"] != float64(2) {
		t.Errorf("last delivered body %v, want the newer one", last.body)
	}
}

func TestHeartbeats(t *testing.T) {
	f := newFakeCP(t, nil)
	r, _ := newReporter(t, f, t.TempDir(), nil)
	start := time.Now()
	stop := r.Heartbeat("hb")
	path := "/internal/executions/hb/heartbeat"
	first := f.next(path)
	f.next(path)
	stop()
	stop() // safe twice
	if first.at.Sub(start) < 20*time.Millisecond {
		t.Errorf("first heartbeat after %v, before one interval", first.at.Sub(start))
	}
	ts, err := time.Parse(time.RFC3339Nano, first.body["timestamp"].(string))
	if err != nil || ts.IsZero() || first.auth != "Bearer "+token || first.body["execution_id"] != "hb" {
		t.Errorf("heartbeat %+v: %v", first, err)
	}
	n := f.count(path)
	time.Sleep(100 * time.Millisecond) // five intervals
	if got := f.count(path); got != n {
		t.Errorf("%d heartbeats after stop", got-n)
	}
}

func TestHeartbeatsGoOnWhenUnreachable(t *testing.T) {
	f := newFakeCP(t, func(int, call) int { return http.StatusServiceUnavailable })
	r, logs := newReporter(t, f, t.TempDir(), nil)
	stop := r.Heartbeat("hb2")
	path := "/internal/executions/hb2/heartbeat"
	for range 3 {
		f.next(path)
	}
	stop()
	_ = r.Close()
	if !strings.Contains(logs.String(), "heartbeat_failed") {
		t.Errorf("failed heartbeats not logged: %s", logs)
	}
}

func TestReadyAndExited(t *testing.T) {
	for _, pod := range []string{"", "pod-7"} {
		f := newFakeCP(t, func(n int, c call) int {
			if n == 0 {
				return http.StatusBadGateway
			}
			return http.StatusNoContent
		})
		r, _ := newReporter(t, f, t.TempDir(), func(o *Options) { o.PodName = pod })
		r.Ready(8080)
		f.next("/internal/containers/c-1/ready")
		ready := f.next("/internal/containers/c-1/ready")
		if ready.body["executor_port"] != float64(8080) || ready.body["container_id"] != "c-1" || ready.auth != "Bearer "+token {
			t.Errorf("ready %+v", ready)
		}
		if _, err := time.Parse(time.RFC3339Nano, ready.body["ready_at"].(string)); err != nil {
			t.Errorf("ready_at: %v", err)
		}
		wantPod := any(nil)
		if pod != "" {
			wantPod = pod
		}
		if v, ok := ready.body["pod_name"]; !ok || v != wantPod {
			t.Errorf("pod_name %v (present %v), want %v", v, ok, wantPod)
		}
		if err := r.Exited(context.Background(), 143, "sigterm"); err != nil {
			t.Fatal(err)
		}
		exited := f.next("/internal/containers/c-1/exited")
		if exited.body["exit_code"] != float64(143) || exited.body["exit_reason"] != "sigterm" || exited.body["pod_name"] != wantPod || exited.body["exited_at"] == nil {
			t.Errorf("exited %+v", exited.body)
		}
	}
}

func TestExitedGivesUp(t *testing.T) {
	f := newFakeCP(t, func(int, call) int { return http.StatusInternalServerError })
	r, _ := newReporter(t, f, t.TempDir(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := r.Exited(ctx, 143, "sigterm")
	if err == nil || strings.Contains(err.Error(), token) {
		t.Errorf("err %v", err)
	}
}

func TestNewRefuses(t *testing.T) {
	for _, o := range []Options{
		{URL: "ftp://x", ResultsDir: "/tmp"},
		{URL: "http://", ResultsDir: "/tmp"},
		{URL: "http://cp", ResultsDir: "relative"},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
	r, err := New(Options{URL: "http://cp", ResultsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Result("../escape", map[string]any{}); err == nil {
		t.Error("an id with a path was accepted")
	}
	_ = r.Close()
}

func TestObserve(t *testing.T) {
	f := newFakeCP(t, nil)
	var mu sync.Mutex
	kinds := map[string]int{}
	r, _ := newReporter(t, f, t.TempDir(), func(o *Options) {
		o.Observe = func(kind string, _ time.Duration, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				kinds[kind]++
			}
		}
	})
	if err := r.Result("o", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if kinds[KindResult] != 1 {
		t.Errorf("observed %v", kinds)
	}
}
