package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coderunner/coderunner/controlplane"
	"github.com/coderunner/coderunner/invoke"
)

// cpCall is one callback the fake control plane received.
type cpCall struct {
	path string
	auth string
	body map[string]any
}

// fakeCP records callbacks; block, when set, holds every answer until it
// is closed.
type fakeCP struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []cpCall
	got   chan cpCall
	block chan struct{}
}

func newFakeCP(t *testing.T, block bool) *fakeCP {
	f := &fakeCP{got: make(chan cpCall, 1000)}
	if block {
		f.block = make(chan struct{})
	}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		c := cpCall{path: r.URL.Path, auth: r.Header.Get("Authorization")}
		_ = json.Unmarshal(raw, &c.body)
		f.mu.Lock()
		f.calls = append(f.calls, c)
		f.mu.Unlock()
		f.got <- c
		if f.block != nil {
			select {
			case <-f.block:
			case <-r.Context().Done():
			}
		}
	}))
	t.Cleanup(func() {
		if f.block != nil {
			select {
			case <-f.block:
			default:
				close(f.block)
			}
		}
		f.srv.Close()
	})
	return f
}

func (f *fakeCP) wait(t *testing.T, path string) cpCall {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case c := <-f.got:
			if c.path == path {
				return c
			}
		case <-timeout:
			t.Fatalf("no call to %s", path)
		}
	}
}

func (f *fakeCP) paths() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		out = append(out, c.path)
	}
	return out
}

// serving is a Server on a real listener with a reporter to a fake
// control plane.
type serving struct {
	s      *Server
	fe     *fakeExecutor
	url    string
	cancel context.CancelCauseFunc
	done   chan *ExitStatus
	dir    string
}

func serve(t *testing.T, cp *fakeCP, edit func(*Options)) *serving {
	t.Helper()
	dir := t.TempDir()
	var srv *Server
	rep, err := controlplane.New(controlplane.Options{
		URL: cp.srv.URL, Token: "internal-token", ContainerID: "ctr-1", ResultsDir: dir,
		Backoff:           []time.Duration{5 * time.Millisecond},
		HeartbeatInterval: 30 * time.Millisecond,
		Observe:           func(k string, d time.Duration, err error) { srv.ObserveReport(k, d, err) },
	})
	if err != nil {
		t.Fatal(err)
	}
	fe := newFakeExecutor()
	opts := Options{Executor: fe, Reporter: rep, MaxConcurrent: 1, QueueSize: 10, ShutdownGrace: 2 * time.Second,
		APIToken: lifecycleToken}
	if edit != nil {
		edit(&opts)
	}
	srv, err = New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	sv := &serving{s: srv, fe: fe, url: "http://" + ln.Addr().String(), cancel: cancel, done: make(chan *ExitStatus, 1), dir: dir}
	go func() {
		st, err := srv.Serve(ctx, ln)
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
		sv.done <- st
	}()
	t.Cleanup(func() {
		cancel(ExitNormal)
		<-sv.done
	})
	cp.wait(t, "/internal/containers/ctr-1/ready")
	return sv
}

// lifecycleToken is the API token of serve: a control plane needs one.
const lifecycleToken = "lifecycle-token"

func (sv *serving) post(body string) (*http.Response, error) {
	req, err := http.NewRequest("POST", sv.url+"/execute", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+lifecycleToken)
	return http.DefaultClient.Do(req)
}

func TestReadyAndResultCallbacks(t *testing.T) {
	cp := newFakeCP(t, false)
	sv := serve(t, cp, nil)
	resp, err := sv.post(validExecute)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	c := cp.wait(t, "/internal/executions/e-1/result")
	if c.auth != "Bearer internal-token" || c.body["status"] != "success" || c.body["execution_id"] != "e-1" {
		t.Errorf("result callback %+v", c)
	}
	for _, k := range []string{"stdout", "stderr", "exit_code", "execution_time", "return_value", "metrics", "artifacts"} {
		if _, ok := c.body[k]; !ok {
			t.Errorf("result callback lacks %s", k)
		}
	}
}

// TestHeartbeatsStopAtResult: heartbeats come while the execution runs
// and none after its result.
func TestHeartbeatsStopAtResult(t *testing.T) {
	cp := newFakeCP(t, false)
	sv := serve(t, cp, nil)
	sv.fe.hold = make(chan struct{})
	answered := make(chan error, 1)
	go func() {
		resp, err := sv.post(`{"execution_id":"hb-1","code":"x","language":"python"}`)
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	cp.wait(t, "/internal/executions/hb-1/heartbeat")
	cp.wait(t, "/internal/executions/hb-1/heartbeat")
	close(sv.fe.hold)
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	cp.wait(t, "/internal/executions/hb-1/result")
	time.Sleep(100 * time.Millisecond) // three heartbeat intervals
	paths := cp.paths()
	last := -1
	for i, p := range paths {
		if p == "/internal/executions/hb-1/result" {
			last = i
		}
	}
	for _, p := range paths[last:] {
		if strings.HasSuffix(p, "/heartbeat") {
			t.Errorf("heartbeat after the result: %v", paths)
		}
	}
}

// TestReportingNeverBlocks: a control plane that never answers does not
// delay the HTTP answer, and the result waits on disk.
func TestReportingNeverBlocks(t *testing.T) {
	cp := newFakeCP(t, true)
	dir := t.TempDir()
	rep, err := controlplane.New(controlplane.Options{URL: cp.srv.URL, Token: "t", ContainerID: "c", ResultsDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	s, _ := newTestServer(t, func(o *Options) { o.Reporter = rep })
	rec := do(t, s, "POST", "/execute", validExecute, nil)
	if rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	cp.wait(t, "/internal/executions/e-1/result") // still unanswered
	if rep.Pending() != 1 {
		t.Errorf("%d results pending, want 1", rep.Pending())
	}
}

// TestShutdown is the SIGTERM path in process: /health turns 503, the
// running and the queued executions are answered and reported crashed,
// then exited is sent with 143 and sigterm, and Serve returns.
func TestShutdown(t *testing.T) {
	cp := newFakeCP(t, false)
	sv := serve(t, cp, nil)
	sv.fe.hold = make(chan struct{})
	type answer struct {
		res invoke.Result
		err error
	}
	answers := make(chan answer, 2)
	for _, id := range []string{"run-1", "queued-1"} {
		go func() {
			resp, err := sv.post(fmt.Sprintf(`{"execution_id":%q,"code":"x","language":"python"}`, id))
			var a answer
			a.err = err
			if err == nil {
				a.err = json.NewDecoder(resp.Body).Decode(&a.res)
				resp.Body.Close()
			}
			answers <- a
		}()
	}
	<-sv.fe.started
	for {
		if _, waiting := sv.s.gate.counts(); waiting == 1 {
			break
		}
		runtimeGosched()
	}
	sv.cancel(ExitSIGTERM)
	for range 2 {
		a := <-answers
		if a.err != nil || a.res.Status != invoke.StatusCrashed || a.res.ExitCode != -1 {
			t.Errorf("answer %+v: %v", a.res, a.err)
		}
	}
	status := <-sv.done
	sv.done <- status // for the cleanup
	if status != ExitSIGTERM {
		t.Errorf("Serve returned %+v", status)
	}
	paths := cp.paths()
	idx := map[string]int{}
	for i, p := range paths {
		idx[p] = i
	}
	exited, ok := idx["/internal/containers/ctr-1/exited"]
	if !ok {
		t.Fatalf("no exited callback: %v", paths)
	}
	for _, id := range []string{"run-1", "queued-1"} {
		i, ok := idx["/internal/executions/"+id+"/result"]
		if !ok || i > exited {
			t.Errorf("crashed result of %s not reported before exited: %v", id, paths)
		}
	}
	cp.mu.Lock()
	body := cp.calls[exited].body
	cp.mu.Unlock()
	if body["exit_code"] != float64(143) || body["exit_reason"] != "sigterm" || body["container_id"] != "ctr-1" {
		t.Errorf("exited body %v", body)
	}
	if resp, err := http.Get(sv.url + "/health"); err == nil {
		_ = resp.Body.Close()
		t.Error("still listening after Serve returned")
	}
}

// TestDrainingRefuses: while draining, /health is 503 and a new execution
// is refused with 503.
func TestDrainingRefuses(t *testing.T) {
	cp := newFakeCP(t, true) // exited never answers: the drain lasts the grace period
	sv := serve(t, cp, func(o *Options) { o.ShutdownGrace = 2 * time.Second })
	sv.cancel(ExitSIGTERM)
	cp.wait(t, "/internal/containers/ctr-1/exited")
	resp, err := http.Get(sv.url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("/health while draining: %d", resp.StatusCode)
	}
	resp, err = sv.post(validExecute)
	if err != nil {
		t.Fatal(err)
	}
	var b errorBody
	_ = json.NewDecoder(resp.Body).Decode(&b)
	resp.Body.Close()
	if resp.StatusCode != 503 || b.Error.Code != CodeShuttingDown || resp.Header.Get("Retry-After") == "" {
		t.Errorf("/execute while draining: %d %+v", resp.StatusCode, b)
	}
}
