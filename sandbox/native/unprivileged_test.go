package native_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/native"
)

const unprivilegedEnv = "CODERUNNER_TEST_UNPRIVILEGED"

func TestMain(m *testing.M) {
	if os.Getenv(unprivilegedEnv) == "1" {
		os.Exit(unprivilegedChild())
	}
	if mode := os.Getenv(delegatedEnv); mode != "" {
		os.Exit(delegatedChild(mode == "full"))
	}
	os.Exit(m.Run())
}

type unprivilegedReport struct {
	Err      string
	Warnings []string
	Identity *sandbox.Result
	Memory   *sandbox.Result
	// SeriesPids are the process ids of two runs of a series: without a
	// cgroup to measure each run apart, no sandbox may be kept.
	SeriesPids []string
}

// unprivilegedChild runs as an ordinary user: it builds the backend and
// reports two runs as JSON on stdout.
func unprivilegedChild() int {
	var rep unprivilegedReport
	defer func() { _ = json.NewEncoder(os.Stdout).Encode(rep) }()
	b, err := native.New(native.Options{})
	if err != nil {
		rep.Err = err.Error()
		return 0
	}
	spec := &sandbox.Spec{
		Args:   []string{"/bin/sh", "-c", "id -u; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; ls /root 2>&1"},
		Mounts: native.BaseMounts(),
	}
	if rep.Identity, err = b.Run(context.Background(), spec); err != nil {
		rep.Err = err.Error()
		return 0
	}
	spec = &sandbox.Spec{
		Args:   []string{"/usr/bin/python3", "-c", "b = bytearray(400 << 20)"},
		Mounts: native.BaseMounts(),
		Limits: sandbox.Limits{Memory: 128 * sandbox.MiB},
	}
	if rep.Memory, err = b.Run(context.Background(), spec); err != nil {
		rep.Err = err.Error()
		return 0
	}
	ser := b.Series()
	defer ser.Close()
	for range 2 {
		res, err := ser.Run(context.Background(), &sandbox.Spec{Args: []string{"/bin/sh", "-c", "echo $$"}, Mounts: native.BaseMounts()})
		if err != nil {
			rep.Err = err.Error()
			return 0
		}
		rep.SeriesPids = append(rep.SeriesPids, strings.TrimSpace(string(res.Stdout)))
	}
	rep.Warnings = rep.Identity.Warnings
	return 0
}

// TestUnprivileged runs the backend as uid 65534: user namespaces still
// isolate, and without a writable cgroup the limits fall back to rlimits
// with a warning.
func TestUnprivileged(t *testing.T) {
	testutil.RequireRoot(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// t.TempDir's parent is private to root; the child must reach it.
	dir, err := os.MkdirTemp("", "unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "native.test")
	if err := copyFile(self, bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Dir = dir
	cmd.Env = []string{unprivilegedEnv + "=1", "PATH=/usr/bin:/bin", "TMPDIR=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("unprivileged child: %v\n%s", err, out)
	}
	var rep unprivilegedReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("child report %q: %v", out, err)
	}
	if rep.Err != "" {
		t.Fatalf("unprivileged backend failed: %s", rep.Err)
	}
	id := string(rep.Identity.Stdout)
	if rep.Identity.Status != sandbox.StatusOK && rep.Identity.Status != sandbox.StatusNonzeroExit {
		t.Fatalf("identity run: %s %s", rep.Identity.Status, rep.Identity.Stderr)
	}
	for _, want := range []string{"0\n", "CapEff:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2", "No such file"} {
		if !strings.Contains(id, want) {
			t.Errorf("identity output lacks %q:\n%s", want, id)
		}
	}
	warned := strings.Join(rep.Warnings, "\n")
	if !strings.Contains(warned, "unprivileged") || !strings.Contains(warned, "rlimits") {
		t.Errorf("warnings do not say the limits are weaker: %q", warned)
	}
	if rep.Memory.Status != sandbox.StatusNonzeroExit || !strings.Contains(string(rep.Memory.Stderr), "MemoryError") {
		t.Errorf("400 MB under a 128 MB rlimit: %s %q", rep.Memory.Status, rep.Memory.Stderr)
	}
	if len(rep.SeriesPids) != 2 || rep.SeriesPids[0] != "2" || rep.SeriesPids[1] != "2" {
		t.Errorf("a series without cgroups ran as processes %q, want 2 and 2 (a new sandbox each time)", rep.SeriesPids)
	}
}

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
		out.Close()
		return err
	}
	return out.Close()
}
