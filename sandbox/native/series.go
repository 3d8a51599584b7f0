package native

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/internal/hostws"
)

// maxKept bounds the idle sandboxes one series keeps: one per run it had
// under way at once is all it can use.
const maxKept = 16

// Series returns a new series of runs that keeps the sandbox of a run that
// ended normally for the next run of the same shape; see sandbox.Series.
//
// Every run, the first included, has PID, IPC and mount namespaces of its
// own, nested in the sandbox's: when it ends, everything in them is
// killed and reaped and its SysV IPC objects removed, so the next run
// finds no process, no IPC object and no process id that tells what an
// earlier run did. Each run has a mount namespace of its own, where /tmp
// and /workspace are new tmpfs mounts, torn down with the run; the next
// program gets its own pipes, and the cgroup's peak memory reset, its CPU
// time and OOM kills counted from its start. The user, network and UTS
// namespaces and the sandbox's mounts stay: the program cannot change
// them (no capability, a read-only root, seccomp).
//
// A run's host workspace is attached at /workspace in the run's mount
// namespace, and goes with it. A sandbox whose run left a socket in its
// network namespace (even a TCP connection in TIME_WAIT) is not kept. The
// backend's own series, which every Run goes through unless
// Options.PerRequest, keeps sandboxes from one request's run to another's.
// Its runs' /tmp and /workspace are new, not emptied (a tmpfs numbers its
// inodes on from where an earlier run left it, which tells how many files
// that run made), and their usage is measured apart from what earlier runs
// left charged to the cgroup; a sandbox holding more than keepDrift of it
// (a file's pages a run read into the cache, memory the kernel frees
// later) is not reused.
// Runs that bind a host workspace (where its mount cannot be attached) or
// a writable mount, and backends without cgroups, get a new sandbox each
// time.
//
// Backend.Close closes the series still open.
func (b *Backend) Series() sandbox.Series { return b.newSeries() }

// keepDrift bounds the memory a kept sandbox's cgroup may hold beyond
// what it held before its first run (page cache and kernel objects the
// runs left charged to it): past it the sandbox is not reused, so that
// a run cannot make a later one's memory figures tell what it read.
const keepDrift = 4 << 20

func (b *Backend) newSeries() *series {
	s := &series{b: b}
	b.seriesMu.Lock()
	defer b.seriesMu.Unlock()
	if b.open == nil {
		b.open = map[*series]struct{}{}
	}
	b.open[s] = struct{}{}
	return s
}

// closeSeries closes every series still open.
func (b *Backend) closeSeries() {
	b.seriesMu.Lock()
	open := b.open
	b.open = nil
	b.seriesMu.Unlock()
	for s := range open {
		_ = s.Close()
	}
}

var _ sandbox.Reuser = (*Backend)(nil)

type series struct {
	b *Backend
	// requests is set for the backend's own series (Backend.Run), whose
	// runs belong to different requests: a kept sandbox must not let one
	// request's memory show in another's figures. The runs of a caller's
	// series are one request's (a judge's tests of one program).
	requests bool

	mu     sync.Mutex
	idle   []keptSandbox
	closed bool
}

// keptSandbox is an idle sandbox of a series, with the mounts its second
// phase made: only a run with the same mounts can use it.
type keptSandbox struct {
	sp     *started
	mounts string
}

func (s *series) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	p, err := sandbox.PreparedToRun(ctx, spec)
	if err != nil {
		return nil, err
	}
	if err := hostws.Capped(p); err != nil {
		return nil, err
	}
	owner := s
	if !s.keeps(p) {
		owner = nil
	}
	for attempt := 0; ; attempt++ {
		r := &run{b: s.b, spec: p, id: s.b.runID.Add(1), series: owner}
		res, err := r.execute(ctx)
		r.close()
		// A kept sandbox that failed before the run's stdin was touched
		// (its init died while idle) is replaced by a new one.
		if err == nil || !r.reused || r.fed || attempt > 0 || !errors.Is(err, sandbox.ErrSetup) {
			return res, err
		}
		s.b.log.Warn("a kept sandbox failed, the run starts again in a new one", "run", r.id, "error", err)
	}
}

// keeps reports whether the sandbox of spec can be kept: nothing it
// writes may be outside the scratch mounts the run has anew (or the host
// workspace attached in its mount namespace: a workspace bound instead is
// seen by plan), and
// a run's usage must be measurable apart from the previous one's.
func (s *series) keeps(spec *sandbox.Spec) bool {
	if s.b.cgroups == nil {
		return false
	}
	for _, m := range spec.Mounts {
		if m.Writable {
			return false
		}
	}
	return true
}

// take returns the idle sandbox made with mounts that was kept last of
// those whose init said it is ready for another run, or nil, and how many
// others made with mounts are still waiting for their init's answer (see
// takeWaiting). Sandboxes whose init ended, or said it cannot serve
// another run, are released on the way.
func (s *series) take(mounts string) (sp *started, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.idle) - 1; i >= 0; i-- {
		k := s.idle[i]
		if k.mounts != mounts {
			continue
		}
		answered, err := k.sp.answered()
		switch {
		case !answered:
			waiting++
		case err != nil || !k.sp.alive():
			s.idle = slices.Delete(s.idle, i, i+1)
			s.release(k.sp)
		default:
			s.idle = slices.Delete(s.idle, i, i+1)
			return k.sp, waiting
		}
	}
	return nil, waiting
}

// takeWaiting returns the idle sandbox made with mounts that has waited
// the longest for its init's answer, which the run then waits for, or
// nil.
func (s *series) takeWaiting(mounts string) *started {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, k := range s.idle {
		if k.mounts == mounts {
			s.idle = slices.Delete(s.idle, i, i+1)
			return k.sp
		}
	}
	return nil
}

// put keeps sp, whose run is over, for a later run, and starts reading
// its init's answer to whether it is ready for one (awaitReady); past
// maxKept the sandbox idle the longest goes.
func (s *series) put(sp *started, mounts string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.release(sp)
		return
	}
	sp.awaitReady()
	if len(s.idle) >= maxKept {
		s.release(s.idle[0].sp)
		s.idle = slices.Delete(s.idle, 0, 1)
	}
	s.idle = append(s.idle, keptSandbox{sp: sp, mounts: mounts})
}

// release tears sp down in the background; Backend.Close waits for it.
func (s *series) release(sp *started) {
	s.b.teardown.Add(1)
	go func() {
		defer s.b.teardown.Done()
		if err := sp.discard(); err != nil {
			s.b.tornDown(fmt.Errorf("unable to release a kept sandbox: %w", err))
		}
	}()
}

// Close releases the idle sandboxes. It is safe to call more than once.
func (s *series) Close() error {
	s.b.seriesMu.Lock()
	delete(s.b.open, s)
	s.b.seriesMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, k := range s.idle {
		s.release(k.sp)
	}
	s.idle = nil
	return nil
}

// acquire returns the sandbox for the run: one its series kept, made
// ready for it, or else a warm or new one.
func (r *run) acquire() (*started, error) {
	if r.series != nil {
		mounts := string(r.mounts.buf)
		sp, waiting := r.series.take(mounts)
		if sp == nil && waiting == 1 && r.series.requests {
			// The one kept sandbox is still making itself ready (its
			// init unmounts and mounts, which waits for the kernel):
			// a warm one, if there is one, spares the request the
			// wait, and the series keeps it too. With two or more
			// waiting, the run waits instead, for the one that has
			// waited the longest: so the backend's series keeps at
			// most one sandbox more than it has runs at once, and
			// never gives one up for a new one while the machine is
			// slow. A caller's series (a judge's tests of one
			// program) keeps to its own sandboxes.
			if w, err := r.b.takeWarm(r.spec.Limits, r.sources, r.workspace); w != nil || err != nil {
				return r.first(w, err)
			}
		}
		if sp == nil && waiting > 0 {
			sp = r.series.takeWaiting(mounts)
		}
		if sp != nil {
			err := r.reuse(sp)
			if err == nil {
				r.reused = true
				r.b.reusedRuns.Add(1)
				return sp, nil
			}
			if !errors.Is(err, errDrifted) && !errors.Is(err, errNotReady) {
				r.b.log.Warn("unable to reuse a kept sandbox", "run", r.id, "error", err)
			}
			r.series.release(sp)
		}
	}
	return r.first(r.b.take(r.spec.Limits, r.sources, r.workspace))
}

// first readies sp, a warm or new sandbox taken for the run (or fails
// with err), for its first run.
func (r *run) first(sp *started, err error) (*started, error) {
	if err != nil || r.series == nil || !r.series.requests || sp.group == nil {
		return sp, err
	}
	// What the cgroup holds before the sandbox's first run (its init,
	// its root) is what later runs are measured against.
	st, err := sp.group.Stats()
	if err != nil {
		r.b.discardLogged(sp, "a sandbox whose cgroup could not be read")
		return nil, fmt.Errorf("%w: unable to read cgroup: %w", sandbox.ErrSetup, err)
	}
	sp.startMemory = st.Memory
	return sp, nil
}

// errDrifted is reuse's error for a kept sandbox whose cgroup holds more
// than keepDrift beyond what it held before its first run.
var errDrifted = errors.New("a kept sandbox holds memory its runs left charged")

// reuse sets a kept sandbox's cgroup for the run: its limits, a peak
// memory of its own, and the counters the run's usage is measured from.
func (r *run) reuse(sp *started) error {
	if err := sp.whenReady(); err != nil {
		return err
	}
	lim := r.spec.Limits
	r.b.recent.Store(&lim)
	if want := cgroupLimits(lim); sp.limits != want {
		if err := sp.group.Update(want); err != nil {
			return err
		}
		sp.limits = want
	} else if err := sp.group.RefillCPU(want); err != nil {
		// The quota an earlier run used in the current period is the
		// kernel's to refill: without this, a run would wait for the
		// next period (and so learn how much CPU the one before used).
		return err
	}
	base, err := sp.group.Stats()
	if err != nil {
		return fmt.Errorf("unable to read cgroup: %w", err)
	}
	if r.series.requests {
		// The run's memory is counted from what the sandbox held before
		// its first run: what earlier requests left charged is not the
		// run's, and past keepDrift the sandbox is not reused at all.
		drift := base.Memory - sp.startMemory
		if drift > keepDrift {
			return errDrifted
		}
		r.drift = max(drift, 0)
	}
	if err := sp.group.ResetPeak(); err != nil {
		return err
	}
	r.base = base
	return sp.newStreams()
}
