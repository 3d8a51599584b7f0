package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/testutil"
	"golang.org/x/sys/unix"
)

// The tests below drive the real kernel of this machine, whichever cgroup
// version it has.

var (
	kernelOnce sync.Once
	kernelMgr  *Manager
	kernelErr  error
)

// kernelManager detects this machine's cgroups once for every test.
func kernelManager(t testing.TB) *Manager {
	t.Helper()
	if !testutil.DelegatedCgroup() {
		testutil.RequireRoot(t)
	}
	kernelOnce.Do(func() { kernelMgr, kernelErr = Detect(Options{Prefix: "coderunner-test"}) })
	testutil.Require(t, kernelErr == nil, fmt.Sprintf("needs usable cgroups: %v", kernelErr))
	return kernelMgr
}

func TestMain(m *testing.M) {
	code := m.Run()
	if kernelMgr != nil {
		// Leave nothing in the cgroups we were given. A base another
		// process still uses is not empty and stays.
		for _, h := range kernelMgr.hiers {
			_ = unix.Rmdir(h.base)
		}
	}
	os.Exit(code)
}

var runSeq struct {
	sync.Mutex
	n int
}

// kernelGroup creates a group with a unique name and destroys it when the
// test ends.
func kernelGroup(t *testing.T, l Limits) *Group {
	t.Helper()
	m := kernelManager(t)
	runSeq.Lock()
	runSeq.n++
	name := fmt.Sprintf("t%d-%d", os.Getpid(), runSeq.n)
	runSeq.Unlock()
	g, err := m.Create(name, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Destroy(); err != nil {
			t.Error(err)
		}
	})
	return g
}

// startInGroup starts script under sh, held on stdin until it is in g, so
// that everything it runs is limited from the start. It returns the
// command and its stdout.
func startInGroup(t *testing.T, g *Group, script string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd, _, stdout := startInGroupFed(t, g, script)
	return cmd, stdout
}

// startInGroupFed is startInGroup that also returns the script's stdin,
// past the line that released it, for the script to read more from.
func startInGroupFed(t *testing.T, g *Group, script string) (*exec.Cmd, io.Writer, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "read go && "+script)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	if err := g.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	return cmd, stdin, bufio.NewReader(stdout)
}

// waitSignal waits for cmd and returns the signal that ended it.
func waitSignal(t *testing.T, cmd *exec.Cmd) syscall.Signal {
	t.Helper()
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("Wait = %v, want the process killed", err)
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() {
		t.Fatalf("process exited with %d, want it killed", ws.ExitStatus())
	}
	return ws.Signal()
}

func TestKernelOOMKill(t *testing.T) {
	const limit = 64 << 20
	_, err := os.Stat("/usr/bin/python3")
	testutil.Require(t, err == nil, "needs /usr/bin/python3")
	g := kernelGroup(t, Limits{Memory: limit, Processes: 16})
	// bytearray zero-fills, so every page is touched: 200 MB cannot fit.
	cmd, _ := startInGroup(t, g, `exec /usr/bin/python3 -c "b = bytearray(200 << 20)"`)
	if sig := waitSignal(t, cmd); sig != syscall.SIGKILL {
		t.Fatalf("python ended by %v, want SIGKILL", sig)
	}
	s, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stats: %+v", s)
	if s.OOMKills < 1 {
		t.Errorf("OOMKills = %d, want at least 1", s.OOMKills)
	}
	if s.PeakMemory < limit*3/4 || s.PeakMemory > limit+limit/16 {
		t.Errorf("PeakMemory = %d, want close to the %d limit", s.PeakMemory, limit)
	}
	if s.CPU <= 0 {
		t.Errorf("CPU = %v, want the time python ran", s.CPU)
	}
}

func TestKernelNoOOMKillUnderLimit(t *testing.T) {
	g := kernelGroup(t, Limits{Memory: 64 << 20, Processes: 16})
	cmd, _ := startInGroup(t, g, `exit 0`)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	s, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if s.OOMKills != 0 {
		t.Errorf("OOMKills = %d for a program that used almost nothing", s.OOMKills)
	}
}

func TestKernelPidsMax(t *testing.T) {
	const limit = 16
	_, err := os.Stat("/bin/bash")
	testutil.Require(t, err == nil, "needs /bin/bash")
	g := kernelGroup(t, Limits{Memory: 256 << 20, Processes: limit})
	startInGroup(t, g, `exec /bin/bash -c ':(){ :|:& };:' 2>/dev/null`)
	// The bomb keeps forking; wait until the kernel has refused a fork
	// and check that it never got past the limit meanwhile.
	deadline := time.Now().Add(10 * time.Second)
	refused := int64(0)
	for refused == 0 && time.Now().Before(deadline) {
		pids, err := g.pids(nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(pids) > limit {
			t.Fatalf("%d processes in a group limited to %d", len(pids), limit)
		}
		refused = pidsEventsMax(t, g)
		time.Sleep(10 * time.Millisecond)
	}
	if refused == 0 {
		t.Fatal("pids.events never counted a refused fork")
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	if pids, err := g.pids(nil); err != nil || len(pids) != 0 {
		t.Fatalf("after Kill the group holds %v (%v)", pids, err)
	}
}

// pidsEventsMax reads the count of forks pids.max refused.
func pidsEventsMax(t *testing.T, g *Group) int64 {
	t.Helper()
	var buf [256]byte
	data, err := readAt(g.fds[g.m.pids], newCtl("pids.events"), buf[:])
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := keyValue(data, "max")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestKernelKillDoubleFork(t *testing.T) {
	g := kernelGroup(t, Limits{Processes: 16})
	// The inner shell exits at once: sleep is orphaned, outside the tree
	// of the process we started, but still in the group.
	cmd, out := startInGroup(t, g, `/bin/sh -c 'sleep 1000 </dev/null >/dev/null 2>&1 & echo $!'`)
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	sleepPid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if !alive(sleepPid) {
		t.Fatalf("sleep %d is not running before Kill", sleepPid)
	}
	start := time.Now()
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Kill took %v", time.Since(start))
	if !dies(sleepPid) {
		t.Errorf("sleep %d survived Kill", sleepPid)
	}
	if pids, err := g.pids(nil); err != nil || len(pids) != 0 {
		t.Errorf("after Kill the group holds %v (%v)", pids, err)
	}
}

// alive reports whether pid runs: it exists and is not a zombie waiting
// for a parent that may never reap it.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(data), ')')
	return i >= 0 && i+2 < len(data) && data[i+2] != 'Z' && data[i+2] != 'X'
}

// dies reports whether pid, killed, is done with its exit within ten
// seconds. Kill returns once the group is empty, which a process leaves
// early in its exit: under emulation it may still show as running for a
// while.
func dies(pid int) bool {
	for range 1000 {
		if !alive(pid) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func TestKernelDestroy(t *testing.T) {
	m := kernelManager(t)
	t.Log(m.Describe())
	g, err := m.Create(fmt.Sprintf("t%d-destroy", os.Getpid()), Limits{Memory: 32 << 20, Processes: 8, CPUs: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ := startInGroup(t, g, `exec sleep 1000`)
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	if sig := waitSignal(t, cmd); sig != syscall.SIGKILL {
		t.Errorf("sleep ended by %v, want SIGKILL", sig)
	}
	for _, h := range m.hiers {
		if _, err := os.Lstat(h.base + "/" + g.Name()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Destroy left %s/%s (%v)", h.base, g.Name(), err)
		}
	}
	if err := g.Destroy(); err != nil {
		t.Errorf("second Destroy: %v", err)
	}
}

func TestKernelStatsDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	g := kernelGroup(t, Limits{Memory: 32 << 20})
	if n := testing.AllocsPerRun(20, func() {
		if _, err := g.Stats(); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Stats allocates %v times", n)
	}
}

func BenchmarkCreateDestroy(b *testing.B) {
	m := kernelManager(b)
	l := Limits{Memory: 256 << 20, Processes: 64, CPUs: 1}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		g, err := m.Create(fmt.Sprintf("b%d-%d", os.Getpid(), i), l)
		if err != nil {
			b.Fatal(err)
		}
		if err := g.Destroy(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStats(b *testing.B) {
	m := kernelManager(b)
	g, err := m.Create(fmt.Sprintf("b%d-stats", os.Getpid()), Limits{Memory: 256 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Destroy()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Stats(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestKernelV2Kill drives the v2 code paths that need no controller (the
// group fd for CLONE_INTO_CGROUP, cgroup.kill, the cgroup.freeze fallback,
// rmdir) on a cgroup2 tree where we sit at the root, as on a hybrid
// machine's unified hierarchy.
func TestKernelV2Kill(t *testing.T) {
	testutil.RequireRoot(t)
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil || !slices.Contains(strings.Split(string(data), "\n"), "0::/") {
		// Not a missing requirement: with the controllers on v2, the
		// Detect-based tests above run these paths.
		t.Skip("we are not at the root of the cgroup2 tree, where this test may create groups")
	}
	root := ""
	for _, dir := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		var st unix.Statfs_t
		if unix.Statfs(dir, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			root = dir
			break
		}
	}
	testutil.Require(t, root != "", "needs a cgroup2 tree")
	base := fmt.Sprintf("%s/coderunner-test-%d", root, os.Getpid())
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Rmdir(base) })
	for _, useKill := range []bool{true, false} {
		t.Run(fmt.Sprintf("cgroup.kill=%v", useKill), func(t *testing.T) {
			m := &Manager{version: V2, hiers: []hierarchy{{base: base}}, freezer: -1,
				killFile: useKill && existsAt(base, "cgroup.kill"), freezeFile: existsAt(base, "cgroup.freeze")}
			testutil.Require(t, !useKill || m.killFile, "needs cgroup.kill (Linux 5.14)")
			g, err := m.Create("run", Limits{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = g.Destroy() })
			fd, ok := g.FD()
			if !ok {
				t.Fatal("FD() not ok on v2")
			}
			cmd := exec.Command("/bin/sh", "-c", `sleep 1000 </dev/null >/dev/null 2>&1 & echo $!; cat /proc/self/cgroup`)
			cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			pidLine, cg, _ := strings.Cut(string(out), "\n")
			if !strings.Contains(cg, "0::/"+strings.TrimPrefix(base, root+"/")+"/run\n") {
				t.Errorf("a child cloned into the group is in %q", cg)
			}
			sleepPid, err := strconv.Atoi(pidLine)
			if err != nil || !alive(sleepPid) {
				t.Fatalf("sleep %q not running", pidLine)
			}
			if err := g.Kill(); err != nil {
				t.Fatal(err)
			}
			if !dies(sleepPid) {
				t.Errorf("sleep %d survived Kill", sleepPid)
			}
			if err := g.Destroy(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(base + "/run"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Destroy left %s/run", base)
			}
		})
	}
}

// TestKernelUpdateUpAndDown changes the memory limit of a group limited
// before, both ways: on v1 the memory limit may never exceed memory plus
// swap, so the order of the two writes depends on the direction.
func TestKernelUpdateUpAndDown(t *testing.T) {
	g := kernelGroup(t, Limits{Memory: 64 << 20, Processes: 16})
	for _, mem := range []int64{256 << 20, 32 << 20, 128 << 20} {
		if err := g.Update(Limits{Memory: mem, Processes: 16}); err != nil {
			t.Fatalf("Update to %d: %v", mem, err)
		}
		if got := g.memoryLimit(t); got != mem {
			t.Fatalf("memory limit %d after Update to %d", got, mem)
		}
	}
}

// memoryLimit reads the group's memory limit back from the kernel.
func (g *Group) memoryLimit(t *testing.T) int64 {
	t.Helper()
	h, f := g.m.mem, ctlMemLimit
	if g.m.version == V2 {
		h, f = 0, ctlMemoryMax
	}
	v, err := g.readNumber(h, f, make([]byte, 64))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestKernelResetPeak(t *testing.T) {
	_, err := os.Stat("/usr/bin/python3")
	testutil.Require(t, err == nil, "needs /usr/bin/python3")
	g := kernelGroup(t, Limits{Memory: 256 << 20, Processes: 16})
	cmd, _ := startInGroup(t, g, `exec /usr/bin/python3 -c "b = bytearray(80 << 20)"`)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	before, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if before.PeakMemory < 80<<20 {
		t.Fatalf("PeakMemory = %d before the reset, want the 80 MiB python touched", before.PeakMemory)
	}
	if err := g.ResetPeak(); err != nil {
		testutil.Require(t, g.m.version != V2 || !errors.Is(err, errors.ErrUnsupported), "memory.peak is read-only on this kernel")
		t.Fatal(err)
	}
	after, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if after.PeakMemory >= 40<<20 {
		t.Fatalf("PeakMemory = %d after the reset of an idle group, want what it uses now (%d)", after.PeakMemory, after.Memory)
	}
}

// A reset with a process in the group, as a kept sandbox's is: the
// process keeps running under the group's limits, and Stats counts what
// it does after the reset only.
func TestKernelResetPeakWithProcess(t *testing.T) {
	const limit = 64 << 20
	_, err := os.Stat("/usr/bin/python3")
	testutil.Require(t, err == nil, "needs /usr/bin/python3")
	g := kernelGroup(t, Limits{Memory: limit, Processes: 16})
	// The first python holds 40 MiB, the second touches 200 MiB after
	// the reset: the limit must stop it, the group's, not a fresh one.
	cmd, stdin, stdout := startInGroupFed(t, g, `/usr/bin/python3 -c "import sys; b = bytearray(40 << 20); print(1, flush=True); sys.stdin.readline()" && exec /usr/bin/python3 -c "b = bytearray(200 << 20)"`)
	if _, err := stdout.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	before, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if before.PeakMemory < 40<<20 {
		t.Fatalf("PeakMemory = %d before the reset, want the 40 MiB python holds", before.PeakMemory)
	}
	if err := g.ResetPeak(); err != nil {
		t.Fatal(err)
	}
	after, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if after.OOMKills != 0 {
		t.Fatalf("OOMKills = %d right after the reset, want 0", after.OOMKills)
	}
	// The first python ends, the second starts in the same group.
	if _, err := io.WriteString(stdin, "\n"); err != nil {
		t.Fatal(err)
	}
	if sig := waitSignal(t, cmd); sig != syscall.SIGKILL {
		t.Fatalf("python ended by %v, want SIGKILL", sig)
	}
	end, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stats before the reset %+v, right after %+v, at the end %+v", before, after, end)
	if end.OOMKills < 1 {
		t.Errorf("OOMKills = %d after the reset, want the kill of the second python", end.OOMKills)
	}
	if end.PeakMemory > limit+limit/16 {
		t.Errorf("PeakMemory = %d, want at most the %d limit", end.PeakMemory, limit)
	}
	if end.CPU <= after.CPU {
		t.Errorf("CPU = %v at the end, %v after the reset: want the time the second python ran counted", end.CPU, after.CPU)
	}
}

// TestKernelRemoveStaleAfterReset: the group of a sandbox that was kept
// (its peak reset, which on v2 before Linux 6.12 makes a child group)
// and whose owner died is removed whole.
func TestKernelRemoveStaleAfterReset(t *testing.T) {
	m := kernelManager(t)
	name := fmt.Sprintf("t%d-stale", os.Getpid())
	g, err := m.Create(name, Limits{Memory: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Destroy() })
	if err := g.ResetPeak(); err != nil {
		t.Fatal(err)
	}
	// The owner dies: its descriptors close, its directories stay.
	g.mu.Lock()
	g.closeFDs()
	g.mu.Unlock()
	if n := m.RemoveStale(0, func(n string) bool { return n == name }); n != len(m.hiers) {
		t.Fatalf("RemoveStale removed %d directories, want %d (the group in every hierarchy)", n, len(m.hiers))
	}
	for _, h := range m.hiers {
		if _, err := os.Lstat(h.base + "/" + name); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s/%s is still there", h.base, name)
		}
	}
}
