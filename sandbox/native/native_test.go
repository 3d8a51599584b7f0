package native_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/native"
	"github.com/coderunner/coderunner/sandbox/native/nsinit"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

func newBackend(t testing.TB) *native.Backend {
	t.Helper()
	return newBackendWith(t, native.Options{})
}

func newBackendWith(t testing.TB, opts native.Options) *native.Backend {
	t.Helper()
	testutil.RequireRoot(t)
	b, err := native.New(opts)
	if err != nil {
		t.Fatalf("native backend unavailable: %v", err)
	}
	// The sandboxes it keeps for later runs go when the test ends, if
	// the test did not close it itself.
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestConformance(t *testing.T) {
	b := newBackend(t)
	cc, _ := exec.LookPath("gcc")
	testutil.Require(t, cc != "", "gcc is needed to build the 32-bit syscall probe")
	sandboxtest.Run(t, sandboxtest.Env{
		Backend:   b,
		Mounts:    native.BaseMounts(),
		CC:        cc,
		Leftovers: func() error { return leftoversExcept(0, b) },
		Kept:      keptInits,
		// As root every sandbox's user namespace has an owner uid of
		// its own.
		QuotasPerSandbox: true,
	})
}

// leftovers finds processes running as the sandbox's host uids and run
// cgroups of this process.
func leftovers() error { return leftoversExcept(0) }

// leftoversExcept allows up to warm inits started ahead of need, and their
// cgroups: they wait for a run as the host uid that owns their user
// namespace, before they take the sandbox's uids. It also allows the
// sandboxes backends keep idle for later runs, and their cgroups: those
// are accounted for by name.
func leftoversExcept(warm int, backends ...*native.Backend) error {
	var found []string
	inits := 0
	idle, idleGroups := map[int]bool{}, map[string]bool{}
	for _, b := range backends {
		pids, groups := native.Idle(b)
		for _, pid := range pids {
			idle[pid] = true
		}
		for _, g := range groups {
			idleGroups[g] = true
		}
	}
	// Only this test process's sandboxes count: other packages' tests
	// run sandboxes under the same uids at the same time.
	for _, p := range testutil.Descendants() {
		pid, uid := p.PID, p.UID
		if cmd, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline")); strings.HasPrefix(string(cmd), nsinit.ArgV0+"\x00") {
			if idle[pid] {
				continue
			}
			if inits++; inits > warm {
				found = append(found, fmt.Sprintf("sandbox init %d", pid))
			}
			continue
		}
		if uid >= native.DefaultHostUIDBase && uid <= native.DefaultHostUIDBase+65536 {
			found = append(found, fmt.Sprintf("process %d (uid %d)", pid, uid))
		}
	}
	prefix := fmt.Sprintf("run-%d-", os.Getpid())
	groups := map[string][]string{}
	_ = filepath.WalkDir("/sys/fs/cgroup", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), prefix) {
			if !idleGroups[d.Name()] {
				groups[d.Name()] = append(groups[d.Name()], path)
			}
			return filepath.SkipDir
		}
		if strings.Count(path, "/") > 8 {
			return filepath.SkipDir
		}
		return nil
	})
	if len(groups) > warm {
		for _, paths := range groups {
			found = append(found, "cgroup "+strings.Join(paths, " "))
		}
	}
	if len(found) > 0 {
		return fmt.Errorf("%s", strings.Join(found, ", "))
	}
	return nil
}

// newWarmBackend is a native backend that keeps 2 sandboxes started ahead
// of need, closed when the test ends.
func newWarmBackend(t *testing.T) *native.Backend {
	t.Helper()
	testutil.RequireRoot(t)
	b, err := native.New(native.Options{Warm: 2})
	if err != nil {
		t.Fatalf("native backend unavailable: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestConformanceWarm(t *testing.T) {
	testutil.RequireRoot(t)
	b, err := native.New(native.Options{Warm: 2})
	if err != nil {
		t.Fatalf("native backend unavailable: %v", err)
	}
	cc, _ := exec.LookPath("gcc")
	testutil.Require(t, cc != "", "gcc is needed to build the 32-bit syscall probe")
	sandboxtest.Run(t, sandboxtest.Env{
		Backend: b,
		Mounts:  native.BaseMounts(),
		CC:      cc,
		// The warm inits are this backend's, not a run's leftovers.
		Leftovers:        func() error { return leftoversExcept(2, b) },
		Kept:             keptInits,
		QuotasPerSandbox: true,
	})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := leftovers(); err != nil {
		t.Fatalf("after Close: %v", err)
	}
}

// TestBaseMountsSpelledOut passes the mounts every sandbox already has with
// their targets written out, as the language table does.
func TestBaseMountsSpelledOut(t *testing.T) {
	b := newBackend(t)
	var mounts []sandbox.Mount
	for _, m := range native.BaseMounts() {
		mounts = append(mounts, sandbox.Mount{Source: m.Source, Target: m.TargetPath()})
	}
	res, err := b.Run(context.Background(), &sandbox.Spec{Args: []string{"/bin/true"}, Mounts: mounts})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("run with spelled-out base mounts: %v %+v", err, res)
	}
}

// TestWarmMountedWorkspace gives a warm backend a workspace that became a
// tmpfs mount after its sandboxes were started: the run must see the tmpfs
// (and the file in it), not the empty directory under it.
func TestWarmMountedWorkspace(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tc := range []struct {
		name string
		opts native.Options
	}{
		{"attached", native.Options{Warm: 2}},
		{"bound", native.WithoutAttach(native.Options{Warm: 2})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := native.New(tc.opts)
			if err != nil {
				t.Fatalf("native backend unavailable: %v", err)
			}
			defer b.Close()
			testWarmMountedWorkspace(t, b)
		})
	}
}

func testWarmMountedWorkspace(t *testing.T, b *native.Backend) {
	// Let the warm sandboxes start before the mount exists.
	if _, err := b.Run(context.Background(), &sandbox.Spec{Args: []string{"/bin/true"}, Mounts: native.BaseMounts()}); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "warm-ws-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := capws.Mount(dir, 4*sandbox.MiB, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	if err := os.WriteFile(filepath.Join(dir, "seen.txt"), []byte("on the tmpfs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := b.Run(context.Background(), &sandbox.Spec{
		Args: []string{"/bin/cat", "seen.txt"}, Mounts: native.BaseMounts(), Workspace: dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusOK || string(res.Stdout) != "on the tmpfs\n" {
		t.Fatalf("status %s stdout %q stderr %q", res.Status, res.Stdout, res.Stderr)
	}
}

// TestWarmSandboxServesHostWorkspace attacks the cost of a host workspace:
// a run with one, mounted after the warm sandboxes started, must be served
// by one of them (its mount sent to it), not by a sandbox started for it.
func TestWarmSandboxServesHostWorkspace(t *testing.T) {
	testutil.RequireRoot(t)
	b, err := native.New(native.Options{Warm: 1})
	if err != nil {
		t.Fatalf("native backend unavailable: %v", err)
	}
	defer b.Close()
	if !native.WaitWarm(b) {
		t.Fatal("no warm sandbox after 30 s")
	}
	ws, err := capws.New("", "warm-served-", 4*sandbox.MiB, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ws.Remove() }()
	before := native.ColdStarts(b)
	res, err := b.Run(context.Background(), &sandbox.Spec{
		Args:      []string{"/bin/sh", "-c", "echo made > out.txt && cat out.txt"},
		Mounts:    native.BaseMounts(),
		Workspace: ws.Path,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusOK || string(res.Stdout) != "made\n" {
		t.Fatalf("status %s stdout %q stderr %q", res.Status, res.Stdout, res.Stderr)
	}
	if got, err := os.ReadFile(filepath.Join(ws.Path, "out.txt")); err != nil || string(got) != "made\n" {
		t.Fatalf("the program's file on the host: %q, %v", got, err)
	}
	if n := native.ColdStarts(b) - before; n != 0 {
		t.Fatalf("the run started %d sandboxes of its own instead of taking the warm one", n)
	}
}

// TestAttachedWorkspacePrivate attacks the mount a warm sandbox is sent
// for a host workspace: the host's workspace is a shared mount (as below a
// shared root, systemd's default), and the sandbox's /workspace must not
// be in its peer group (nothing mounted on one side may appear on the
// other) nor allow set-user-id files or devices; the program must hold no
// descriptor of it.
func TestAttachedWorkspacePrivate(t *testing.T) {
	testutil.RequireRoot(t)
	b, err := native.New(native.Options{Warm: 1})
	if err != nil {
		t.Fatalf("native backend unavailable: %v", err)
	}
	defer b.Close()
	native.WaitWarm(b)
	ws, err := capws.New("", "shared-ws-", 4*sandbox.MiB, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ws.Remove() }()
	if err := unix.Mount("", ws.Path, "", unix.MS_SHARED, ""); err != nil {
		t.Fatal(err)
	}
	res, err := b.Run(context.Background(), &sandbox.Spec{
		Args:      []string{"/bin/sh", "-c", "grep ' /workspace ' /proc/self/mountinfo; ls /proc/self/fd"},
		Mounts:    native.BaseMounts(),
		Workspace: ws.Path,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusOK {
		t.Fatalf("status %s stdout %q stderr %q", res.Status, res.Stdout, res.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	var ours string
	for _, l := range lines {
		if strings.Contains(l, " /workspace ") {
			ours = l // the last one is on top
		}
	}
	if ours == "" {
		t.Fatalf("no /workspace in mountinfo: %s", res.Stdout)
	}
	fields := strings.Fields(ours)
	if len(fields) < 7 || fields[6] != "-" {
		t.Fatalf("the workspace's mount has propagation (%s): %s", strings.Join(fields[6:], " "), ours)
	}
	for _, opt := range []string{"nosuid", "nodev"} {
		if !slices.Contains(strings.Split(fields[5], ","), opt) {
			t.Fatalf("the workspace's mount is not %s: %s", opt, ours)
		}
	}
	// 0, 1, 2 and ls's own directory: nothing else is open.
	var fds []string
	for _, l := range lines {
		if !strings.Contains(l, " ") {
			fds = append(fds, l)
		}
	}
	if len(fds) > 4 {
		t.Fatalf("the program holds descriptors beyond its streams: %v", fds)
	}
}

// TestUnattachableWorkspaceFallsBack gives the init, for a host
// workspace, something it cannot attach, as a kernel that refuses it
// would: that run fails with a setup error that says so, and the backend
// binds the workspaces of later runs out of a new sandbox's copy of the
// host's tree instead.
func TestUnattachableWorkspaceFallsBack(t *testing.T) {
	testutil.RequireRoot(t)
	b, err := native.New(native.WithUnattachableWorkspace(native.Options{}))
	if err != nil {
		t.Fatalf("native backend unavailable: %v", err)
	}
	defer b.Close()
	ws, err := capws.New("", "unattachable-", 4*sandbox.MiB, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ws.Remove() }()
	spec := &sandbox.Spec{Args: []string{"/bin/sh", "-c", "echo here > f && cat f"}, Mounts: native.BaseMounts(), Workspace: ws.Path}
	_, err = b.Run(context.Background(), spec)
	if !errors.Is(err, sandbox.ErrSetup) || !strings.Contains(err.Error(), "attach workspace") {
		t.Fatalf("a workspace the init cannot attach: %v", err)
	}
	res, err := b.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusOK || string(res.Stdout) != "here\n" {
		t.Fatalf("status %s stdout %q stderr %q", res.Status, res.Stdout, res.Stderr)
	}
}

// TestConformanceHostTreeAttached runs the suite with the host's tree kept
// attached until the second phase is done, as on kernels before Linux 6.15
// where sources cannot be cloned out of a detached copy, and with host
// workspaces bound out of the sandbox's copy of the host's tree, as where
// the backend cannot send a workspace's mount (before Linux 5.12).
func TestConformanceHostTreeAttached(t *testing.T) {
	testutil.RequireRoot(t)
	b, err := native.New(native.WithoutAttach(native.WithHostTreeAttached(native.Options{})))
	if err != nil {
		t.Fatalf("native backend unavailable: %v", err)
	}
	defer b.Close()
	cc, _ := exec.LookPath("gcc")
	testutil.Require(t, cc != "", "gcc is needed to build the 32-bit syscall probe")
	sandboxtest.Run(t, sandboxtest.Env{
		Backend:   b,
		Mounts:    native.BaseMounts(),
		CC:        cc,
		Leftovers: func() error { return leftoversExcept(0, b) },
		Kept:      keptInits,
		// As root every sandbox's user namespace has an owner uid of
		// its own.
		QuotasPerSandbox: true,
	})
}

// TestWarmLimitsFollowEachRun alternates memory limits on a warm backend,
// whose sandboxes wait in cgroups limited as the latest run was: each run
// must get its own limit, up or down, and a run like the one before keeps
// the limit its sandbox was started with.
func TestWarmLimitsFollowEachRun(t *testing.T) {
	b := newWarmBackend(t)
	_, err := os.Stat("/usr/bin/python3")
	testutil.Require(t, err == nil, "needs /usr/bin/python3")
	steps := []struct {
		memory int64
		want   sandbox.Status
	}{
		{64 * sandbox.MiB, sandbox.StatusMemoryLimit},
		{64 * sandbox.MiB, sandbox.StatusMemoryLimit},
		{512 * sandbox.MiB, sandbox.StatusOK},
		{512 * sandbox.MiB, sandbox.StatusOK},
		{64 * sandbox.MiB, sandbox.StatusMemoryLimit},
		{64 * sandbox.MiB, sandbox.StatusMemoryLimit},
		{512 * sandbox.MiB, sandbox.StatusOK},
	}
	for i, step := range steps {
		res, err := b.Run(context.Background(), &sandbox.Spec{
			// bytearray zero-fills: every page of the 100 MB is touched.
			Args:   []string{"/usr/bin/python3", "-c", "b = bytearray(100 << 20)"},
			Mounts: native.BaseMounts(),
			Limits: sandbox.Limits{Memory: step.memory},
		})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if res.Status != step.want {
			t.Fatalf("step %d (memory %d MiB): status %s, want %s; stderr %s", i, step.memory/sandbox.MiB, res.Status, step.want, res.Stderr)
		}
	}
}

// TestWarmTmpfsSizesFollowEachRun alternates the /tmp and workspace caps on
// a warm backend, whose sandboxes mount both ahead of need sized as the
// latest run wanted: each run must get its own caps, up or down.
func TestWarmTmpfsSizesFollowEachRun(t *testing.T) {
	b := newWarmBackend(t)
	// 12 MiB into each: over an 8 MiB cap, under a 32 MiB one.
	script := `head -c 12582912 /dev/zero > /tmp/f && echo tmp-ok; head -c 12582912 /dev/zero > /workspace/f && echo workspace-ok; true`
	steps := []struct {
		tmp, workspace int64
		want           string
	}{
		{8 * sandbox.MiB, 8 * sandbox.MiB, ""},
		{8 * sandbox.MiB, 8 * sandbox.MiB, ""},
		{32 * sandbox.MiB, 8 * sandbox.MiB, "tmp-ok\n"},
		{8 * sandbox.MiB, 32 * sandbox.MiB, "workspace-ok\n"},
		{32 * sandbox.MiB, 32 * sandbox.MiB, "tmp-ok\nworkspace-ok\n"},
		{32 * sandbox.MiB, 32 * sandbox.MiB, "tmp-ok\nworkspace-ok\n"},
		{8 * sandbox.MiB, 8 * sandbox.MiB, ""},
	}
	for i, step := range steps {
		res, err := b.Run(context.Background(), &sandbox.Spec{
			Args:   []string{"/bin/sh", "-c", script},
			Mounts: native.BaseMounts(),
			Limits: sandbox.Limits{TmpSize: step.tmp, WorkspaceSize: step.workspace},
		})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if string(res.Stdout) != step.want {
			t.Fatalf("step %d (tmp %d MiB, workspace %d MiB): stdout %q, want %q; stderr %s",
				i, step.tmp/sandbox.MiB, step.workspace/sandbox.MiB, res.Stdout, step.want, res.Stderr)
		}
	}
}

// sandboxInitPids lists the sandbox inits this test process started that
// are still there.
func sandboxInitPids(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if !strings.HasPrefix(string(cmd), nsinit.ArgV0+"\x00") {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		// The parent pid is the fourth field, after the command in
		// parentheses.
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 {
			f := strings.Fields(string(stat[i+1:]))
			if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) && pid > 0 {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// cpuWeight reads the CPU weight of the cgroup of process pid: cpu.shares
// on v1 (the cpu hierarchy at /sys/fs/cgroup/cpu), cpu.weight on v2.
func cpuWeight(t *testing.T, pid int) string {
	t.Helper()
	w, err := readCPUWeight(pid)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// readCPUWeight is cpuWeight for a process that may be gone.
func readCPUWeight(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var file string
		switch {
		case slices.Contains(strings.Split(f[1], ","), "cpu"):
			file = filepath.Join("/sys/fs/cgroup/cpu", f[2], "cpu.shares")
		case f[0] == "0" && f[1] == "":
			file = filepath.Join("/sys/fs/cgroup", f[2], "cpu.weight")
		default:
			continue
		}
		if w, err := os.ReadFile(file); err == nil {
			return strings.TrimSpace(string(w)), nil
		}
	}
	return "", fmt.Errorf("no CPU weight for process %d in %q", pid, b)
}

// TestWarmPoolWaitsForRuns checks that a warm backend does not start the
// sandbox that replaces a taken one while that one's run is still going
// (it would compete with the run for the CPU), and starts it afterwards;
// and that a run in a sandbox started at background priority gets the
// normal priority back.
func TestWarmPoolWaitsForRuns(t *testing.T) {
	// Runs get a new sandbox each, so that only the pool's count.
	b := newBackendWith(t, native.Options{Warm: 2, PerRequest: true})
	// waitWarm waits until the pool holds want inits and nothing else is
	// left: no run's init still being torn down (warm ones have the least
	// CPU weight, a run's the default).
	waitWarm := func(want int) int {
		n := 0
		for range 250 {
			pids := sandboxInitPids(t)
			n = len(pids)
			warm := 0
			for _, pid := range pids {
				if w, _ := readCPUWeight(pid); w == "2" || w == "1" {
					warm++
				}
			}
			if n == want && warm == want {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		return n
	}
	waitInits := waitWarm
	if n := waitInits(2); n != 2 {
		t.Fatalf("%d sandbox inits before the first run, want the 2 warm ones", n)
	}
	// A warm sandbox, started at background priority.
	res, err := b.Run(context.Background(), &sandbox.Spec{Args: []string{"/usr/bin/nice"}, Mounts: native.BaseMounts()})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(res.Stdout)); res.Status != sandbox.StatusOK || got != "0" {
		t.Fatalf("niceness inside the sandbox %q (status %s, stderr %s), want 0", got, res.Status, res.Stderr)
	}
	if n := waitInits(2); n != 2 {
		t.Fatalf("%d sandbox inits before the run, want the 2 warm ones", n)
	}
	done := make(chan error, 1)
	go func() {
		_, err := b.Run(context.Background(), &sandbox.Spec{
			Args: []string{"/bin/sh", "-c", "sleep 1"}, Mounts: native.BaseMounts(),
		})
		done <- err
	}()
	// While the run sleeps: its own init and one warm one, and no third
	// however long the pool has had to start it.
	time.Sleep(500 * time.Millisecond)
	pids := sandboxInitPids(t)
	if len(pids) != 2 {
		t.Errorf("%d sandbox inits during a run, want 2 (the run's and one warm)", len(pids))
	}
	// The run's cgroup has the normal CPU weight, the warm one's the
	// least.
	var weights []string
	for _, pid := range pids {
		weights = append(weights, cpuWeight(t, pid))
	}
	slices.Sort(weights)
	if want := []string{"1024", "2"}; len(pids) == 2 && !slices.Equal(weights, want) && !slices.Equal(weights, []string{"1", "100"}) {
		t.Errorf("CPU weights during a run %q, want the default for the run and the least for the warm sandbox", weights)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := waitInits(2); n != 2 {
		t.Fatalf("%d sandbox inits after the run, want the pool refilled to 2", n)
	}
}

// TestWarmProcessLimitFollowsEachRun alternates the process limit on a warm
// backend, as TestWarmLimitsFollowEachRun does the memory limit.
func TestWarmProcessLimitFollowsEachRun(t *testing.T) {
	b := newWarmBackend(t)
	_, err := os.Stat("/usr/bin/python3")
	testutil.Require(t, err == nil, "needs /usr/bin/python3")
	// Forks 10 children that wait, and prints how many it could start.
	code := `import os, time
n = 0
for i in range(10):
    try:
        if os.fork() == 0:
            time.sleep(0.3)
            os._exit(0)
        n += 1
    except OSError:
        pass
print(n)`
	for i, step := range []struct {
		processes int
		all       bool
	}{{5, false}, {5, false}, {50, true}, {50, true}, {5, false}, {50, true}} {
		res, err := b.Run(context.Background(), &sandbox.Spec{
			Args:   []string{"/usr/bin/python3", "-c", code},
			Mounts: native.BaseMounts(),
			Limits: sandbox.Limits{Processes: step.processes},
		})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		got := strings.TrimSpace(string(res.Stdout))
		if (got == "10") != step.all {
			t.Fatalf("step %d (processes %d): started %q children, want all 10: %v; stderr %s", i, step.processes, got, step.all, res.Stderr)
		}
	}
}

// keptInits names the idle sandboxes of ser by their inits' process ids.
func keptInits(ser sandbox.Series) []string {
	var ids []string
	for _, pid := range native.KeptInits(ser) {
		ids = append(ids, strconv.Itoa(pid))
	}
	return ids
}

// TestAlternatives attacks the host's /etc/alternatives as the sandbox
// shows it: read-only, nosuid, nodev and noexec, its links resolved
// inside; bound from the detached copy of the host's tree, and through
// the host's tree kept attached, as before Linux 6.15.
func TestAlternatives(t *testing.T) {
	for name, opts := range map[string]native.Options{
		"detached": {},
		"attached": native.WithHostTreeAttached(native.Options{}),
	} {
		t.Run(name, func(t *testing.T) {
			sandboxtest.TestAlternatives(t, func(t *testing.T, dir string) sandbox.Backend {
				return newBackendWith(t, native.WithAlternatives(opts, dir))
			}, native.BaseMounts(), true)
		})
	}
}

func TestFonts(t *testing.T) {
	sandboxtest.TestFonts(t, newBackend(t), native.BaseMounts())
}
