package sandboxtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
)

// RootlessChildEnv is the variable that, set to "1", makes a backend's
// test binary write its RootlessReport as JSON on stdout and exit, from
// TestMain (RootlessMain): TestRootless starts it so as uid 65534 when the
// tests run as root.
const RootlessChildEnv = "CODERUNNER_TEST_ROOTLESS_CHILD"

// Opener builds a backend as the current user, allowed or not to run with
// rlimits only where no cgroup is usable.
type Opener func(allowRlimitsOnly bool) (sandbox.Backend, error)

// RootlessReport is what a backend does as an ordinary user.
type RootlessReport struct {
	// Err is a failure that ends the report early.
	Err string
	// Probe is the backend's probe, built without the opt-out.
	Probe sandbox.Report
	// Cgroups is whether the probe found a usable cgroup.
	Cgroups bool
	// Refused and RefusedNoCgroup are the error of a run without the
	// opt-out, and whether it is sandbox.ErrNoCgroup; SeriesRefused is
	// the same for a run of a series (backends that keep sandboxes).
	Refused         string
	RefusedNoCgroup bool
	SeriesRefused   bool
	// Identity and Memory are runs of the backend the runs went through:
	// without the opt-out where that works, else with it.
	Identity *sandbox.Result
	Memory   *sandbox.Result
	// TmpFiles is whether the identity run had a file in /tmp to show.
	TmpFiles bool
	// SeriesPids are the process ids of two runs of a series.
	SeriesPids []string
	// Backend is the backend's name.
	Backend string
	// Kept is a run in a workspace the keeper holds (capws.NewKept: a
	// capped tmpfs mounted without root), KeptRefused its error if it
	// was refused and whether that is sandbox.ErrUnavailable; KeptRead
	// is what the host read back from the workspace, KeptOther what a
	// run in a second one listed of it.
	Kept            *sandbox.Result
	KeptRefused     string
	KeptUnavailable bool
	KeptRead        string
	KeptOther       *sandbox.Result
}

// RootlessMain is for a backend's TestMain: in the child TestRootless
// starts, it writes the report and returns true (exit then); otherwise it
// returns false at once.
func RootlessMain(open Opener, mounts []sandbox.Mount) bool {
	if os.Getenv(RootlessChildEnv) != "1" {
		return false
	}
	_ = json.NewEncoder(os.Stdout).Encode(Rootless(open, mounts))
	return true
}

// Rootless drives the backend as the current user: a probe and a run
// without the opt-out, then, if that run was refused, with it: who the
// program is, 400 MB under a 128 MB limit, and a series of two runs.
func Rootless(open Opener, mounts []sandbox.Mount) (rep RootlessReport) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	strict, err := open(false)
	if err != nil {
		rep.Err = "backend without the opt-out: " + err.Error()
		return rep
	}
	defer closeBackend(strict)
	if p, ok := strict.(sandbox.Prober); ok {
		rep.Probe = p.Probe(ctx)
		for _, c := range rep.Probe.Checks {
			if c.Name == "cgroups" {
				rep.Cgroups = c.OK
			}
		}
	}
	trivial := &sandbox.Spec{Args: []string{"/bin/true"}, Mounts: mounts}
	b := strict
	if _, err := strict.Run(ctx, trivial); err != nil {
		rep.Refused = err.Error()
		rep.RefusedNoCgroup = errors.Is(err, sandbox.ErrNoCgroup)
		if r, ok := strict.(sandbox.Reuser); ok {
			s := r.Series()
			_, err := s.Run(ctx, trivial)
			rep.SeriesRefused = errors.Is(err, sandbox.ErrNoCgroup)
			_ = s.Close()
		}
		if b, err = open(true); err != nil {
			rep.Err = "backend with the opt-out: " + err.Error()
			return rep
		}
		defer closeBackend(b)
	}
	spec := &sandbox.Spec{
		Args:   []string{"/bin/sh", "-c", "grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; ls /root 2>&1; cat /tmp/seed/file 2>&1"},
		Mounts: mounts,
	}
	if rep.TmpFiles = sandbox.PlacesTmpFiles(b); rep.TmpFiles {
		// Without root the backend has bwrap copy them in.
		spec.TmpFiles = []sandbox.File{{Path: "seed/file", Content: []byte("seeded\n")}}
	}
	if rep.Identity, err = b.Run(ctx, spec); err != nil {
		rep.Err = "identity run: " + err.Error()
		return rep
	}
	spec = &sandbox.Spec{
		Args:   []string{"/usr/bin/python3", "-c", "b = bytearray(400 << 20); print(len(b))"},
		Mounts: mounts,
		Limits: sandbox.Limits{Memory: 128 * sandbox.MiB},
	}
	if rep.Memory, err = b.Run(ctx, spec); err != nil {
		rep.Err = "memory run: " + err.Error()
		return rep
	}
	rep.Backend = b.Name()
	if msg := keptWorkspace(ctx, b, mounts, &rep); msg != "" {
		rep.Err = msg
		return rep
	}
	if r, ok := b.(sandbox.Reuser); ok {
		s := r.Series()
		defer s.Close()
		for range 2 {
			res, err := s.Run(ctx, &sandbox.Spec{Args: []string{"/bin/sh", "-c", "echo $$"}, Mounts: mounts})
			if err != nil {
				rep.Err = "series run: " + err.Error()
				return rep
			}
			rep.SeriesPids = append(rep.SeriesPids, strings.TrimSpace(string(res.Stdout)))
		}
	}
	return rep
}

// keptCap is the size of the kept workspaces keptWorkspace makes.
const keptCap = 1 * sandbox.MiB

// keptWorkspace runs a program in a workspace the keeper holds, as the
// compile and run steps of a compiled language do without root: it reads
// a file the host wrote, writes one the host reads back, and writes past
// the cap. A second run in a second such workspace lists its own. It
// returns a failure of the machinery, or "".
func keptWorkspace(ctx context.Context, b sandbox.Backend, mounts []sandbox.Mount, rep *RootlessReport) string {
	ws, err := capws.NewKept("", "kept-ws-", keptCap, 0)
	if err != nil {
		return "kept workspace: " + err.Error()
	}
	defer func() { _ = ws.Remove() }()
	spec := &sandbox.Spec{
		Args: []string{"/bin/sh", "-c", "cat in.txt; echo from-sandbox > out.txt; " +
			"head -c 2097152 /dev/zero > big 2>/dev/null || echo WRITE-FAILED; " +
			"ls -l big | cut -d' ' -f5; df -k /workspace | tail -1"},
		Mounts:    mounts,
		Workspace: ws.Path,
		Files:     []sandbox.File{{Path: "in.txt", Content: []byte("from-host\n")}},
		Limits:    sandbox.Limits{WorkspaceSize: keptCap},
	}
	rep.Kept, err = b.Run(ctx, spec)
	if err != nil {
		rep.KeptRefused = err.Error()
		rep.KeptUnavailable = errors.Is(err, sandbox.ErrUnavailable)
		return ""
	}
	out, err := os.ReadFile(filepath.Join(ws.Path, "out.txt"))
	if err != nil {
		return "reading the kept workspace back: " + err.Error()
	}
	rep.KeptRead = string(out)
	other, err := capws.NewKept("", "kept-ws-", keptCap, 0)
	if err != nil {
		return "second kept workspace: " + err.Error()
	}
	defer func() { _ = other.Remove() }()
	rep.KeptOther, err = b.Run(ctx, &sandbox.Spec{
		Args:      []string{"/bin/sh", "-c", "ls -A /workspace"},
		Mounts:    mounts,
		Workspace: other.Path,
		Limits:    sandbox.Limits{WorkspaceSize: keptCap},
	})
	if err != nil {
		return "run in the second kept workspace: " + err.Error()
	}
	return ""
}

// checkKept checks the run in a kept workspace: the native backend
// attaches it, capped; every other backend refuses it, saying why.
func checkKept(t *testing.T, rep RootlessReport) {
	t.Helper()
	if rep.Backend != "native" {
		if !rep.KeptUnavailable || !strings.Contains(rep.KeptRefused, "native backend") {
			t.Errorf("%s with a kept workspace: %q, want sandbox.ErrUnavailable naming the native backend", rep.Backend, rep.KeptRefused)
		}
		return
	}
	if rep.Kept == nil {
		t.Fatalf("a run in a kept workspace was refused: %s", rep.KeptRefused)
	}
	out := string(rep.Kept.Stdout)
	if rep.Kept.Status != sandbox.StatusOK {
		t.Fatalf("a run in a kept workspace: %s %q %q", rep.Kept.Status, out, rep.Kept.Stderr)
	}
	t.Logf("a run in a kept workspace:\n%s", out)
	lines := strings.Split(out, "\n")
	if len(lines) < 3 || lines[0] != "from-host" || lines[1] != "WRITE-FAILED" {
		t.Errorf("the kept workspace: the host's file or the write past its cap: %q", out)
	} else if n, err := strconv.ParseInt(lines[2], 10, 64); err != nil || n > keptCap {
		t.Errorf("the file written past the cap holds %q bytes, more than the cap of %d", lines[2], keptCap)
	}
	if rep.KeptRead != "from-sandbox\n" {
		t.Errorf("the host read %q back from the kept workspace", rep.KeptRead)
	}
	if rep.KeptOther == nil || rep.KeptOther.Status != sandbox.StatusOK || len(rep.KeptOther.Stdout) != 0 {
		t.Errorf("a run in a second kept workspace saw files: %+v", rep.KeptOther)
	}
}

func closeBackend(b sandbox.Backend) {
	if c, ok := b.(io.Closer); ok {
		_ = c.Close()
	}
}

// TestRootless checks what the backend does as an ordinary user: as
// root it starts this test binary again as uid 65534 (its TestMain calls
// RootlessMain), as an ordinary user it drives the backend itself. With
// no usable cgroup a run is refused with sandbox.ErrNoCgroup, naming both
// ways out, while the probe still finds the backend working; with
// AllowRlimitsOnly the run goes ahead isolated, its memory held by an
// rlimit, with a warning. With a delegated cgroup
// (testutil.DelegatedCgroup) runs go ahead without the opt-out and the
// memory limit is the cgroup's.
func TestRootless(t *testing.T, open Opener, mounts []sandbox.Mount) {
	t.Helper()
	var rep RootlessReport
	delegated := false
	if os.Geteuid() == 0 {
		rep = rootlessChild(t)
	} else {
		rep = Rootless(open, mounts)
		delegated = testutil.DelegatedCgroup()
		if !testutil.Rootless() {
			// Outside a rootless run of the suites, whatever this user
			// has is what is checked.
			delegated = rep.Cgroups
		}
	}
	if rep.Err != "" {
		t.Fatalf("as an ordinary user: %s", rep.Err)
	}
	if !rep.Probe.Available {
		t.Fatalf("probe: not available: %s", rep.Probe.Reason)
	}
	if delegated {
		checkDelegated(t, rep)
	} else {
		checkRefused(t, rep)
	}
	checkKept(t, rep)
	id := string(rep.Identity.Stdout)
	wants := []string{"CapEff:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2", "No such file"}
	if rep.TmpFiles {
		wants = append(wants, "\nseeded\n")
	}
	for _, want := range wants {
		if !strings.Contains(id, want) {
			t.Errorf("identity output lacks %q:\n%s", want, id)
		}
	}
}

func checkDelegated(t *testing.T, rep RootlessReport) {
	t.Helper()
	if !rep.Cgroups || rep.Refused != "" || rep.Probe.Refused != "" {
		t.Fatalf("a delegated cgroup: cgroups found %v, run refused with %q, probe says %q; checks %+v",
			rep.Cgroups, rep.Refused, rep.Probe.Refused, rep.Probe.Checks)
	}
	if rep.Memory.Status != sandbox.StatusMemoryLimit {
		t.Errorf("400 MB under a 128 MB cgroup limit: %s %q, want %s", rep.Memory.Status, rep.Memory.Stderr, sandbox.StatusMemoryLimit)
	}
	if w := strings.Join(rep.Memory.Warnings, "\n"); strings.Contains(w, "rlimits only") {
		t.Errorf("a run with a cgroup warns of rlimits: %q", w)
	}
}

func checkRefused(t *testing.T, rep RootlessReport) {
	t.Helper()
	if rep.Cgroups {
		t.Fatalf("found a usable cgroup where none was delegated: %+v", rep.Probe.Checks)
	}
	if !rep.RefusedNoCgroup {
		t.Fatalf("a run without a cgroup and without the opt-out: %q, want sandbox.ErrNoCgroup", rep.Refused)
	}
	for _, want := range []string{"backend.allow_rlimits_only", "CODERUNNER_BACKEND_ALLOW_RLIMITS_ONLY", "--allow-rlimits-only", "delegate", "cgroups unavailable"} {
		if !strings.Contains(rep.Refused, want) {
			t.Errorf("the refusal does not name %q: %s", want, rep.Refused)
		}
	}
	if rep.Probe.Refused == "" || !strings.Contains(strings.Join(rep.Probe.Warnings, "\n"), "every run is refused") {
		t.Errorf("the probe does not say runs are refused: refused %q, warnings %q", rep.Probe.Refused, rep.Probe.Warnings)
	}
	if rep.SeriesPids != nil && !rep.SeriesRefused {
		t.Error("a series run without a cgroup and without the opt-out was not refused")
	}
	if rep.Memory.Status != sandbox.StatusNonzeroExit || !strings.Contains(string(rep.Memory.Stderr), "MemoryError") {
		t.Errorf("400 MB under a 128 MB rlimit: %s %q", rep.Memory.Status, rep.Memory.Stderr)
	}
	if w := strings.Join(rep.Memory.Warnings, "\n"); !strings.Contains(w, "rlimits only") {
		t.Errorf("a run with rlimits only does not warn of it: %q", w)
	}
	if rep.SeriesPids != nil && (len(rep.SeriesPids) != 2 || rep.SeriesPids[0] != "2" || rep.SeriesPids[1] != "2") {
		t.Errorf("a series without cgroups ran as processes %q, want 2 and 2 (a new sandbox each time)", rep.SeriesPids)
	}
}

// rootlessChild runs this test binary as uid 65534 with RootlessChildEnv
// and returns its report.
func rootlessChild(t *testing.T) RootlessReport {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// t.TempDir's parent is private to root; the child must reach it.
	dir := testutil.ReachableDir(t, "rootless-")
	if err := os.Chmod(dir, 0o777); err != nil { //nolint:gosec // the child's own TMPDIR
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "backend.test")
	if err := copyExecutable(self, bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin) //nolint:gosec // this test binary, copied
	cmd.Dir = dir
	cmd.Env = []string{RootlessChildEnv + "=1", "PATH=/usr/bin:/bin", "TMPDIR=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the child as uid 65534: %v\n%s", err, out)
	}
	var rep RootlessReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("child report %q: %v", out, err)
	}
	return rep
}

func copyExecutable(src, dst string) error {
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
		return fmt.Errorf("unable to copy %s: %w", src, err)
	}
	return out.Close()
}
