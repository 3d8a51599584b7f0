package sandboxtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/internal/kquota"
)

// quotaFill takes as much as the kernel lets it of the per-user counts a
// program can hold: inotify instances, POSIX message queue bytes (large
// queues, then small ones) and queued signals. It prints how many it got
// and holds them until its stdin closes.
const quotaFill = `
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
rt = ctypes.CDLL("librt.so.1", use_errno=True)
n_in = 0
while n_in < 1000 and libc.inotify_init1(0o2000000) >= 0:
    n_in += 1
n_mq = 0
small = (ctypes.c_long * 8)(0, 4, 1024, 0)
for attr in (None, small):
    while n_mq < 200 and rt.mq_open(b"/fill%d" % n_mq, os.O_CREAT | os.O_RDWR, 0o600, attr) >= 0:
        n_mq += 1
class sigval(ctypes.Union):
    _fields_ = [("i", ctypes.c_int), ("p", ctypes.c_void_p)]
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
n_sig = 0
while n_sig < 300000 and libc.sigqueue(os.getpid(), signal.SIGRTMIN, sigval(0)) == 0:
    n_sig += 1
print("holding inotify %d mq %d signals %d" % (n_in, n_mq, n_sig), flush=True)
sys.stdin.read()
`

// quotaProbe is run on the host, as the test's user: it tries each of
// the per-user counts once.
const quotaProbe = `
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
rt = ctypes.CDLL("librt.so.1", use_errno=True)
def res(ok):
    return "ok" if ok else os.strerror(ctypes.get_errno())
print("inotify_init1", res(libc.inotify_init1(0o2000000) >= 0))
name = b"/coderunner-quota-%d" % os.getpid()
mq = rt.mq_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600, None)
print("mq_open", res(mq >= 0))
if mq >= 0:
    rt.mq_unlink(name)
class sigval(ctypes.Union):
    _fields_ = [("i", ctypes.c_int), ("p", ctypes.c_void_p)]
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
print("sigqueue", res(libc.sigqueue(os.getpid(), signal.SIGRTMIN, sigval(0)) == 0))
`

// hostPython runs quotaProbe; the sandbox's Python path need not exist
// on the host.
const hostPython = "/usr/bin/python3"

// lineWriter reports the first line written to it.
type lineWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	line chan string
	sent bool
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if line, _, ok := bytes.Cut(w.buf.Bytes(), []byte("\n")); ok && !w.sent {
		w.sent = true
		w.line <- string(line)
	}
	return len(p), nil
}

// testHostQuotas attacks the kernel's per-user counts: several
// sandboxes at once take all the inotify instances, message queue bytes
// and queued signals they can, and hold them while the host's user (the
// test's, root in CI) tries to use each. A sandbox whose user namespace
// host root created charges those counts to root too: enough sandboxes
// at their caps would take all of root's inotify instances (128 by
// default), so the test runs more than that many at once.
func (s *suite) testHostQuotas(t *testing.T) {
	const n = 128/kquota.InotifyInstances + 4
	type held struct {
		res *sandbox.Result
		err error
	}
	var stdins []*io.PipeWriter
	done := make(chan held, n)
	lines := make(chan string, n)
	defer func() {
		for _, w := range stdins {
			_ = w.Close()
		}
	}()
	for range n {
		r, w := io.Pipe()
		stdins = append(stdins, w)
		spec := s.py(quotaFill)
		spec.Stdin = r
		spec.Stdout = &lineWriter{line: lines}
		spec.Limits.WallTime = 60 * time.Second
		go func() {
			res, err := s.Backend.Run(context.Background(), spec)
			_ = r.Close()
			done <- held{res, err}
			lines <- "" // unblocks the wait below if the run ended early
		}()
	}
	var got []string
	for len(got) < n {
		line := <-lines
		if !strings.HasPrefix(line, "holding ") {
			h := <-done
			t.Fatalf("a sandbox ended before it held anything: %+v %v", h.res, h.err)
		}
		got = append(got, line)
	}
	t.Logf("%d sandboxes: %s", n, strings.Join(got, "; "))
	if s.QuotasPerSandbox {
		// Each got all it could, as much as any other, and something
		// of each count.
		for _, line := range got {
			var in, mq, sig int
			if _, err := fmt.Sscanf(line, "holding inotify %d mq %d signals %d", &in, &mq, &sig); err != nil || line != got[0] || in == 0 || mq == 0 || sig == 0 {
				t.Errorf("a sandbox was short while others held theirs: %q, another %q", line, got[0])
			}
		}
	}
	out, err := exec.Command(hostPython, "-c", quotaProbe).CombinedOutput()
	for _, w := range stdins {
		_ = w.Close()
	}
	for range n {
		h := <-done
		if h.err != nil {
			t.Fatal(h.err)
		}
		expect(t, h.res, sandbox.StatusOK)
	}
	if err != nil {
		t.Fatalf("host probe: %v: %s", err, out)
	}
	want := "inotify_init1 ok\nmq_open ok\nsigqueue ok\n"
	if string(out) != want {
		t.Fatalf("with %d sandboxes at their limits (%s) the host's user gets\n%s", n, strings.Join(got, "; "), out)
	}
}
