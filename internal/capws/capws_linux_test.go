package capws

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/testutil"
)

const testSize = 4 << 20

func newDir(t *testing.T, inodes int) *Dir {
	t.Helper()
	testutil.RequireRoot(t)
	d, err := New(t.TempDir(), "ws-", testSize, inodes)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Remove() })
	return d
}

// used is what the workspace's file system holds.
func used(t *testing.T, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize
}

func TestNewCapsBytesAndFiles(t *testing.T) {
	d := newDir(t, 64)
	if err := Check(d.Path, testSize); err != nil {
		t.Fatalf("Check of a fresh workspace: %v", err)
	}
	// fallocate past the cap.
	f, err := os.Create(filepath.Join(d.Path, "big"))
	if err != nil {
		t.Fatal(err)
	}
	err = unix.Fallocate(int(f.Fd()), 0, 0, 64<<20)
	f.Close()
	if !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("fallocate of 64 MiB in a 4 MiB workspace: %v, want ENOSPC", err)
	}
	// Empty files past the inode cap.
	var n int
	for n = 0; n < 1000; n++ {
		f, err := os.Create(filepath.Join(d.Path, fmt.Sprint("e", n)))
		if err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatalf("file %d: %v, want ENOSPC", n, err)
			}
			break
		}
		f.Close()
	}
	if n >= 64 {
		t.Fatalf("%d empty files in a workspace of 64 inodes", n)
	}
	if u := used(t, d.Path); u > testSize {
		t.Fatalf("the workspace holds %d bytes, more than %d", u, testSize)
	}
}

func TestSparseAndLinks(t *testing.T) {
	d := newDir(t, 0)
	// A sparse file far larger than the cap is honest: it takes no room.
	f, err := os.Create(filepath.Join(d.Path, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 40); err != nil {
		t.Fatalf("a sparse terabyte: %v", err)
	}
	// Writing into its holes is counted.
	buf := make([]byte, 1<<20)
	var werr error
	for i := int64(0); i < 16 && werr == nil; i++ {
		_, werr = f.WriteAt(buf, i<<30)
	}
	f.Close()
	if !errors.Is(werr, unix.ENOSPC) {
		t.Fatalf("filling the holes of a sparse file: %v, want ENOSPC", werr)
	}
	if err := os.Remove(filepath.Join(d.Path, "sparse")); err != nil {
		t.Fatal(err)
	}
	// Hard links of a big file do not multiply its pages.
	if err := os.WriteFile(filepath.Join(d.Path, "one"), make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	before := used(t, d.Path)
	for i := range 100 {
		if err := os.Link(filepath.Join(d.Path, "one"), filepath.Join(d.Path, fmt.Sprint("l", i))); err != nil {
			t.Fatal(err)
		}
	}
	if u := used(t, d.Path); u > before+64<<10 {
		t.Fatalf("100 links took %d bytes", u-before)
	}
	// A link out of the workspace is refused by the kernel.
	if err := os.Link(filepath.Join(d.Path, "one"), filepath.Join(t.TempDir(), "out")); !errors.Is(err, unix.EXDEV) {
		t.Fatalf("a link out of the workspace: %v, want EXDEV", err)
	}
}

func TestRemove(t *testing.T) {
	d := newDir(t, 0)
	if err := os.Symlink("/etc", filepath.Join(d.Path, "etc")); err != nil {
		t.Fatal(err)
	}
	if err := d.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(d.Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the workspace is still there: %v", err)
	}
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Fatal("removal followed a link")
	}
	if err := d.Remove(); err != nil {
		t.Fatalf("a second Remove: %v", err)
	}
}

func TestCheckRefuses(t *testing.T) {
	testutil.RequireRoot(t)
	plain := t.TempDir()
	if err := Check(plain, testSize); !errors.Is(err, ErrUncapped) {
		t.Errorf("a plain directory: %v", err)
	}
	mount := func(opts string) string {
		dir := t.TempDir()
		if err := unix.Mount("test", dir, "tmpfs", 0, opts); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = Unmount(dir) })
		return dir
	}
	for name, dir := range map[string]string{
		"unlimited size":   mount("size=0"),
		"unlimited inodes": mount("size=1m,nr_inodes=0"),
		"too large":        mount("size=64m"),
	} {
		if err := Check(dir, testSize); !errors.Is(err, ErrUncapped) {
			t.Errorf("%s: %v", name, err)
		}
	}
	capped := mount("size=1m,nr_inodes=100")
	if err := Check(capped, testSize); err != nil {
		t.Errorf("a capped tmpfs: %v", err)
	}
	sub := filepath.Join(capped, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Check(sub, testSize); !errors.Is(err, ErrUncapped) {
		t.Errorf("a directory below a mount: %v", err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(capped, link); err != nil {
		t.Fatal(err)
	}
	if err := Check(link, testSize); !errors.Is(err, ErrUncapped) {
		t.Errorf("a link to a capped tmpfs: %v", err)
	}
}

// BenchmarkNewRemove is the cost a capped workspace adds to a run: a
// directory, a tmpfs mount, its unmount and the directory's removal.
func BenchmarkNewRemove(b *testing.B) {
	testutil.RequireRoot(b)
	parent := b.TempDir()
	for b.Loop() {
		d, err := New(parent, "ws-", 256<<20, 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Remove(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMkdirRemove is what a plain workspace cost, for comparison.
func BenchmarkMkdirRemove(b *testing.B) {
	parent := b.TempDir()
	for b.Loop() {
		d, err := os.MkdirTemp(parent, "ws-")
		if err != nil {
			b.Fatal(err)
		}
		if err := os.RemoveAll(d); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSweep: the workspaces of a process that died are unmounted and
// removed; those of live processes are left alone.
func TestSweep(t *testing.T) {
	testutil.RequireRoot(t)
	parent := t.TempDir()
	dead := filepath.Join(parent, "ws-999999999-abc")
	live := filepath.Join(parent, fmt.Sprintf("ws-%d-abc", os.Getppid()))
	for _, d := range []string{dead, live} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := Mount(d, testSize, 0); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = (&Dir{Path: live}).Remove() })
	own, err := New(parent, "ws-", testSize, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Remove() })
	if n := Sweep(parent, "ws-"); n != 1 {
		t.Errorf("Sweep removed %d workspaces, want 1", n)
	}
	if _, err := os.Lstat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead process's workspace is still there: %v", err)
	}
	for _, d := range []string{live, own.Path} {
		if err := Check(d, testSize); err != nil {
			t.Errorf("a live workspace was touched: %v", err)
		}
	}
}

// TestSweepZombie: a process killed but not yet reaped by its parent (a
// server under a shell that never waits, say) is a zombie; it holds
// nothing, and its workspaces are swept like those of a process gone for
// good, with their root given to the sandbox's user as a backend leaves
// it.
func TestSweepZombie(t *testing.T) {
	testutil.RequireRoot(t)
	pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
	}()
	// Wait, without reaping it, until the child has exited.
	for i := 0; ; i++ {
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err == nil {
			break
		} else if i > 100 {
			t.Fatal(err)
		}
	}
	parent := t.TempDir()
	zombie := filepath.Join(parent, fmt.Sprintf("ws-%d-abc", pid))
	if err := os.Mkdir(zombie, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Mount(zombie, testSize, 0); err != nil {
		t.Fatal(err)
	}
	// The backend gives a workspace's root to the sandbox's user.
	if err := os.Chown(zombie, 1001000, 1001000); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = (&Dir{Path: zombie}).Remove() })
	if n := Sweep(parent, "ws-"); n != 1 {
		t.Errorf("Sweep removed %d workspaces, want the zombie's", n)
	}
	if _, err := os.Lstat(zombie); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the zombie's workspace is still there: %v", err)
	}
}

// TestSpares makes workspaces on kept directories: a removed workspace's
// directory serves the next one, as a new capped tmpfs with nothing of
// the last; a second Remove of the old workspace leaves the new one
// alone; a kept directory found not empty is not used; Close removes
// what is kept.
func TestSpares(t *testing.T) {
	testutil.RequireRoot(t)
	parent := t.TempDir()
	s := NewSpares(parent, "ws-")
	first, err := s.New(testSize, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(first.Path, "left"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := first.Remove(); err != nil {
		t.Fatal(err)
	}
	second, err := s.New(testSize, 0)
	if err != nil {
		t.Fatal(err)
	}
	if second.Path != first.Path {
		t.Fatalf("the second workspace is %s, not the first's kept directory %s", second.Path, first.Path)
	}
	if err := Check(second.Path, testSize); err != nil {
		t.Fatalf("the second workspace: %v", err)
	}
	if ents, err := os.ReadDir(second.Path); err != nil || len(ents) != 0 {
		t.Fatalf("the second workspace holds %v (%v), want nothing", ents, err)
	}
	// The first workspace's Remove again must not take the second down.
	if err := first.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := Check(second.Path, testSize); err != nil {
		t.Fatalf("after the first workspace's second Remove: %v", err)
	}
	if err := second.Remove(); err != nil {
		t.Fatal(err)
	}
	// Something written beneath a kept directory: it is not used again.
	if err := os.WriteFile(filepath.Join(second.Path, "beneath"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	third, err := s.New(testSize, 0)
	if err != nil {
		t.Fatal(err)
	}
	if third.Path == second.Path {
		t.Fatal("a kept directory with a file beneath it was used again")
	}
	if _, err := os.Lstat(second.Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the kept directory with a file beneath it is still there: %v", err)
	}
	if err := third.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(parent); err != nil || len(ents) != 0 {
		t.Fatalf("after Close the parent holds %v (%v), want nothing", ents, err)
	}
	// After Close a workspace's Remove removes its directory.
	fourth, err := s.New(testSize, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := fourth.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(fourth.Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a workspace removed after Close left its directory: %v", err)
	}
}
