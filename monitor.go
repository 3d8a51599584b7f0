package coderunner

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Sampler reads the cumulative CPU time and the current memory, in bytes,
// of what a ResourceMonitor watches.
type Sampler func() (cpu time.Duration, memory int64, err error)

// ResourceMonitor measures a program while it runs: Start begins monitoring,
// Update takes a sample while the program runs, Usage reports memory at
// the start and at the peak, the number of samples, and the average and
// peak CPU use. It is safe for concurrent use.
//
// The figures are computed as the sandbox computes them for a Result:
// each sample closes an interval that began at the previous one; the peak
// CPU is the highest ΔCPU/Δt of an interval and the average is the CPU
// time over the wall time, both in percent of one core.
type ResourceMonitor struct {
	sample Sampler
	now    func() time.Time

	mu      sync.Mutex
	started bool
	start   time.Time
	cpu0    time.Duration
	memory0 int64
	samples []monitorSample
}

type monitorSample struct {
	at     time.Duration
	cpu    time.Duration
	memory int64
}

// ErrNotStarted is returned by Update before Start.
var ErrNotStarted = errors.New("resource monitor not started")

// NewResourceMonitor returns a monitor that reads its samples from s.
func NewResourceMonitor(s Sampler) *ResourceMonitor {
	return &ResourceMonitor{sample: s, now: time.Now}
}

// Start begins monitoring: it forgets earlier samples and takes the first,
// whose memory is the start memory and whose CPU time is the baseline.
func (m *ResourceMonitor) Start() error {
	cpu, mem, err := m.sample()
	if err != nil {
		return fmt.Errorf("unable to start monitoring: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.started = true
	m.start = m.now()
	m.cpu0, m.memory0 = cpu, mem
	m.samples = m.samples[:0]
	return nil
}

// Update takes one sample.
func (m *ResourceMonitor) Update() error {
	m.mu.Lock()
	started := m.started
	m.mu.Unlock()
	if !started {
		return ErrNotStarted
	}
	cpu, mem, err := m.sample()
	if err != nil {
		return fmt.Errorf("unable to sample: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.samples = append(m.samples, monitorSample{at: m.now().Sub(m.start), cpu: cpu - m.cpu0, memory: mem})
	return nil
}

// Usage returns the figures of the samples taken since Start. Before the
// first Update only the start memory is known.
func (m *ResourceMonitor) Usage() ResourceUsage {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := ResourceUsage{
		MemoryStartMB: round(float64(m.memory0)/(1<<20), 2),
		MemoryPeakMB:  round(float64(m.memory0)/(1<<20), 2),
		CPUSamples:    len(m.samples),
	}
	if len(m.samples) == 0 {
		return u
	}
	peakMem := m.memory0
	peakCPU := 0.0
	var prev monitorSample
	for _, s := range m.samples {
		peakMem = max(peakMem, s.memory)
		if dt := s.at - prev.at; dt > 0 {
			peakCPU = max(peakCPU, percent(s.cpu-prev.cpu, dt))
		}
		prev = s
	}
	u.ExecutionTimeSeconds = round(prev.at.Seconds(), 3)
	u.CPUTimeSeconds = round(prev.cpu.Seconds(), 3)
	u.MemoryPeakMB = round(float64(peakMem)/(1<<20), 2)
	if prev.at > 0 {
		u.CPUAveragePercent = round(percent(prev.cpu, prev.at), 1)
	}
	u.CPUPeakPercent = max(round(peakCPU, 1), u.CPUAveragePercent)
	return u
}

func percent(cpu, wall time.Duration) float64 {
	if cpu < 0 {
		return 0
	}
	return float64(cpu) / float64(wall) * 100
}

func round(x float64, n int) float64 {
	p := math.Pow10(n)
	return math.Round(x*p) / p
}

// clockTicks is USER_HZ, the unit of the times in /proc/<pid>/stat; it is
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// ProcessSampler samples the process pid from /proc: the CPU time of the
// process and of its children it has waited for, and its resident memory.
func ProcessSampler(pid int) Sampler {
	return func() (time.Duration, int64, error) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, 0, err
		}
		cpu, err := parseStatCPU(string(stat))
		if err != nil {
			return 0, 0, err
		}
		statm, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
		if err != nil {
			return 0, 0, err
		}
		f := strings.Fields(string(statm))
		if len(f) < 2 {
			return 0, 0, fmt.Errorf("malformed /proc/%d/statm", pid)
		}
		pages, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("malformed /proc/%d/statm: %w", pid, err)
		}
		return cpu, pages * int64(os.Getpagesize()), nil
	}
}

// parseStatCPU reads utime+stime+cutime+cstime from a /proc/<pid>/stat
// line. The command name, in parentheses, may hold spaces and
// parentheses, so fields are counted from the last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("malformed stat: no command name")
	}
	// After ") " come field 3 (state) onwards; utime is field 14.
	f := strings.Fields(stat[i+1:])
	if len(f) < 15 {
		return 0, errors.New("malformed stat: too few fields")
	}
	var ticks int64
	for _, s := range f[11:15] {
		n, err := strconv.ParseInt(s, 10, 64)
		// 2^40 ticks are over 300 years: more is not a real process.
		if err != nil || n < 0 || n > 1<<40 {
			return 0, fmt.Errorf("malformed stat: CPU time %q", s)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / clockTicks), nil
}
