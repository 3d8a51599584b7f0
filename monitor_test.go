package coderunner

import (
	"errors"
	"os/exec"
	"testing"
	"time"
)

// fakeClock steps by a fixed amount on every reading.
type fakeClock struct {
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time {
	c.t = c.t.Add(c.step)
	return c.t
}

func TestResourceMonitorFigures(t *testing.T) {
	// Samples: CPU 1s (baseline), then +50ms, +100ms, +0ms over 100ms
	// intervals; memory 10, 40, 25, 30 MB.
	samples := []struct {
		cpu time.Duration
		mem int64
	}{
		{time.Second, 10 << 20},
		{time.Second + 50*time.Millisecond, 40 << 20},
		{time.Second + 150*time.Millisecond, 25 << 20},
		{time.Second + 150*time.Millisecond, 30 << 20},
	}
	i := 0
	m := NewResourceMonitor(func() (time.Duration, int64, error) {
		s := samples[i]
		i++
		return s.cpu, s.mem, nil
	})
	clock := &fakeClock{t: time.Unix(0, 0), step: 100 * time.Millisecond}
	m.now = clock.now
	if err := m.Update(); !errors.Is(err, ErrNotStarted) {
		t.Errorf("Update before Start: %v", err)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	if u := m.Usage(); u.MemoryStartMB != 10 || u.MemoryPeakMB != 10 || u.CPUSamples != 0 {
		t.Errorf("usage after Start: %+v", u)
	}
	for range 3 {
		if err := m.Update(); err != nil {
			t.Fatal(err)
		}
	}
	want := ResourceUsage{
		ExecutionTimeSeconds: 0.3, CPUTimeSeconds: 0.15,
		MemoryStartMB: 10, MemoryPeakMB: 40,
		CPUSamples: 3, CPUAveragePercent: 50, CPUPeakPercent: 100,
	}
	if got := m.Usage(); got != want {
		t.Errorf("usage\n got %+v\nwant %+v", got, want)
	}
	// Start again forgets the samples.
	i = 0
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	if u := m.Usage(); u.CPUSamples != 0 {
		t.Errorf("samples kept across Start: %+v", u)
	}
}

func TestResourceMonitorProcess(t *testing.T) {
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 2000000 ]; do i=$((i+1)); done")
	if err := cmd.Start(); err != nil {
		t.Skip("no sh:", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	m := NewResourceMonitor(ProcessSampler(cmd.Process.Pid))
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		time.Sleep(30 * time.Millisecond)
		if err := m.Update(); err != nil {
			t.Fatal(err)
		}
	}
	u := m.Usage()
	// The first sample may catch the shell as it execs, with next to no
	// memory yet: the peak, not the start, must show it.
	if u.CPUSamples != 5 || u.MemoryStartMB < 0 || u.MemoryPeakMB <= 0 || u.MemoryPeakMB < u.MemoryStartMB {
		t.Errorf("usage %+v", u)
	}
	if u.CPUTimeSeconds <= 0 || u.CPUAveragePercent <= 0 || u.CPUPeakPercent < u.CPUAveragePercent {
		t.Errorf("a busy process shows no CPU use: %+v", u)
	}
	if _, _, err := ProcessSampler(-1)(); err == nil {
		t.Error("sampling a process that does not exist succeeded")
	}
}

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		stat string
		want time.Duration
		ok   bool
	}{
		{"42 (sh) R 1 42 42 0 -1 4194304 100 0 0 0 150 50 3 7 20 0 1 0 100 1000 200", 2100 * time.Millisecond, true},
		{"42 (a) b) (c) S 1 42 42 0 -1 0 0 0 0 0 1 2 3 4 20 0", 100 * time.Millisecond, true},
		{"42 sh R 1", 0, false},
		{"42 (sh) R 1 2 3", 0, false},
		{"42 (sh) R 1 42 42 0 -1 4194304 100 0 0 0 x 50 3 7 20", 0, false},
		{"42 (sh) R 1 42 42 0 -1 4194304 100 0 0 0 -1 50 3 7 20", 0, false},
		{"42 (sh) R 1 42 42 0 -1 4194304 100 0 0 0 99999999999999999 50 3 7 20", 0, false},
	}
	for _, tt := range tests {
		got, err := parseStatCPU(tt.stat)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseStatCPU(%q) = %v, %v; want %v, ok %v", tt.stat, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzParseStatCPU(f *testing.F) {
	f.Add("42 (sh) R 1 42 42 0 -1 4194304 100 0 0 0 150 50 3 7 20 0 1 0 100 1000 200")
	f.Add("1 ()) R")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseStatCPU(s)
		if err == nil && d < 0 {
			t.Errorf("negative CPU time %v from %q", d, s)
		}
	})
}
