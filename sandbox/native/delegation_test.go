package native_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/coderunner/coderunner/internal/cgroup"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/native"
)

// The tests of this file start the backend, in a child process, at the
// root of a cgroup v2 subtree given to it the ways a host gives one: a
// subtree of its own, the same seen through a cgroup namespace (a
// container), one delegated to an unprivileged user as systemd does with
// Delegate=yes, and two that lack something, whose errors must say what
// to do. They need a cgroup v2 host: make test-cgroup2 runs them in a
// guest that mounts cgroup v2 only, with CODERUNNER_TEST_CGROUP2=1.

const (
	delegatedEnv = "CODERUNNER_TEST_DELEGATED"
	// cgroup2Env is set where the tests must find cgroup v2 (the guest):
	// there a v1 host fails them instead of skipping them.
	cgroup2Env = "CODERUNNER_TEST_CGROUP2"
	nobody     = 65534
)

// delegatedReport is what the child reports, as JSON on stdout.
type delegatedReport struct {
	// Cgroup is the child's /proc/self/cgroup once the backend started.
	Cgroup string
	// NewErr is native.New's error, Checks its probe's (what doctor shows).
	NewErr string
	Checks []sandbox.Check
	// Memory is a run over its memory limit.
	Memory *sandbox.Result
	// Series are two runs of a series: the first touches 100 MiB, the
	// second 8; Kept are the inits the series kept after each.
	Series []*sandbox.Result
	Kept   [][]int
	Err    string
}

// delegatedChild is the child: it builds the backend where it was
// started and, with full set, runs programs that need its cgroups.
func delegatedChild(full bool) int {
	var rep delegatedReport
	defer func() { _ = json.NewEncoder(os.Stdout).Encode(rep) }()
	ctx := context.Background()
	b, err := native.New(native.Options{})
	if err != nil {
		rep.NewErr = err.Error()
		return 0
	}
	defer b.Close()
	rep.Checks = b.Probe(ctx).Checks
	data, _ := os.ReadFile("/proc/self/cgroup")
	rep.Cgroup = strings.TrimSpace(string(data))
	if !full {
		return 0
	}
	rep.Memory, err = b.Run(ctx, &sandbox.Spec{
		Args:   []string{"/usr/bin/python3", "-c", "b = bytearray(400 << 20)"},
		Mounts: native.BaseMounts(),
		Limits: sandbox.Limits{Memory: 128 * sandbox.MiB, WallTime: 120e9, CPUTime: 120e9},
	})
	if err != nil {
		rep.Err = err.Error()
		return 0
	}
	ser := b.Series()
	defer ser.Close()
	for _, mib := range []int{100, 8} {
		res, err := ser.Run(ctx, &sandbox.Spec{
			Args:   []string{"/usr/bin/python3", "-c", fmt.Sprintf("b = bytearray(%d << 20)", mib)},
			Mounts: native.BaseMounts(),
			Limits: sandbox.Limits{Memory: 256 * sandbox.MiB, WallTime: 120e9, CPUTime: 120e9},
		})
		if err != nil {
			rep.Err = err.Error()
			return 0
		}
		rep.Series = append(rep.Series, res)
		rep.Kept = append(rep.Kept, native.KeptInits(ser))
	}
	return 0
}

// requireCgroup2 skips the test on a cgroup v1 host, or fails it there
// where cgroup2Env says it must be v2.
func requireCgroup2(t *testing.T) {
	t.Helper()
	testutil.RequireRoot(t)
	m, err := cgroup.Detect(cgroup.Options{Prefix: "coderunner-test"})
	if err == nil && m.Version() == cgroup.V2 {
		return
	}
	if os.Getenv(cgroup2Env) == "1" {
		t.Fatalf("%s=1 but this host has no usable cgroup v2 (%v)", cgroup2Env, err)
	}
	t.Skip("needs a cgroup v2 host (make test-cgroup2 runs this in one)")
}

var subtreeSeq atomic.Int64

// subtree creates a cgroup beside our own, in which a child can be
// started alone, and removes it with what the child left when the test
// ends. Detect (requireCgroup2) gave our cgroup's children the
// controllers.
func subtree(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	own := ""
	for line := range strings.Lines(string(data)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			own = p
		}
	}
	if filepath.Base(own) == "coderunner-test-self" {
		own = filepath.Dir(own)
	}
	dir := filepath.Join("/sys/fs/cgroup", own, fmt.Sprintf("delegated-%d-%d", os.Getpid(), subtreeSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeTree(t, dir) })
	return dir
}

// removeTree removes a cgroup and its descendants, deepest first.
func removeTree(t *testing.T, dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			removeTree(t, filepath.Join(dir, e.Name()))
		}
	}
	if err := syscall.Rmdir(dir); err != nil && !os.IsNotExist(err) {
		t.Errorf("unable to remove %s: %v", dir, err)
	}
}

// startIn runs this test binary as the child, cloned into the cgroup dir
// (CLONE_INTO_CGROUP), as uid (0 for root), through the command wrap
// when it is not empty, and returns its report.
func startIn(t *testing.T, dir string, uid int, full bool, wrap ...string) delegatedReport {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// t.TempDir's parent is private to root; an unprivileged child must
	// reach its binary and its state directory.
	tmp, err := os.MkdirTemp("", "delegated-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "native.test")
	if err := copyFile(self, bin); err != nil {
		t.Fatal(err)
	}
	cg, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	mode := "probe"
	if full {
		mode = "full"
	}
	cmd := exec.Command(bin)
	if len(wrap) > 0 {
		cmd = exec.Command(wrap[0], append(wrap[1:], bin)...)
	}
	cmd.Dir = tmp
	cmd.Env = []string{delegatedEnv + "=" + mode, "PATH=/usr/bin:/bin:/usr/sbin:/sbin", "TMPDIR=" + tmp}
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd())}
	if uid != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	var rep delegatedReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("child report %q: %v\nstderr: %s", out, err, stderr.String())
	}
	t.Logf("child in %s: cgroup %q, checks %+v", dir, rep.Cgroup, rep.Checks)
	return rep
}

// checkWorks checks the report of a child whose subtree works: the child
// moved into a leaf of its own, gave the subtree's children the
// controllers, and its runs were limited and measured by them.
func checkWorks(t *testing.T, rep delegatedReport, dir, wantCgroup string) {
	t.Helper()
	if rep.NewErr != "" || rep.Err != "" {
		t.Fatalf("the backend failed in a delegated subtree: New: %s; run: %s", rep.NewErr, rep.Err)
	}
	for _, c := range rep.Checks {
		if c.Name == "cgroups" && (!c.OK || !strings.Contains(c.Detail, "cgroup v2")) {
			t.Errorf("cgroups check %+v, want cgroup v2 in use", c)
		}
	}
	if rep.Cgroup != "0::"+wantCgroup {
		t.Errorf("the child's cgroup is %q, want 0::%s (a leaf of its own beside the run groups)", rep.Cgroup, wantCgroup)
	}
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(data)); !slices.Contains(got, "memory") || !slices.Contains(got, "pids") || !slices.Contains(got, "cpu") {
		t.Errorf("%s/cgroup.subtree_control = %q, want memory, pids and cpu enabled", dir, got)
	}
	if m := rep.Memory; m == nil || m.Status != sandbox.StatusMemoryLimit || !m.MemoryExceeded {
		t.Errorf("400 MiB under a 128 MiB limit: %+v, want %s with MemoryExceeded", m, sandbox.StatusMemoryLimit)
	}
	if len(rep.Series) != 2 {
		t.Fatalf("series ran %d runs, want 2", len(rep.Series))
	}
	first, second := rep.Series[0], rep.Series[1]
	for i, r := range rep.Series {
		if r.Status != sandbox.StatusOK {
			t.Errorf("series run %d: %s, stderr %q", i, r.Status, r.Stderr)
		}
	}
	if len(rep.Kept[0]) != 1 || !slices.Equal(rep.Kept[0], rep.Kept[1]) {
		t.Errorf("inits kept after each run of the series: %v, want the same one twice (the sandbox reused)", rep.Kept)
	}
	if first.PeakMemory < 100<<20 || second.PeakMemory <= 0 || second.PeakMemory >= 64<<20 {
		t.Errorf("peak memory of the runs: %d then %d, want at least 100 MiB then the second run's own, under 64 MiB", first.PeakMemory, second.PeakMemory)
	}
}

// TestDelegatedSubtree: the backend started alone in a cgroup, as a
// service with Delegate=yes is, works there.
func TestDelegatedSubtree(t *testing.T) {
	requireCgroup2(t)
	dir := subtree(t)
	rep := startIn(t, dir, 0, true)
	checkWorks(t, rep, dir, strings.TrimPrefix(dir, "/sys/fs/cgroup")+"/coderunner-self")
}

// TestDelegatedCgroupNamespace: the same seen through a cgroup namespace
// rooted at the subtree and a cgroup2 mount of its own, as in a
// container: the backend sees its cgroup as the root.
func TestDelegatedCgroupNamespace(t *testing.T) {
	requireCgroup2(t)
	_, err := exec.LookPath("unshare")
	testutil.Require(t, err == nil, "needs unshare(1) (util-linux)")
	dir := subtree(t)
	rep := startIn(t, dir, 0, true, "unshare", "--cgroup", "--mount", "--propagation", "private",
		"/bin/sh", "-c", `umount /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup && exec "$0"`)
	checkWorks(t, rep, dir, "/coderunner-self")
}

// TestDelegatedToUser: a subtree given to an unprivileged user as systemd
// gives one (the directory and the files that create, move and enable
// are the user's) gives that user's backend every cgroup limit.
func TestDelegatedToUser(t *testing.T) {
	requireCgroup2(t)
	dir := subtree(t)
	for _, p := range []string{"", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"} {
		if err := os.Chown(filepath.Join(dir, p), nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	rep := startIn(t, dir, nobody, true)
	checkWorks(t, rep, dir, strings.TrimPrefix(dir, "/sys/fs/cgroup")+"/coderunner-self")
}

// TestNotDelegatedToUser: in a subtree root keeps, an unprivileged
// backend has no cgroup, and says what to chown to give it one.
func TestNotDelegatedToUser(t *testing.T) {
	requireCgroup2(t)
	dir := subtree(t)
	rep := startIn(t, dir, nobody, false)
	want := fmt.Sprintf("chown %d %s %s/cgroup.procs %s/cgroup.subtree_control %s/cgroup.threads", nobody, dir, dir, dir, dir)
	checkFails(t, rep, want, "Delegate=yes")
}

// TestMissingController: a subtree whose parent withholds the memory
// controller: the error names it, the parent's file and the command.
func TestMissingController(t *testing.T) {
	requireCgroup2(t)
	dir := subtree(t)
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+pids +cpu"), 0); err != nil {
		t.Fatal(err)
	}
	inner := filepath.Join(dir, "inner")
	if err := os.Mkdir(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	rep := startIn(t, inner, 0, false)
	checkFails(t, rep, "controllers memory are not delegated",
		inner+"/cgroup.controllers", "echo '+memory' > "+dir+"/cgroup.subtree_control")
}

// checkFails checks that the backend found no usable cgroup and that what
// it says (New's error, or the cgroups check doctor shows) holds every
// one of want.
func checkFails(t *testing.T, rep delegatedReport, want ...string) {
	t.Helper()
	said := rep.NewErr
	for _, c := range rep.Checks {
		if c.Name == "cgroups" {
			if c.OK {
				t.Fatalf("cgroups check %+v, want it failed", c)
			}
			said = c.Detail
		}
	}
	if said == "" {
		t.Fatalf("neither an error nor a failed cgroups check: %+v", rep)
	}
	for _, w := range want {
		if !strings.Contains(said, w) {
			t.Errorf("the backend says %q\nwant it to say %q", said, w)
		}
	}
}

// copyFile copies the executable src to a new file dst.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
