package native

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/cgroup"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
)

// refuseKill makes the kernel refuse SIGKILL, as it does to root without
// CAP_KILL, to a thread with any uid but those in allowed, and records
// the uids asked, until the test ends. With none allowed, killing through
// the cgroup fails too.
func refuseKill(t *testing.T, allowed ...int) (asked func() []int) {
	t.Helper()
	var mu sync.Mutex
	var uids []int
	real := sendKill
	sendKill = func(s *started, as int) error {
		mu.Lock()
		uids = append(uids, as)
		mu.Unlock()
		for _, a := range allowed {
			if a == as {
				return real(s, as)
			}
		}
		return unix.EPERM
	}
	t.Cleanup(func() { sendKill = real })
	if len(allowed) == 0 {
		realGroup := killGroup
		killGroup = func(*cgroup.Group) error { return unix.EPERM }
		t.Cleanup(func() { killGroup = realGroup })
	}
	return func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), uids...)
	}
}

// TestKillAsOwner kills an init the backend may not signal as itself: the
// signal goes from a thread with the uid that owns the init's user
// namespace, and the kill waits for the init's end.
func TestKillAsOwner(t *testing.T) {
	testutil.RequireRoot(t)
	b, err := New(Options{})
	if err != nil {
		t.Fatalf("native backend unavailable: %v", err)
	}
	defer b.Close()
	s, err := b.spawn(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if s.owner <= 0 {
		t.Fatalf("the init has no owner uid (%d) as root", s.owner)
	}
	// Not through the cgroup: the owner's signal must do it alone.
	group := s.group
	s.group = nil
	asked := refuseKill(t, s.owner)
	err = s.kill()
	s.group = group
	if err != nil {
		t.Fatalf("kill: %v", err)
	}
	if s.alive() {
		t.Fatal("the init is still there")
	}
	if got := asked(); len(got) != 2 || got[0] != 0 || got[1] != s.owner {
		t.Fatalf("signals sent as uids %v, want 0 then the owner %d", got, s.owner)
	}
	if err := s.discard(); err != nil {
		t.Fatal(err)
	}
}

// TestKillRefusedIsReported makes every signal to an init fail: kill
// returns the error at once instead of waiting for an end that will not
// come, a series' kept sandbox that cannot be released is reported by
// Close, and nothing hangs.
func TestKillRefusedIsReported(t *testing.T) {
	testutil.RequireRoot(t)
	b, err := New(Options{})
	if err != nil {
		t.Fatalf("native backend unavailable: %v", err)
	}
	defer b.Close()
	s, err := b.spawn(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	asked := refuseKill(t)
	err = s.kill()
	if !errors.Is(err, errUnkillable) || !errors.Is(err, unix.EPERM) {
		t.Fatalf("kill refused: %v, want an error that says so", err)
	}
	if !s.alive() {
		t.Fatal("the init ended, though nothing could kill it")
	}
	if got := asked(); len(got) != 2 {
		t.Fatalf("signals sent as uids %v, want as root, then as the owner", got)
	}
	// Removing the cgroup still kills it, with the backend's own
	// CAP_KILL.
	if err := s.discard(); !errors.Is(err, errUnkillable) {
		t.Fatalf("discard: %v, want the kill's error", err)
	}
	if _, err := s.waitFor(exitWait); err != nil {
		t.Fatalf("the init outlived its cgroup's removal: %v", err)
	}

	// A kept sandbox whose init cannot be killed: Close says so.
	ser := b.Series()
	res, err := ser.Run(context.Background(), &sandbox.Spec{
		Args:   []string{"/bin/true"},
		Mounts: BaseMounts(),
		Limits: sandbox.Limits{WallTime: 10 * time.Second},
	})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("run: %v %v", res, err)
	}
	if err := b.Close(); !errors.Is(err, errUnkillable) {
		t.Fatalf("Close: %v, want the kept sandbox's kill error", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v, want the error reported once", err)
	}
}
