package watch

import (
	"runtime"
	"sync"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

// minCheck is the shortest pause between two looks at the CPU counter.
const minCheck = time.Millisecond

// Usage is one reading of a run's counters.
type Usage struct {
	// CPU is the cumulative user+system time of the whole tree.
	CPU time.Duration
	// Memory is the memory the tree uses now.
	Memory int64
}

// Source reads a run's counters (a cgroup, or the container engine).
type Source func() (Usage, error)

// Monitor watches a run: it enforces the CPU-time limit and takes the
// samples a caller asked for.
//
// The CPU limit is checked at a pace set by what is left of it: the tree
// cannot burn CPU faster than its quota (or the machine's cores), so the
// next look is due when the remainder could at the earliest be gone.
type Monitor struct {
	read     Source
	limit    time.Duration
	rate     float64
	interval time.Duration
	// maxPause bounds the pause between two readings, for sources whose
	// samples are also the memory measurement.
	maxPause time.Duration
	start    time.Time

	quit     chan struct{}
	finished chan struct{}
	once     sync.Once

	samples []sandbox.Sample
	last    Usage
	peak    int64
}

// NewMonitor returns a monitor of read for a run with lim that started at
// start. interval is Spec.SampleInterval; maxPause, when positive, makes
// the monitor read at least that often.
func NewMonitor(read Source, lim sandbox.Limits, interval, maxPause time.Duration, start time.Time) *Monitor {
	return &Monitor{
		read:     read,
		limit:    lim.CPUTime,
		rate:     min(lim.CPUs, float64(runtime.NumCPU())),
		interval: interval,
		maxPause: maxPause,
		start:    start,
		quit:     make(chan struct{}),
		finished: make(chan struct{}),
	}
}

// Watch reads the counters until Stop, calling over once the CPU limit is
// reached. A nil source returns at once.
func (m *Monitor) Watch(over func()) {
	defer close(m.finished)
	if m.read == nil {
		return
	}
	lastSample := time.Duration(0)
	timer := time.NewTimer(m.pace(m.limit))
	defer timer.Stop()
	for {
		select {
		case <-m.quit:
			return
		case <-timer.C:
		}
		u, err := m.read()
		if err != nil {
			return
		}
		m.last = u
		m.peak = max(m.peak, u.Memory)
		at := time.Since(m.start)
		if m.interval > 0 && at-lastSample >= m.interval {
			m.samples = append(m.samples, sandbox.Sample{At: at, CPUTime: u.CPU, Memory: u.Memory})
			lastSample = at
		}
		if u.CPU >= m.limit {
			over()
			return
		}
		timer.Reset(m.pace(m.limit - u.CPU))
	}
}

// pace is how long the tree needs at full speed to use remaining CPU time,
// no longer than the sample interval.
func (m *Monitor) pace(remaining time.Duration) time.Duration {
	d := time.Duration(float64(remaining) / m.rate)
	if m.interval > 0 && d > m.interval {
		d = m.interval
	}
	if m.maxPause > 0 && d > m.maxPause {
		d = m.maxPause
	}
	return max(d, minCheck)
}

// Stop ends Watch and waits for it; it is safe to call more than once.
func (m *Monitor) Stop() {
	m.once.Do(func() { close(m.quit) })
	<-m.finished
}

// PeakSeen is the largest memory reading taken while the run went on.
func (m *Monitor) PeakSeen() int64 {
	m.Stop()
	return m.peak
}

// Finish stops the monitor and returns its samples plus one for the end of
// the run with the final CPU time and peak memory: the last sample carries
// the run's totals, as on the native backend.
func (m *Monitor) Finish(end time.Time, cpu time.Duration, peak int64) []sandbox.Sample {
	m.Stop()
	final := sandbox.Sample{At: end.Sub(m.start), CPUTime: cpu, Memory: m.last.Memory}
	if n := len(m.samples); n > 0 && m.samples[n-1].At > final.At {
		// A reading landed between the end and the monitor's stop.
		final.At = m.samples[n-1].At
	}
	if len(m.samples) == 0 {
		// Too short to be sampled while running: its peak is the best
		// account of its memory.
		final.Memory = peak
	}
	return append(m.samples, final)
}
