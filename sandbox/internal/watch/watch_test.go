package watch

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

func TestCapture(t *testing.T) {
	var tee bytes.Buffer
	overs := 0
	c := NewCapture(10, &tee, func() { overs++ })
	if n, err := c.Write([]byte("hello")); n != 5 || err != nil {
		t.Fatalf("write under the cap: %d, %v", n, err)
	}
	if _, err := c.Write([]byte("world!!")); !errors.Is(err, ErrOverCap) {
		t.Fatalf("write past the cap: %v, want ErrOverCap", err)
	}
	if _, err := c.Write([]byte("more")); !errors.Is(err, ErrOverCap) {
		t.Fatalf("write after the cap: %v", err)
	}
	got, truncated := c.Result()
	if string(got) != "helloworld" || !truncated || overs != 1 || tee.String() != "helloworld" {
		t.Fatalf("kept %q truncated %v overs %d tee %q", got, truncated, overs, tee.String())
	}
}

// TestCaptureKeep: a bound on what is kept leaves the cap and the tee
// alone; the stream is still cut at the cap.
func TestCaptureKeep(t *testing.T) {
	var tee bytes.Buffer
	overs := 0
	c := NewCapture(10, &tee, func() { overs++ }).Keep(3)
	if n, err := c.Write([]byte("hello")); n != 5 || err != nil {
		t.Fatalf("write under the cap: %d, %v", n, err)
	}
	if n, err := c.Write([]byte("worl")); n != 4 || err != nil {
		t.Fatalf("write under the cap: %d, %v", n, err)
	}
	got, truncated := c.Result()
	if string(got) != "hel" || truncated || tee.String() != "helloworl" {
		t.Fatalf("kept %q truncated %v tee %q", got, truncated, tee.String())
	}
	if _, err := c.Write([]byte("d!")); !errors.Is(err, ErrOverCap) {
		t.Fatalf("write past the cap: %v, want ErrOverCap", err)
	}
	got, truncated = c.Result()
	if string(got) != "hel" || !truncated || overs != 1 || tee.String() != "helloworld" {
		t.Fatalf("kept %q truncated %v overs %d tee %q", got, truncated, overs, tee.String())
	}
	if c.Taken() != 10 {
		t.Errorf("Taken = %d, want the 10 bytes under the cap", c.Taken())
	}
	// A bound at or above the cap, or not positive, keeps up to the cap.
	for _, k := range []int64{0, -1, 10, 11} {
		c := NewCapture(10, nil, func() {}).Keep(k)
		_, _ = c.Write([]byte("0123456789"))
		if got, _ := c.Result(); len(got) != 10 {
			t.Errorf("Keep(%d): kept %d bytes, want 10", k, len(got))
		}
	}
}

func TestCaptureDrain(t *testing.T) {
	c := NewCapture(1<<20, nil, func() { t.Error("over called under the cap") })
	c.Drain(strings.NewReader(strings.Repeat("x", 200000)))
	select {
	case <-c.Done():
	default:
		t.Fatal("Drain returned without marking the capture done")
	}
	if got, tr := c.Result(); len(got) != 200000 || tr {
		t.Fatalf("%d bytes, truncated %v", len(got), tr)
	}
}

func TestDecodeExit(t *testing.T) {
	for _, tc := range []struct {
		code, exit int
		sig        syscall.Signal
	}{
		{0, 0, 0}, {1, 1, 0}, {128, 128, 0}, {137, -1, syscall.SIGKILL},
		{139, -1, syscall.SIGSEGV}, {192, -1, syscall.Signal(64)}, {193, 193, 0}, {255, 255, 0},
	} {
		exit, sig := DecodeExit(tc.code)
		if exit != tc.exit || sig != tc.sig {
			t.Errorf("DecodeExit(%d) = %d, %v; want %d, %v", tc.code, exit, sig, tc.exit, tc.sig)
		}
	}
}

func TestDecide(t *testing.T) {
	const limit = time.Second
	for _, tc := range []struct {
		name   string
		res    sandbox.Result
		reason Reason
		want   sandbox.Status
		kind   string
	}{
		{"ok", sandbox.Result{}, ReasonNone, sandbox.StatusOK, ""},
		{"exit", sandbox.Result{ExitCode: 3}, ReasonNone, sandbox.StatusNonzeroExit, ""},
		{"signal", sandbox.Result{ExitCode: -1, Signal: syscall.SIGSEGV}, ReasonNone, sandbox.StatusSignaled, ""},
		{"output beats wall", sandbox.Result{ExitCode: -1, Signal: syscall.SIGKILL}, ReasonOutput, sandbox.StatusOutputLimit, ""},
		{"wall", sandbox.Result{ExitCode: -1, Signal: syscall.SIGKILL}, ReasonWall, sandbox.StatusTimeLimit, "wall"},
		{"cpu monitor", sandbox.Result{ExitCode: -1, Signal: syscall.SIGKILL}, ReasonCPU, sandbox.StatusTimeLimit, "cpu"},
		{"cpu rlimit", sandbox.Result{ExitCode: -1, Signal: syscall.SIGXCPU}, ReasonNone, sandbox.StatusTimeLimit, "cpu"},
		{"oom", sandbox.Result{ExitCode: -1, Signal: syscall.SIGKILL, MemoryExceeded: true}, ReasonNone, sandbox.StatusMemoryLimit, ""},
		{"oom of a child only", sandbox.Result{MemoryExceeded: true}, ReasonNone, sandbox.StatusOK, ""},
		{"killed over the cpu limit", sandbox.Result{ExitCode: -1, Signal: syscall.SIGKILL, CPUTime: 2 * limit}, ReasonNone, sandbox.StatusTimeLimit, "cpu"},
	} {
		res := tc.res
		if err := Decide(&res, tc.reason, limit, nil); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if res.Status != tc.want || res.TimeLimit != tc.kind {
			t.Errorf("%s: %s %q, want %s %q", tc.name, res.Status, res.TimeLimit, tc.want, tc.kind)
		}
	}
}

func TestMonitorCPULimit(t *testing.T) {
	var cpu time.Duration
	read := func() (Usage, error) {
		cpu += 40 * time.Millisecond
		return Usage{CPU: cpu, Memory: int64(cpu)}, nil
	}
	lim := sandbox.Limits{CPUTime: 100 * time.Millisecond, CPUs: 1}
	m := NewMonitor(read, lim, time.Millisecond, 0, time.Now())
	over := make(chan struct{})
	go m.Watch(func() { close(over) })
	select {
	case <-over:
	case <-time.After(10 * time.Second):
		t.Fatal("the CPU limit was never reported")
	}
	samples := m.Finish(time.Now(), cpu, 7)
	last := samples[len(samples)-1]
	if len(samples) < 2 || last.CPUTime != cpu {
		t.Fatalf("samples %+v: want the readings and a final one with the run's CPU time", samples)
	}
	if samples[len(samples)-2].At > last.At {
		t.Fatalf("the final sample comes before the last reading: %+v", samples)
	}
	if m.PeakSeen() < int64(100*time.Millisecond) {
		t.Fatalf("peak seen %d", m.PeakSeen())
	}
}

// TestDecideLost: a killed program whose end the backend cannot tell is
// the backend's error, unless a limit or the OOM killer explains the kill.
func TestDecideLost(t *testing.T) {
	died := errors.New("init died")
	lost := func() error { return died }
	killed := sandbox.Result{ExitCode: -1, Signal: syscall.SIGKILL}
	res := killed
	if err := Decide(&res, ReasonNone, time.Second, lost); !errors.Is(err, died) {
		t.Fatalf("unexplained kill: %v, want the backend's error", err)
	}
	res = killed
	res.MemoryExceeded = true
	if err := Decide(&res, ReasonNone, time.Second, lost); err != nil || res.Status != sandbox.StatusMemoryLimit {
		t.Fatalf("OOM kill: %v, %s", err, res.Status)
	}
	res = killed
	if err := Decide(&res, ReasonCPU, time.Second, lost); err != nil || res.Status != sandbox.StatusTimeLimit {
		t.Fatalf("CPU limit: %v, %s", err, res.Status)
	}
}
