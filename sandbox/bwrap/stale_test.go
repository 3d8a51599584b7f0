package bwrap_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/mountpoint"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox/bwrap"
)

// TestStaleRunsSwept leaves in a state directory what a server killed in
// the middle of a run leaves (a run directory with its scratch tmpfs and a
// host directory bound in as a staged source) and starts a backend there:
// the dead process's directory goes, its mounts first, and the host
// directory keeps its files; a live process's directory, a new one and
// one of another owner's naming stay.
func TestStaleRunsSwept(t *testing.T) {
	testutil.RequireRoot(t)
	state := t.TempDir()
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := dead.Process.Pid
	old := time.Now().Add(-time.Minute)
	mkRun := func(name string, age time.Time) string {
		dir := filepath.Join(state, name)
		for _, sub := range []string{"tmp", "src/usr"} {
			if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := unix.Mount("tmpfs", filepath.Join(dir, "tmp"), "tmpfs", 0, "size=1m"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = unix.Unmount(filepath.Join(dir, "src/usr"), unix.MNT_DETACH)
			_ = unix.Unmount(filepath.Join(dir, "tmp"), unix.MNT_DETACH)
		})
		if err := os.WriteFile(filepath.Join(dir, "tmp", "left"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(dir, age, age); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "keep"), []byte("host file"), 0o644); err != nil {
		t.Fatal(err)
	}
	stale := mkRun(fmt.Sprintf("run-%d-1", deadPID), old)
	if err := unix.Mount(host, filepath.Join(stale, "src/usr"), "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	live := mkRun(fmt.Sprintf("run-%d-1", os.Getppid()), old)
	fresh := mkRun(fmt.Sprintf("run-%d-2", deadPID), time.Now().Add(time.Hour))
	unnamed := mkRun("run-123456789", old)

	if _, err := bwrap.New(bwrap.Options{StateDir: state}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("the dead process's run directory is still there: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(host, "keep")); err != nil || string(got) != "host file" {
		t.Errorf("the host directory bound in it lost its file: %q %v", got, err)
	}
	for _, dir := range []string{live, fresh, unnamed} {
		if m, err := mountpoint.Is(filepath.Join(dir, "tmp")); err != nil || !m {
			t.Errorf("%s was swept (mounted %v, %v)", dir, m, err)
		}
	}
}
