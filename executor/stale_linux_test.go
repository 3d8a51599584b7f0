package executor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/lang"
)

// TestCheckRemovesStaleWorkspaces: the workspaces of a process that died
// in the middle of runs (a tmpfs still mounted on one, files in another)
// are unmounted and removed by the next process's Check, without
// following a link out of them; those of a live process are left alone.
func TestCheckRemovesStaleWorkspaces(t *testing.T) {
	testutil.RequireRoot(t)
	work := t.TempDir()
	outside := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(outside, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(work, instancePrefix+"dead")
	live := filepath.Join(work, instancePrefix+"live")
	for _, d := range []string{filepath.Join(dead, "coderunner-exec-1"), filepath.Join(dead, "coderunner-exec-2"), filepath.Join(live, "coderunner-exec-3")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mounted := filepath.Join(dead, "coderunner-exec-1")
	if err := unix.Mount("coderunner-workspace", mounted, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mounted, unix.MNT_DETACH) })
	for _, p := range []string{filepath.Join(mounted, "out.txt"), filepath.Join(dead, "coderunner-exec-2", "f")} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dead, "coderunner-exec-2", "link")); err != nil {
		t.Fatal(err)
	}
	// The live process's lock.
	f, err := os.Open(live)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}

	e := New(hostBackend{}, lang.Default(), Options{WorkDir: work})
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
	defer e.instanceLock.Close()
	if _, err := os.Lstat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead process's workspaces are still there: %v", err)
	}
	if mi, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mi), mounted) {
		t.Error("the dead process's tmpfs is still mounted")
	}
	if _, err := os.Stat(filepath.Join(live, "coderunner-exec-3")); err != nil {
		t.Errorf("a live process's workspace was removed: %v", err)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "keep" {
		t.Errorf("a file outside, behind a link, was touched: %q %v", b, err)
	}
	if !strings.HasPrefix(filepath.Base(e.instance), instancePrefix) || filepath.Dir(e.instance) != work {
		t.Errorf("this process's workspaces go to %q", e.instance)
	}
}
