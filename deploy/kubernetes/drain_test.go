package kubernetes_test

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coderunner/coderunner/httpapi"
	"github.com/coderunner/coderunner/internal/testutil"
)

// safetyBound ends a wait that would otherwise hang the test; it is never
// what a test asserts.
const safetyBound = 2 * time.Minute

// drain is a run of drain.sh.
type drain struct {
	cmd    *exec.Cmd
	out    bytes.Buffer
	done   chan struct{}
	err    error
	status int
}

// startDrain runs drain.sh with args.
func startDrain(t *testing.T, args ...string) *drain {
	t.Helper()
	bash, err := exec.LookPath("bash")
	testutil.Require(t, err == nil, "bash runs the preStop hook")
	d := &drain{cmd: exec.Command(bash, append([]string{"drain.sh"}, args...)...), done: make(chan struct{})}
	d.cmd.Stdout, d.cmd.Stderr = &d.out, &d.out
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		d.err = d.cmd.Wait()
		d.status = d.cmd.ProcessState.ExitCode()
		close(d.done)
	}()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			_ = d.cmd.Process.Kill()
			<-d.done
		}
	})
	return d
}

// wait waits for the end of the run and returns its exit status.
func (d *drain) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-d.done:
	case <-time.After(safetyBound):
		t.Fatal("drain.sh did not end")
	}
	var ee *exec.ExitError
	if d.err != nil && !errors.As(d.err, &ee) {
		t.Fatal(d.err)
	}
	return d.status
}

// polls waits until cond holds while drain.sh runs; the test fails if
// drain.sh ends first.
func (d *drain) polls(t *testing.T, when string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(safetyBound)
	for !cond() {
		select {
		case <-d.done:
			t.Fatalf("drain.sh ended %s (status %d):\n%s", when, d.status, d.out.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("drain.sh did not go on %s", when)
		}
	}
}

// polls counts the requests drain.sh makes, by path.
type polls struct {
	health, metrics atomic.Int64
	next            http.Handler
}

func (p *polls) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/health":
		p.health.Add(1)
	case "/metrics":
		p.metrics.Add(1)
	}
	p.next.ServeHTTP(w, r)
}

// portOf is the port of a test server's URL.
func portOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// postExecute posts an /execute request and returns at once; the answer is
// discarded.
func postExecute(t *testing.T, base, id string) {
	t.Helper()
	body := `{"execution_id":"` + id + `","code":"print(1)","language":"python","mode":"script"}`
	req, err := http.NewRequest(http.MethodPost, base+"/execute", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+serverToken)
	req.Header.Set("Content-Type", "application/json")
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
	}()
}

// started waits for an execution to start.
func started(t *testing.T, h *holdExecutor) {
	t.Helper()
	select {
	case <-h.started:
	case <-time.After(safetyBound):
		t.Fatal("the execution did not start")
	}
}

// TestDrainWaitsForExecutionsAndResults runs the preStop hook against the
// real HTTP service: it waits while an execution runs, then while its
// result has not reached the control plane, and ends once both are done.
func TestDrainWaitsForExecutionsAndResults(t *testing.T) {
	var accept atomic.Bool
	var attempts atomic.Int64
	cp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/result") {
			attempts.Add(1)
			if !accept.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer cp.Close()
	h := &holdExecutor{started: make(chan string, 4), release: make(chan struct{})}
	srv, _ := newServer(t, h, cp.URL)
	p := &polls{next: srv.Handler()}
	ts := httptest.NewServer(p)
	t.Cleanup(ts.Close)
	release := sync.OnceFunc(func() { close(h.release) })
	// Before ts.Close, which waits for the execution.
	t.Cleanup(release)

	postExecute(t, ts.URL, "e1")
	started(t, h)
	d := startDrain(t, "600", portOf(t, ts.URL))
	// Two idle answers in a row end the hook: a third poll shows it
	// waited.
	d.polls(t, "while an execution ran", func() bool { return p.health.Load() >= 3 })

	release()
	d.polls(t, "before the result was sent", func() bool { return attempts.Load() >= 1 })
	seen := p.metrics.Load()
	d.polls(t, "while a result waited for the control plane", func() bool { return p.metrics.Load() >= seen+3 })

	accept.Store(true)
	if status := d.wait(t); status != 0 {
		t.Fatalf("status %d:\n%s", status, d.out.String())
	}
	if !strings.Contains(d.out.String(), "drain: idle") {
		t.Errorf("output:\n%s", d.out.String())
	}
}

// TestDrainStopsAtItsBound: an executor still busy at the bound gets
// SIGTERM anyway; the hook says what was left.
func TestDrainStopsAtItsBound(t *testing.T) {
	h := &holdExecutor{started: make(chan string, 4), release: make(chan struct{})}
	srv, _ := newServer(t, h, "http://127.0.0.1:9")
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	// Before ts.Close, which waits for the execution.
	defer close(h.release)
	postExecute(t, ts.URL, "e1")
	started(t, h)
	d := startDrain(t, "1", portOf(t, ts.URL))
	if status := d.wait(t); status != 1 {
		t.Fatalf("status %d, want 1:\n%s", status, d.out.String())
	}
	if !strings.Contains(d.out.String(), "1 running") {
		t.Errorf("output does not say what was left:\n%s", d.out.String())
	}
}

// TestDrainWithoutControlPlane: without a reporter there is no spool
// metric, and an idle executor is drained.
func TestDrainWithoutControlPlane(t *testing.T) {
	h := &holdExecutor{started: make(chan string, 4), release: make(chan struct{})}
	close(h.release)
	srv, err := httpapi.New(httpapi.Options{Executor: h, APITokens: []string{serverToken}})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetReady()
	p := &polls{next: srv.Handler()}
	ts := httptest.NewServer(p)
	defer ts.Close()
	d := startDrain(t, "600", portOf(t, ts.URL))
	if status := d.wait(t); status != 0 {
		t.Fatalf("status %d:\n%s", status, d.out.String())
	}
	if p.health.Load() < 2 {
		t.Errorf("idle after %d polls, want 2", p.health.Load())
	}
}

// TestDrainBusyOnAnUnknownAnswer: an answer without the counts is not
// taken for idle.
func TestDrainBusyOnAnUnknownAnswer(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	}))
	defer ts.Close()
	d := startDrain(t, "1", portOf(t, ts.URL))
	if status := d.wait(t); status != 1 {
		t.Fatalf("status %d, want 1:\n%s", status, d.out.String())
	}
}

// TestDrainWithNothingListening: a container whose executor is gone has
// nothing to wait for.
func TestDrainWithNothingListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	d := startDrain(t, "600", port)
	if status := d.wait(t); status != 0 {
		t.Fatalf("status %d:\n%s", status, d.out.String())
	}
}

// TestDrainRefusesBadArguments: a bound or port that is not a number is
// a usage error, not a wait of unknown length.
func TestDrainRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{{}, {"1h"}, {"10", "http"}, {"-1"}, {"10; reboot"}} {
		d := startDrain(t, args...)
		if status := d.wait(t); status != 2 {
			t.Errorf("%q: status %d, want 2:\n%s", args, status, d.out.String())
		}
	}
}
