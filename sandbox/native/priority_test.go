package native_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/native"
)

// withoutSysNice marks the copy of the test binary that
// TestWarmPoolWithoutSysNice runs without CAP_SYS_NICE.
const withoutSysNice = "CODERUNNER_TEST_WITHOUT_SYS_NICE"

// niceOf is the nice value of process pid, from /proc/pid/stat, and
// false if the process is gone.
func niceOf(t *testing.T, pid int) (int, bool) {
	t.Helper()
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	// After the command in parentheses: the state is the first field,
	// the nice value the seventeenth.
	i := strings.LastIndexByte(string(stat), ')')
	f := strings.Fields(string(stat[i+1:]))
	if i < 0 || len(f) < 17 {
		t.Fatalf("unreadable stat of %d: %q", pid, stat)
	}
	n, err := strconv.Atoi(f[16])
	if err != nil {
		t.Fatalf("nice value of %d: %v", pid, err)
	}
	return n, true
}

// capEff is this process's effective capability set.
func capEff(t *testing.T) uint64 {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatalf("CapEff %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatal("no CapEff in /proc/self/status")
	return 0
}

// TestWarmPoolWithoutSysNice runs a warm backend as root without
// CAP_SYS_NICE, as root of a user namespace of its own is (a Kubernetes
// pod with hostUsers: false: the kernel honours that capability only in
// the initial user namespace). A sandbox started ahead of need at the
// lowest priority could not be given its priority back there, and every
// run would fail: the pool must start its sandboxes at the normal
// priority instead, and runs must succeed.
func TestWarmPoolWithoutSysNice(t *testing.T) {
	testutil.RequireRoot(t)
	if os.Getenv(withoutSysNice) != "1" {
		setpriv, err := exec.LookPath("setpriv")
		testutil.Require(t, err == nil, "no setpriv (util-linux) to take CAP_SYS_NICE away")
		cmd := exec.Command(setpriv, "--inh-caps=-sys_nice", "--bounding-set=-sys_nice", "--",
			os.Args[0], "-test.run=^TestWarmPoolWithoutSysNice$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), withoutSysNice+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("without CAP_SYS_NICE: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "--- PASS: TestWarmPoolWithoutSysNice") {
			t.Fatalf("without CAP_SYS_NICE, the test did not pass:\n%s", out)
		}
		t.Logf("without CAP_SYS_NICE:\n%s", out)
		return
	}
	if capEff(t)&(1<<unix.CAP_SYS_NICE) != 0 {
		t.Fatal("CAP_SYS_NICE is still effective")
	}
	b := newWarmBackend(t)
	for i := range 3 {
		if !native.WaitWarm(b) {
			t.Fatal("no sandbox started ahead of need")
		}
		for _, pid := range sandboxInitPids(t) {
			if n, ok := niceOf(t, pid); ok && n != 0 {
				t.Fatalf("a sandbox started ahead of need has nice %d, and no way back to 0", n)
			}
		}
		res, err := b.Run(context.Background(), &sandbox.Spec{Args: []string{"/usr/bin/nice"}, Mounts: native.BaseMounts()})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if got := strings.TrimSpace(string(res.Stdout)); res.Status != sandbox.StatusOK || got != "0" {
			t.Fatalf("run %d: niceness %q (status %s, stderr %s), want 0", i, got, res.Status, res.Stderr)
		}
	}
}

// inPodNamespace marks the copy of the test binary that
// TestRootOfAPodsUserNamespace runs as root of a user namespace of 65536
// ids.
const inPodNamespace = "CODERUNNER_TEST_IN_POD_NAMESPACE"

// TestRootOfAPodsUserNamespace starts the backend as root of a user
// namespace that maps 65536 ids, as a Kubernetes pod with hostUsers:
// false has by default: the sandboxes' uids do not exist there, and the
// backend must say so, naming the kubelet's setting, rather than let
// every sandbox fail with EINVAL.
func TestRootOfAPodsUserNamespace(t *testing.T) {
	if os.Getenv(inPodNamespace) != "1" {
		out, err := testutil.InUserNamespace(t, "TestRootOfAPodsUserNamespace", 65536, inPodNamespace+"=1")
		if err != nil || !strings.Contains(out, "--- PASS: TestRootOfAPodsUserNamespace") {
			t.Fatalf("as root of a user namespace of 65536 ids: %v\n%s", err, out)
		}
		t.Logf("as root of a user namespace of 65536 ids:\n%s", out)
		return
	}
	_, err := native.New(native.Options{})
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "userNamespaces.idsPerPod") {
		t.Fatalf("New = %v, want the backend unavailable for the unmapped uids", err)
	}
	t.Log(err)
}
