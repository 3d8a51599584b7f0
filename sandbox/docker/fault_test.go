package docker_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/docker"
)

// engineSocket is the local engine's socket: DOCKER_HOST when it is a
// unix socket, else the default one.
func engineSocket() string {
	if h, ok := strings.CutPrefix(os.Getenv("DOCKER_HOST"), "unix://"); ok {
		return h
	}
	return "/var/run/docker.sock"
}

// faultyEngine is a unix socket that forwards to the local engine until
// it is taken down: then every connection, the streams of running
// programs included, is cut and new ones are closed at once, as when
// the engine is killed. It records the containers started through it.
type faultyEngine struct {
	path string
	ln   net.Listener

	mu      sync.Mutex
	down    bool
	conns   map[net.Conn]bool
	started []string
}

var startPath = regexp.MustCompile(`^POST /v[0-9.]+/containers/([0-9a-f]{64})/start `)

func newFaultyEngine(t *testing.T) *faultyEngine {
	t.Helper()
	// A short path: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "crfault")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	f := &faultyEngine{path: filepath.Join(dir, "engine.sock"), conns: map[net.Conn]bool{}}
	if f.ln, err = net.Listen("unix", f.path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.ln.Close()
		f.setDown(true)
	})
	go f.serve()
	return f
}

func (f *faultyEngine) host() string { return "unix://" + f.path }

func (f *faultyEngine) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		if f.down {
			f.mu.Unlock()
			_ = c.Close()
			continue
		}
		up, err := net.Dial("unix", engineSocket())
		if err != nil {
			f.mu.Unlock()
			_ = c.Close()
			continue
		}
		f.conns[c], f.conns[up] = true, true
		f.mu.Unlock()
		go func() {
			_, _ = io.Copy(up, &recorder{r: c, f: f})
			_ = up.Close()
		}()
		go func() {
			_, _ = io.Copy(c, up)
			_ = c.Close()
		}()
	}
}

// setDown takes the engine down (cutting every connection) or up again.
func (f *faultyEngine) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
	if down {
		for c := range f.conns {
			_ = c.Close()
		}
		clear(f.conns)
	}
}

func (f *faultyEngine) startedContainers() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.started...)
}

// recorder notes the containers a client starts.
type recorder struct {
	r io.Reader
	f *faultyEngine
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if m := startPath.FindSubmatch(p[:n]); m != nil {
		r.f.mu.Lock()
		r.f.started = append(r.f.started, string(m[1]))
		r.f.mu.Unlock()
	}
	return n, err
}

// TestEngineKilledDuringRun: the engine stops answering while a program
// runs. The run ends with a setup error (not a hang, not a result), and
// once the engine is back the backend removes the container it could not
// remove while the engine was away, without waiting for Close.
func TestEngineKilledDuringRun(t *testing.T) {
	requireDocker(t)
	eng := newFaultyEngine(t)
	b := newBackend(t, docker.Options{Host: eng.host(), IdleTimeout: time.Second})
	direct, err := client.NewClientWithOpts(client.WithHost("unix://"+engineSocket()), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()

	type outcome struct {
		res *sandbox.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := b.Run(context.Background(), &sandbox.Spec{
			Args:   []string{"/bin/sh", "-c", "echo started; exec sleep 300"},
			Limits: sandbox.Limits{WallTime: 10 * time.Minute},
		})
		done <- outcome{res, err}
	}()
	// Wait for the program's container to run.
	var id string
	for deadline := time.Now().Add(2 * time.Minute); id == "" && time.Now().Before(deadline); {
		for _, c := range eng.startedContainers() {
			if ins, err := direct.ContainerInspect(context.Background(), c); err == nil && ins.State != nil && ins.State.Running {
				id = c
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if id == "" {
		t.Fatal("the program's container never ran")
	}
	t.Cleanup(func() { _ = direct.ContainerRemove(context.Background(), id, container.RemoveOptions{Force: true}) })
	eng.setDown(true)

	select {
	case o := <-done:
		if o.err == nil {
			t.Fatalf("the run ended with %+v and no error while the engine was down", o.res)
		}
		if !errors.Is(o.err, sandbox.ErrSetup) || !strings.Contains(o.err.Error(), "Docker engine at "+eng.host()+" does not answer") {
			t.Errorf("error %v: want a setup error that names the engine", o.err)
		}
		t.Logf("run: %v", o.err)
	case <-time.After(5 * time.Minute):
		t.Fatal("the run did not end once the engine was down")
	}
	if _, err := direct.ContainerInspect(context.Background(), id); err != nil {
		t.Fatalf("the container is gone while the engine was away (%v): the test shows nothing", err)
	}
	eng.setDown(false)
	// The janitor ticks every quarter of the idle timeout.
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := direct.ContainerInspect(context.Background(), id); cerrdefs.IsNotFound(err) {
			return
		}
	}
	t.Fatalf("container %.12s still there two minutes after the engine came back", id)
}

// slowWriter takes its time over its first write, as a loaded machine or
// a slow consumer of the stream (the judge compares as it reads) may.
type slowWriter struct {
	mu    sync.Mutex
	first bool
	buf   strings.Builder
}

func (w *slowWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.first {
		w.first = true
		time.Sleep(3 * time.Second)
	}
	return w.buf.Write(p)
}

// TestSlowReaderKeepsOutput: a program ends while its last output still
// waits to be read. The run once cut the stream 50 ms after the exit and
// lost that output: a correct program judged wrong.
func TestSlowReaderKeepsOutput(t *testing.T) {
	b := newBackend(t, docker.Options{})
	w := &slowWriter{}
	res, err := b.Run(context.Background(), &sandbox.Spec{
		Args:   []string{"/bin/sh", "-c", "echo first; sleep 0.3; echo last"},
		Stdout: w,
		Limits: sandbox.Limits{WallTime: time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusOK || string(res.Stdout) != "first\nlast\n" {
		t.Fatalf("status %s, stdout %q: want ok and both lines", res.Status, res.Stdout)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf.String() != "first\nlast\n" {
		t.Fatalf("the stream got %q: want both lines", w.buf.String())
	}
}
