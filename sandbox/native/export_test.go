package native

import (
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/sandbox"
)

// WithHostTreeAttached returns opts for a backend whose sandboxes keep the
// host's tree attached until their second phase is done, the path taken on
// kernels before Linux 6.15.
func WithHostTreeAttached(opts Options) Options {
	opts.keepHostAttached = true
	return opts
}

// WithAlternatives returns opts for a backend that binds the host
// directory dir at /etc/alternatives instead of the host's own.
func WithAlternatives(opts Options, dir string) Options {
	opts.alternatives = dir
	return opts
}

// WithoutAttach returns opts for a backend that binds a host workspace
// out of a new sandbox's copy of the host's tree, the path taken where the
// kernel cannot send a workspace's mount to a sandbox.
func WithoutAttach(opts Options) Options {
	opts.noAttach = true
	return opts
}

// WithUnattachableWorkspace returns opts for a backend that sends the
// sandbox, for a host workspace, a descriptor of the directory instead
// of a detached mount: the init's attach fails as on a kernel that does
// not allow it.
func WithUnattachableWorkspace(opts Options) Options {
	opts.clone = func(dir string) (*os.File, error) {
		return os.OpenFile(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	return opts
}

// ColdStarts returns how many sandboxes b started for a run that found
// none ready.
func ColdStarts(b *Backend) uint64 { return b.coldStarts.Load() }

// WaitWarm waits, for up to 30 seconds, until b's pool has a sandbox
// ready, and reports whether it has.
func WaitWarm(b *Backend) bool {
	for range 3000 {
		if len(b.pool.ready) > 0 {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// KeptInits returns the process ids of the inits ser keeps idle.
func KeptInits(ser sandbox.Series) []int {
	s := ser.(*series)
	s.mu.Lock()
	defer s.mu.Unlock()
	pids := make([]int, 0, len(s.idle))
	for _, k := range s.idle {
		pids = append(pids, k.sp.proc.Pid)
	}
	return pids
}

// ReusedRuns returns how many runs of b were served by a sandbox kept from
// an earlier run.
func ReusedRuns(b *Backend) uint64 { return b.reusedRuns.Load() }

// Idle returns the process ids of the inits b keeps idle for later runs,
// and the names of their cgroups.
func Idle(b *Backend) (pids []int, groups []string) {
	if b.kept == nil {
		return nil, nil
	}
	b.kept.mu.Lock()
	defer b.kept.mu.Unlock()
	for _, k := range b.kept.idle {
		pids = append(pids, k.sp.proc.Pid)
		if k.sp.group != nil {
			groups = append(groups, k.sp.group.Name())
		}
	}
	return pids, groups
}

// WaitKeptAnswered waits, for up to 30 seconds, until every sandbox b
// keeps between requests has answered whether it is ready for another
// run, and reports whether they have. A request that comes sooner may
// rightly take a warm sandbox instead of waiting; tests that assert a
// request ran in the kept sandbox wait for the answer first, so that
// they do not depend on how fast the machine is.
func WaitKeptAnswered(b *Backend) bool {
	if b.kept == nil {
		return true
	}
	for range 3000 {
		b.kept.mu.Lock()
		all := true
		for _, k := range b.kept.idle {
			if answered, _ := k.sp.answered(); !answered {
				all = false
			}
		}
		b.kept.mu.Unlock()
		if all {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}
