package native_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/native"
)

// seriesPid runs a shell that prints its process id in ser: 2, in a new
// sandbox or a kept one, since every run has a PID namespace of its own.
func seriesPid(t *testing.T, ser sandbox.Series, mutate func(*sandbox.Spec)) string {
	t.Helper()
	spec := &sandbox.Spec{
		Args:   []string{"/bin/sh", "-c", "echo $$"},
		Mounts: native.BaseMounts(),
		Limits: sandbox.Limits{WallTime: 10 * time.Second},
	}
	if mutate != nil {
		mutate(spec)
	}
	res, err := ser.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusOK {
		t.Fatalf("status %s, stderr %s", res.Status, res.Stderr)
	}
	return strings.TrimSpace(string(res.Stdout))
}

func TestSeriesKeepsOnlyWhatItCanClean(t *testing.T) {
	b := newBackend(t)
	defer b.Close()
	var hostWS string // a capped host workspace, made in its subtest
	tests := []struct {
		name   string
		mutate func(*sandbox.Spec)
		kept   bool
	}{
		{"read-only mounts", nil, true},
		{"a private workspace with files", func(s *sandbox.Spec) {
			s.Files = []sandbox.File{{Path: "in.txt", Content: []byte("x")}}
		}, true},
		{"a host workspace", func(s *sandbox.Spec) { s.Workspace = hostWS }, true},
		{"a writable mount", func(s *sandbox.Spec) {
			s.Mounts = append(s.Mounts, sandbox.Mount{Source: hostWS, Target: "/scratch", Writable: true})
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "a host workspace" || tt.name == "a writable mount" {
				hostWS = cappedDir(t)
			}
			ser := b.Series()
			defer ser.Close()
			first := seriesPid(t, ser, tt.mutate)
			before := native.KeptInits(ser)
			second := seriesPid(t, ser, tt.mutate)
			after := native.KeptInits(ser)
			if first != "2" || second != "2" {
				t.Fatalf("the shells are processes %s and %s, want 2 in namespaces of their own", first, second)
			}
			if kept := len(before) == 1 && len(after) == 1 && before[0] == after[0]; kept != tt.kept {
				t.Fatalf("inits kept %v after the first run, %v after the second: kept %v, want %v", before, after, kept, tt.kept)
			}
		})
	}
	if err := waitCleanNative(b); err != nil {
		t.Errorf("left behind: %v", err)
	}
}

func TestSeriesReplacesAKeptSandboxThatDied(t *testing.T) {
	b := newBackend(t)
	defer b.Close()
	ser := b.Series()
	defer ser.Close()
	if pid := seriesPid(t, ser, nil); pid != "2" {
		t.Fatalf("first run's shell is process %s, want 2 in a new sandbox", pid)
	}
	kept := native.KeptInits(ser)
	if len(kept) != 1 {
		t.Fatalf("%d sandboxes kept, want 1", len(kept))
	}
	if err := syscall.Kill(kept[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Let the kill land, so that the run finds the init dead rather
	// than dying.
	for range 100 {
		if syscall.Kill(kept[0], 0) != nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if pid := seriesPid(t, ser, nil); pid != "2" {
		t.Fatalf("the run after the kept sandbox died ran as process %s, want 2", pid)
	}
	if now := native.KeptInits(ser); len(now) != 1 || now[0] == kept[0] {
		t.Fatalf("inits kept after the run: %v, want one new one (the dead one was %d)", now, kept[0])
	}
}

func TestSeriesClose(t *testing.T) {
	b := newBackend(t)
	defer b.Close()
	ser := b.Series()
	seriesPid(t, ser, nil)
	if err := ser.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(native.KeptInits(ser)); n != 0 {
		t.Fatalf("%d sandboxes kept after Close", n)
	}
	// A run after Close still runs, and its sandbox is not kept.
	seriesPid(t, ser, nil)
	if n := len(native.KeptInits(ser)); n != 0 {
		t.Fatalf("%d sandboxes kept by a closed series", n)
	}
	if err := ser.Close(); err != nil {
		t.Fatal(err)
	}
	if err := waitCleanNative(b); err != nil {
		t.Errorf("left behind: %v", err)
	}
}

// waitCleanNative waits for the teardown of released sandboxes; those the
// backends keep idle for later runs are not left behind.
func waitCleanNative(backends ...*native.Backend) error {
	var err error
	for range 100 {
		if err = leftoversExcept(0, backends...); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

func TestBackendCloseReleasesKeptSandboxes(t *testing.T) {
	b := newBackend(t)
	ser := b.Series()
	seriesPid(t, ser, nil)
	if n := len(native.KeptInits(ser)); n != 1 {
		t.Fatalf("%d sandboxes kept, want 1", n)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(native.KeptInits(ser)); n != 0 {
		t.Fatalf("%d sandboxes kept after the backend closed", n)
	}
	if err := leftovers(); err != nil {
		t.Fatalf("left behind once Close returned: %v", err)
	}
}

// cappedDir is a host workspace as the callers make it: a size-capped
// tmpfs, removed at the end of the test.
func cappedDir(t *testing.T) string {
	t.Helper()
	testutil.RequireRoot(t)
	d, err := capws.New("", "series-ws-", sandbox.DefaultLimits.WorkspaceSize, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Remove() })
	return d.Path
}

// idleChildren waits until the kept init pid blocks for its next run (in
// poll on its config socket alone, its latest run's init reaped; or in
// recvmsg, where the kernel has no pidfds) and returns the children it has
// then, each with its state: an idle sandbox must hold nothing of the runs
// before.
func idleChildren(t *testing.T, pid int) []string {
	t.Helper()
	for range 1000 {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", pid))
		if err != nil {
			t.Fatal(err)
		}
		if idleCall(raw) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", pid))
	if err != nil {
		t.Fatal(err)
	}
	if !idleCall(raw) {
		t.Fatalf("the kept init never waited for its next run alone: %s", raw)
	}
	list, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		t.Fatal(err)
	}
	var children []string
	for _, c := range strings.Fields(string(list)) {
		stat, err := os.ReadFile("/proc/" + c + "/stat")
		if err != nil {
			children = append(children, c+" (gone)")
			continue
		}
		// The state follows the command's closing parenthesis.
		s := string(stat)
		children = append(children, c+" "+strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0])
	}
	return children
}

// idleCall reports whether /proc/PID/syscall says the init waits for its
// next run and nothing else: recvmsg, or poll of one descriptor.
func idleCall(raw []byte) bool {
	f := strings.Fields(string(raw))
	return len(f) > 2 && (f[0] == strconv.Itoa(unix.SYS_RECVMSG) || (f[0] == strconv.Itoa(unix.SYS_POLL) && f[2] == "0x1"))
}

// TestSeriesLeavesNoZombie runs, in one series, programs that double-fork
// and exit: between runs the kept init has reaped every process of the
// runs before, so that none is left as a zombie in the idle sandbox.
func TestSeriesLeavesNoZombie(t *testing.T) {
	b := newBackend(t)
	defer b.Close()
	ser := b.Series()
	defer ser.Close()
	spec := &sandbox.Spec{
		Args:   []string{"/bin/sh", "-c", "(sleep 1000 &); (sh -c 'sleep 1000 & exit 0' &); echo done"},
		Mounts: native.BaseMounts(),
		Limits: sandbox.Limits{WallTime: 10 * time.Second},
	}
	var init int
	for i := range 3 {
		res, err := ser.Run(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != sandbox.StatusOK || strings.TrimSpace(string(res.Stdout)) != "done" {
			t.Fatalf("run %d: status %s, stdout %q, stderr %q", i, res.Status, res.Stdout, res.Stderr)
		}
		kept := native.KeptInits(ser)
		if len(kept) != 1 || (init != 0 && kept[0] != init) {
			t.Fatalf("run %d: inits kept %v, want the same one (%d) throughout", i, kept, init)
		}
		init = kept[0]
		if children := idleChildren(t, init); len(children) != 0 {
			t.Fatalf("run %d: the idle sandbox's init has children %v, want none", i, children)
		}
	}
}

// TestSeriesKeepsOneMoreThanItRuns runs programs back to back, one at a
// time, with sandboxes started ahead of need: a run may take a warm
// sandbox rather than wait for the kept one to make itself ready, but the
// series then keeps no more than two (one more than its runs at once),
// and most runs are served by them.
func TestSeriesKeepsOneMoreThanItRuns(t *testing.T) {
	b := newBackendWith(t, native.Options{Warm: 2})
	defer b.Close()
	const runs = 20
	for range runs {
		reuseRun(t, b, nil, "/bin/true")
		if pids, _ := native.Idle(b); len(pids) > 2 {
			t.Fatalf("%d sandboxes kept after runs one at a time, want at most 2", len(pids))
		}
	}
	// Two runs (the first and one that took a warm sandbox) start in a
	// sandbox that is not kept, and a few more may where a kept one
	// could not be made ready: the rest are served by the two.
	if n := native.ReusedRuns(b); n < runs-4 {
		t.Fatalf("%d of %d runs were served by a kept sandbox, want at least %d", n, runs, runs-4)
	}
}
