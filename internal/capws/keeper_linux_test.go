package capws

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/mountpoint"
	"github.com/coderunner/coderunner/internal/testutil"
)

// newKeptDir makes a workspace the keeper holds, as root too: the keeper
// works the same for any user allowed to create user namespaces.
func newKeptDir(t *testing.T, size int64, inodes int) *Dir {
	t.Helper()
	d, err := InKeeper(t.TempDir(), "kept-", size, inodes)
	testutil.Require(t, !errors.Is(err, ErrUnsupported), "user namespaces are not allowed here")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Remove() })
	return d
}

func TestKeptCapsBytesAndFiles(t *testing.T) {
	d := newKeptDir(t, testSize, 64)
	if !Kept(d.Path) || !strings.HasPrefix(d.Path, "/proc/") {
		t.Fatalf("Path %s is not a kept workspace", d.Path)
	}
	if err := Check(d.Path, testSize); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if err := Check(d.Path, testSize/2); !errors.Is(err, ErrUncapped) {
		t.Errorf("Check under a smaller cap: %v, want ErrUncapped", err)
	}
	f, err := os.Create(filepath.Join(d.Path, "big"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write(make([]byte, 2*testSize))
	_ = f.Close()
	if !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("writing twice the cap: %v, want ENOSPC", err)
	}
	if err := os.Remove(filepath.Join(d.Path, "big")); err != nil {
		t.Fatal(err)
	}
	var last error
	for i := range 200 {
		if last = os.WriteFile(filepath.Join(d.Path, "f"+strconv.Itoa(i)), nil, 0o600); last != nil {
			break
		}
	}
	if !errors.Is(last, unix.ENOSPC) {
		t.Fatalf("200 files under an inode cap of 64: %v, want ENOSPC", last)
	}
	// The mount is the keeper's: the host's directory beneath it holds
	// nothing of what was written.
	ents, err := os.ReadDir(d.host)
	if err != nil || len(ents) != 0 {
		t.Errorf("the host's directory %s: %d entries, %v", d.host, len(ents), err)
	}
	if m, err := mountpoint.Is(d.host); err != nil || m {
		t.Errorf("the host's directory is a mount in the host's namespace: %v %v", m, err)
	}
}

func TestKeptWorkspacesApart(t *testing.T) {
	a := newKeptDir(t, testSize, 0)
	b := newKeptDir(t, testSize, 0)
	if err := os.WriteFile(filepath.Join(a.Path, "secret"), []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(b.Path, "secret")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("one workspace sees another's file: %v", err)
	}
}

func TestCloneKept(t *testing.T) {
	d := newKeptDir(t, testSize, 0)
	if err := os.WriteFile(filepath.Join(d.Path, "x"), []byte("in the tmpfs"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		tree, err := CloneKept(d.Path)
		if err != nil {
			t.Fatal(err)
		}
		var st unix.Statfs_t
		if err := unix.Fstatfs(int(tree.Fd()), &st); err != nil || st.Type != unix.TMPFS_MAGIC {
			t.Fatalf("the clone: type %#x, %v", st.Type, err)
		}
		fd, err := unix.Openat(int(tree.Fd()), "x", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("the clone lacks the workspace's file: %v", err)
		}
		_ = unix.Close(fd)
		_ = tree.Close()
	}
	if _, err := CloneKept(t.TempDir()); !errors.Is(err, ErrNotKept) {
		t.Errorf("CloneKept of a plain directory: %v, want ErrNotKept", err)
	}
}

func TestKeptRemove(t *testing.T) {
	d := newKeptDir(t, testSize, 0)
	if err := os.WriteFile(filepath.Join(d.Path, "x"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Removed by its path alone, as the compile step does.
	if err := (&Dir{Path: d.Path}).Remove(); err != nil {
		t.Fatal(err)
	}
	if Kept(d.Path) {
		t.Error("a removed workspace is still kept")
	}
	if _, err := os.Lstat(d.host); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the host's directory outlived the workspace: %v", err)
	}
	if _, err := os.Stat(d.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the workspace is still reachable: %v", err)
	}
	if _, err := CloneKept(d.Path); !errors.Is(err, ErrNotKept) {
		t.Errorf("CloneKept of a removed workspace: %v", err)
	}
	if err := d.Remove(); err != nil {
		t.Errorf("a second Remove: %v", err)
	}
}

func TestKeeperRefuses(t *testing.T) {
	d := newKeptDir(t, testSize, 0)
	k := d.keeper
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	link := filepath.Join(dir, "link")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	root := "/proc/" + strconv.Itoa(k.pid) + "/root"
	if _, err := k.call(opMount, "1048576", "16", link); err == nil {
		t.Error("the keeper mounted through a symbolic link")
	}
	if m, err := mountpoint.Is(root + target); err != nil || m {
		t.Errorf("the link's target became a mount: %v %v", m, err)
	}
	if _, err := k.call(opClone, target); err == nil || !strings.Contains(err.Error(), "not the root") {
		t.Errorf("clone of a directory that is no mount: %v", err)
	}
	if _, err := k.call(opClone, link); err == nil {
		t.Error("the keeper cloned through a symbolic link")
	}
	for _, req := range [][]string{{"x", "16", target}, {"1048576", target}, {"0", "16", target}} {
		if _, err := k.call(opMount, req...); err == nil {
			t.Errorf("mount request %q succeeded", req)
		}
	}
	if _, err := k.call('Z', target); err == nil || !strings.Contains(err.Error(), "unknown request") {
		t.Errorf("an unknown request: %v", err)
	}
	// The keeper still serves after refusing.
	if err := Check(d.Path, testSize); err != nil {
		t.Errorf("after the refusals: %v", err)
	}
	if _, err := CloneKept(d.Path); err != nil {
		t.Errorf("a clone after the refusals: %v", err)
	}
}

func TestNewKeptAsRootIsNew(t *testing.T) {
	testutil.RequireRoot(t)
	d, err := NewKept(t.TempDir(), "root-", testSize, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Remove()
	if Kept(d.Path) || d.keeper != nil {
		t.Error("as root a workspace went to the keeper")
	}
	if m, err := mountpoint.Is(d.Path); err != nil || !m {
		t.Errorf("as root the workspace is not a mount of the host's: %v %v", m, err)
	}
}

// TestKeeperEnds: a keeper killed takes its workspaces with it (their
// paths lead nowhere: it is never reaped, so its pid is no other
// process's), their removal still removes their directories, and the
// next workspace gets a new keeper.
func TestKeeperEnds(t *testing.T) {
	d := newKeptDir(t, testSize, 0)
	old := d.keeper
	if err := unix.Kill(old.pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, err := CloneKept(d.Path); err == nil {
		t.Fatal("a clone from a killed keeper")
	}
	// Its socket closes before its mount namespace goes: wait for the
	// zombie.
	for i := 0; alive(old.pid); i++ {
		if i == 10000 {
			t.Fatal("the killed keeper does not end")
		}
		time.Sleep(time.Millisecond)
	}
	if err := Check(d.Path, testSize); err == nil {
		t.Error("the workspace of a killed keeper is still reachable")
	}
	if err := d.Remove(); err != nil {
		t.Fatalf("removing the workspace of a killed keeper: %v", err)
	}
	if _, err := os.Lstat(d.host); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("its directory is left: %v", err)
	}
	n := newKeptDir(t, testSize, 0)
	if n.keeper == old || n.keeper.pid == old.pid {
		t.Fatal("no new keeper after the first ended")
	}
	if err := Check(n.Path, testSize); err != nil {
		t.Error(err)
	}
}
