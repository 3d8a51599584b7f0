package sandboxtest

import (
	"sync"
	"testing"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

// countingWriter counts what a run's stream hands it, safely from the
// backend's reading goroutine.
type countingWriter struct {
	mu sync.Mutex
	n  int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.n += int64(len(p))
	w.mu.Unlock()
	return len(p), nil
}

func (w *countingWriter) count() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// testKeepOutput: with Spec.KeepOutput the Result holds only the start of
// each stream, however much the program writes under the cap, while the
// writers see every byte: a caller that judges output as it streams (the
// judge) holds none of it. Past the cap the run is stopped as usual.
func (s *suite) testKeepOutput(t *testing.T) {
	const keep, outCap, wrote = 1000, 4 << 20, 3 << 20
	var out, errw countingWriter
	spec := s.sh("head -c 3145728 /dev/zero; head -c 3145728 /dev/zero >&2")
	spec.Limits.OutputBytes = outCap
	spec.KeepOutput = keep
	spec.Stdout, spec.Stderr = &out, &errw
	res := s.run(t, spec)
	expect(t, res, sandbox.StatusOK)
	if len(res.Stdout) != keep || len(res.Stderr) != keep || res.Truncated() {
		t.Errorf("kept stdout %d stderr %d bytes (truncated %v), want %d of each", len(res.Stdout), len(res.Stderr), res.Truncated(), keep)
	}
	if out.count() != wrote || errw.count() != wrote {
		t.Errorf("the writers saw %d and %d bytes, want %d each", out.count(), errw.count(), wrote)
	}

	var over countingWriter
	spec = s.spec("/usr/bin/yes")
	spec.Limits.OutputBytes = 100000
	spec.KeepOutput = keep
	spec.Stdout = &over
	res = s.run(t, spec)
	expect(t, res, sandbox.StatusOutputLimit)
	if len(res.Stdout) != keep || !res.StdoutTruncated || over.count() != 100000 {
		t.Errorf("past the cap: kept %d bytes (truncated %v), writer saw %d; want %d kept, truncated, 100000 seen",
			len(res.Stdout), res.StdoutTruncated, over.count(), keep)
	}
}

// slowWriter takes its time over each write, as a caller that judges the
// output as it comes (or a slow terminal) may.
type slowWriter struct {
	countingWriter
	pause time.Duration
}

func (w *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(w.pause)
	return w.countingWriter.Write(p)
}

// testSlowReader: a caller slow to take the output loses none of it. The
// program ends with much of its output still on its way (in pipes, the
// engine's buffers); that output is the program's, not a leftover's, and
// the run waits for it.
func (s *suite) testSlowReader(t *testing.T) {
	const size = 1 << 20
	w := &slowWriter{pause: 10 * time.Millisecond}
	spec := s.sh("head -c 1048576 /dev/zero")
	spec.Limits.OutputBytes = 2 * size
	spec.KeepOutput = 1000
	spec.Stdout = w
	res := s.run(t, spec)
	expect(t, res, sandbox.StatusOK)
	if got := w.count(); got != size {
		t.Errorf("the writer got %d bytes of %d", got, size)
	}
}
