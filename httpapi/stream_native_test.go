package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/backend"
	"github.com/coderunner/coderunner/internal/outstream"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/lang"
	_ "github.com/coderunner/coderunner/sandbox/native"
)

// nativeStreamServer serves /v1/run on the native sandbox.
func nativeStreamServer(t testing.TB) *httptest.Server {
	t.Helper()
	testutil.RequireRoot(t)
	b, err := backend.Open(context.Background(), "native", backend.Options{})
	testutil.Require(t, err == nil, "the native backend does not work here")
	if c, ok := b.(io.Closer); ok {
		t.Cleanup(func() { _ = c.Close() })
	}
	l, _ := lang.Default().Lookup("python")
	tc := l.Discover(context.Background())
	testutil.Require(t, tc.Available, "python is not available: "+tc.Reason)
	ex := execute.New(b, lang.Default(), execute.Options{TempDir: t.TempDir()})
	s, err := New(Options{Executor: newFakeExecutor(), Runner: ex, Backend: "native", MaxConcurrent: 2, QueueSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	s.SetReady()
	// After the server closes, and before the temporary directory goes:
	// a handler whose connection was taken over (a WebSocket) may still
	// be removing its run's workspace, which would make the directory
	// busy.
	t.Cleanup(func() {
		if !waitTimeout(&s.inflight, 30*time.Second) {
			t.Error("a run was still going 30 s after the test")
		}
	})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

// collect reads a stream to its result: each stream's text joined, the
// events' names in order, and the result.
func collect(t *testing.T, sr *sseReader) (out map[string]string, names []string, res execute.Result) {
	t.Helper()
	out = map[string]string{}
	for {
		ev, ok := sr.next(t)
		if !ok {
			t.Fatalf("the stream ended without a result; events %v", names)
		}
		names = append(names, ev.name)
		switch ev.name {
		case "stdout", "stderr":
			chunk := ev.text(t)
			if len(chunk) > outstream.DefaultMaxChunk {
				t.Fatalf("a %s event of %d bytes, over the %d bound", ev.name, len(chunk), outstream.DefaultMaxChunk)
			}
			out[ev.name] += chunk
		case "result":
			if err := json.Unmarshal([]byte(ev.data), &res); err != nil {
				t.Fatal(err)
			}
			return out, names, res
		}
	}
}

// TestNativeStream: on the real sandbox, what a program prints before it
// sleeps is an event of its own, before what it prints after; stderr has
// its events; the result holds what was streamed.
func TestNativeStream(t *testing.T) {
	ts := nativeStreamServer(t)
	code := "import sys, time\nprint('first', flush=True)\ntime.sleep(0.2)\nsys.stderr.write('oops\\n')\nsys.stderr.flush()\nprint('second')\n"
	body, _ := json.Marshal(map[string]any{"language": "python", "code": code, "timeout": 20})
	sr := streamOf(t, postRun(t, context.Background(), ts.URL, string(body), "text/event-stream"))
	first, _ := sr.next(t)
	if first.name != "stdout" || first.text(t) != "first\n" {
		t.Fatalf("first event %+v, want stdout \"first\\n\" alone", first)
	}
	out, names, res := collect(t, sr)
	if res.Status != execute.StatusSuccess || res.Stdout != "first\nsecond\n" || res.Stderr != "oops\n" {
		t.Fatalf("result %+v", res)
	}
	// The two streams are two pipes, read apart: their relative order is
	// the scheduler's.
	if "first\n"+out["stdout"] != res.Stdout || out["stderr"] != res.Stderr {
		t.Errorf("events %v carried stdout %q stderr %q", names, out["stdout"], out["stderr"])
	}
}

// TestNativeStreamCap: the streamed bytes are the capped ones, the same
// the result holds.
func TestNativeStreamCap(t *testing.T) {
	ts := nativeStreamServer(t)
	body, _ := json.Marshal(map[string]any{"language": "python", "timeout": 20,
		"code": "import sys\nfor i in range(1000):\n    sys.stdout.write('y' * 999 + '\\n')\n", "limits": map[string]any{"max_output_chars": 50000}})
	out, _, res := collect(t, streamOf(t, postRun(t, context.Background(), ts.URL, string(body), "text/event-stream")))
	if !res.Truncated || len(res.Stdout) != 50000 || out["stdout"] != res.Stdout {
		t.Errorf("streamed %d bytes, result %d (truncated %v, %s), want 50000 of each", len(out["stdout"]), len(res.Stdout), res.Truncated, res.Message())
	}
}

// TestNativeStreamClientGone: a client that closes its stream stops the
// program: its process is gone from the host.
func TestNativeStreamClientGone(t *testing.T) {
	ts := nativeStreamServer(t)
	var b [8]byte
	_, _ = rand.Read(b[:])
	marker := "stream-gone-" + hex.EncodeToString(b[:])
	body, _ := json.Marshal(map[string]any{"language": "python", "timeout": 120, "args": []string{marker},
		"code": "import time\nprint('up', flush=True)\ntime.sleep(110)\n"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sr := streamOf(t, postRun(t, ctx, ts.URL, string(body), "text/event-stream"))
	if ev, _ := sr.next(t); ev.name != "stdout" || ev.text(t) != "up\n" {
		t.Fatalf("first event %+v", ev)
	}
	if n := processesWith(marker); n == 0 {
		t.Fatal("the program's process is not visible from the host: the test could not see it go")
	}
	cancel()
	deadline := time.Now().Add(30 * time.Second)
	for processesWith(marker) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the program still runs 30 s after its client left")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processesWith counts the host's processes with arg in their command
// line.
func processesWith(arg string) int {
	n := 0
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(arg)) {
			n++
		}
	}
	return n
}
