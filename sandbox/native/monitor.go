package native

import (
	"runtime"
	"sync"
	"time"

	"github.com/coderunner/coderunner/internal/cgroup"
	"github.com/coderunner/coderunner/sandbox"
)

// minCheck is the shortest pause between two looks at the CPU counter.
const minCheck = time.Millisecond

// monitor watches a run's cgroup: it enforces the CPU-time limit and takes
// the samples a caller asked for.
//
// The CPU limit is checked at a pace set by what is left of it: the tree
// cannot burn CPU faster than its quota (or the machine's cores), so the
// next look is due when the remainder could at the earliest be gone. That
// stops a run within a millisecond or two of its limit while waking rarely
// for runs far from it.
type monitor struct {
	group    *cgroup.Group
	limit    time.Duration
	rate     float64
	interval time.Duration
	start    time.Time

	quit     chan struct{}
	finished chan struct{}
	once     sync.Once

	samples []sandbox.Sample
	last    cgroup.Stats
}

func newMonitor(g *cgroup.Group, lim sandbox.Limits, interval time.Duration, start time.Time) *monitor {
	return &monitor{
		group:    g,
		limit:    lim.CPUTime,
		rate:     min(lim.CPUs, float64(runtime.NumCPU())),
		interval: interval,
		start:    start,
		quit:     make(chan struct{}),
		finished: make(chan struct{}),
	}
}

func (m *monitor) watch(over func()) {
	defer close(m.finished)
	if m.group == nil {
		return
	}
	next := m.pace(m.limit)
	lastSample := time.Duration(0)
	timer := time.NewTimer(next)
	defer timer.Stop()
	for {
		select {
		case <-m.quit:
			return
		case <-timer.C:
		}
		st, err := m.group.Stats()
		if err != nil {
			return
		}
		m.last = st
		at := time.Since(m.start)
		if m.interval > 0 && at-lastSample >= m.interval {
			m.samples = append(m.samples, sandbox.Sample{At: at, CPUTime: st.CPU, Memory: st.Memory})
			lastSample = at
		}
		if st.CPU >= m.limit {
			over()
			return
		}
		timer.Reset(m.pace(m.limit - st.CPU))
	}
}

// pace is how long the tree needs at full speed to use remaining CPU time,
// no longer than the sample interval.
func (m *monitor) pace(remaining time.Duration) time.Duration {
	d := time.Duration(float64(remaining) / m.rate)
	if m.interval > 0 && d > m.interval {
		d = m.interval
	}
	return max(d, minCheck)
}

func (m *monitor) stop() {
	m.once.Do(func() { close(m.quit) })
	<-m.finished
}

// finish stops the monitor and returns its samples plus one for the end of
// the run; the caller fills in the final CPU time.
func (m *monitor) finish(end time.Time) []sandbox.Sample {
	m.stop()
	final := sandbox.Sample{At: end.Sub(m.start), Memory: m.last.Memory}
	return append(m.samples, final)
}
