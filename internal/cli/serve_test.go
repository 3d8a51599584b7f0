package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coderunner/coderunner/httpapi"
	"github.com/coderunner/coderunner/internal/testutil"
)

// callbackServer is a fake control plane that hands every callback to
// the test.
type callbackServer struct {
	*httptest.Server
	calls chan map[string]any
}

func newCallbackServer(t *testing.T) *callbackServer {
	cs := &callbackServer{calls: make(chan map[string]any, 100)}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		body["_path"] = r.URL.Path
		body["_auth"] = r.Header.Get("Authorization")
		cs.calls <- body
	}))
	t.Cleanup(cs.Close)
	return cs
}

// wait returns the next callback whose path ends with suffix.
func (cs *callbackServer) wait(t *testing.T, suffix string) map[string]any {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case c := <-cs.calls:
			if strings.HasSuffix(c["_path"].(string), suffix) {
				return c
			}
		case <-timeout:
			t.Fatalf("no %s callback", suffix)
		}
	}
}

func TestServeUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"serve", "extra"}, ExitUsage, "no arguments"},
		{[]string{"serve", "--addr", "nope"}, ExitUsage, "--addr"},
		{[]string{"serve", "--bogus"}, ExitUsage, "--bogus"},
		{[]string{"serve", "--max-concurrent", "0"}, ExitUsage, "--max-concurrent: 0 is out of range"},
		{[]string{"serve", "--queue-size", "-3"}, ExitUsage, "--queue-size: -3 is out of range"},
		{[]string{"serve", "--backend", "docker", "--addr", "127.0.0.1:0"}, ExitFailure, "no sandbox backend works here"},
	} {
		ta := newApp(t, "")
		if code := ta.run(tc.args...); code != tc.code || !strings.Contains(ta.stderr.String(), tc.err) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, ta.stderr, tc.code, tc.err)
		}
	}
	ta := newApp(t, "")
	if code := ta.run("serve", "-h"); code != ExitOK || !strings.Contains(ta.stdout.String(), "CONTROL_PLANE_URL") {
		t.Errorf("serve -h: %d %q", code, ta.stdout)
	}
}

// TestServeNeedsToken: without an API token, serve refuses to listen
// where strangers can reach it (an address that is not loopback) and to
// report to a control plane, naming the variable to set; it never binds.
func TestServeNeedsToken(t *testing.T) {
	for _, tc := range []struct {
		addr string
		env  map[string]string
		want string
	}{
		{"0.0.0.0:0", nil, "--addr 0.0.0.0:0 is not a loopback address"},
		{":0", nil, "is not a loopback address"},
		{"[::]:0", nil, "is not a loopback address"},
		{"127.0.0.1:0", map[string]string{"CONTROL_PLANE_URL": "http://127.0.0.1:9", "INTERNAL_API_TOKEN": "cp"}, "control_plane.url (CONTROL_PLANE_URL) is set"},
		{"0.0.0.0:0", map[string]string{"CODERUNNER_API_TOKEN": " , "}, "server.api_token: holds no token"},
	} {
		ta := newApp(t, "")
		ta.LookupEnv = func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
		// Were serve to start, it would run until ctx ends; the bound is
		// for that failure only.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		code := ta.Run(ctx, []string{"serve", "--config", filepath.Join("testdata", "fake.yaml"), "--addr", tc.addr})
		cancel()
		if code != ExitUsage || !strings.Contains(ta.stderr.String(), tc.want) {
			t.Errorf("serve --addr %s %v: exit %d, stderr %q; want %d and %q", tc.addr, tc.env, code, ta.stderr, ExitUsage, tc.want)
		}
		if tc.want != "server.api_token: holds no token" && !strings.Contains(ta.stderr.String(), "CODERUNNER_API_TOKEN (server.api_token)") {
			t.Errorf("the refusal does not name the variable to set: %q", ta.stderr)
		}
	}
}

// TestServeInProcess runs serve on the fake backend with a control plane:
// ready, /health, then the shutdown path (as SIGTERM) with exit 143.
func TestServeInProcess(t *testing.T) {
	cs := newCallbackServer(t)
	ta := newApp(t, "")
	env := map[string]string{
		"CONTROL_PLANE_URL":  cs.URL,
		"INTERNAL_API_TOKEN": "tok-123",
		"CONTAINER_ID":       "ctr-9",
		"RESULTS_DIR":        t.TempDir(),
		// A control plane needs an API token.
		"CODERUNNER_API_TOKEN": "api-token",
		// The grace of the shutdown, from the configuration.
		"CODERUNNER_SERVER_SHUTDOWN_TIMEOUT": "1500ms",
	}
	ta.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan int, 1)
	go func() {
		done <- ta.Run(ctx, []string{"serve", "--config", filepath.Join("testdata", "fake.yaml"), "--addr", "127.0.0.1:0",
			"--max-concurrent", "3", "--queue-size", "5"})
	}()

	ready := cs.wait(t, "/internal/containers/ctr-9/ready")
	port := int(ready["executor_port"].(float64))
	if ready["_auth"] != "Bearer tok-123" || port == 0 || ready["pod_name"] != nil {
		t.Errorf("ready callback %v", ready)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", port))
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Slots     int `json:"slots"`
		QueueSize int `json:"queue_size"`
	}
	err = json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil || h.Slots != 3 || h.QueueSize != 5 {
		t.Errorf("/health %d %+v %v; want 3 slots and a queue of 5 from the flags", resp.StatusCode, h, err)
	}
	cancel(httpapi.ExitSIGTERM)
	exited := cs.wait(t, "/internal/containers/ctr-9/exited")
	if exited["exit_code"] != float64(143) || exited["exit_reason"] != "sigterm" {
		t.Errorf("exited callback %v", exited)
	}
	if code := <-done; code != 143 {
		t.Errorf("serve exited %d, want 143; stderr %s", code, ta.stderr)
	}
	grace := -1.0
	for _, line := range strings.Split(strings.TrimSpace(ta.stderr.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["time"] == nil || m["level"] == nil || m["msg"] == nil {
			t.Errorf("log line is not JSON with time, level, msg: %q", line)
		}
		if m["event"] == "shutdown" {
			grace, _ = m["grace_ms"].(float64)
		}
	}
	if grace != 1500 {
		t.Errorf("the shutdown's grace is %v ms, want 1500 from server.shutdown_timeout", grace)
	}
	if strings.Contains(ta.stderr.String(), "tok-123") {
		t.Error("the token is in the log")
	}
}

// goTool finds the go command that runs the tests.
func goTool(t *testing.T) string {
	t.Helper()
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		if p := filepath.Join(strings.TrimSpace(string(out)), "bin", "go"); fileExists(p) {
			return p
		}
	}
	if p := "/usr/local/go/bin/go"; fileExists(p) {
		return p
	}
	p, err := exec.LookPath("go")
	testutil.Require(t, err == nil, "the go command is needed to build the binary")
	return p
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// lockedBuffer collects a process's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServeBinarySIGTERM builds coderunner, starts `serve`, sends it
// SIGTERM, and checks the exit status 143 and the exited callback, as a
// container runtime would see them.
func TestServeBinarySIGTERM(t *testing.T) {
	testutil.RequireRoot(t)
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "coderunner")
	build := exec.Command(goTool(t), "build", "-o", bin, "../../cmd/coderunner")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cs := newCallbackServer(t)
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--backend", "native")
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"CONTROL_PLANE_URL=" + cs.URL,
		"INTERNAL_API_TOKEN=bin-token",
		"CONTAINER_ID=bin-ctr",
		"RESULTS_DIR=" + t.TempDir(),
		"CODERUNNER_API_TOKEN=bin-api-token",
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	ready := cs.wait(t, "/internal/containers/bin-ctr/ready")
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", int(ready["executor_port"].(float64))))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := cs.wait(t, "/internal/containers/bin-ctr/exited")
	err = cmd.Wait()
	if cmd.ProcessState.ExitCode() != 143 {
		t.Errorf("exit status %d (%v), want 143; stderr:\n%s", cmd.ProcessState.ExitCode(), err, stderr)
	}
	if exited["exit_code"] != float64(143) || exited["exit_reason"] != "sigterm" || exited["_auth"] != "Bearer bin-token" {
		t.Errorf("exited callback %v", exited)
	}
	if strings.Contains(stderr.String(), "bin-token") {
		t.Error("the token is in the log")
	}
}
