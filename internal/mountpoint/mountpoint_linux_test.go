package mountpoint

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/testutil"
)

func TestIs(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.Mkdir(plain, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want bool
	}{{"/", true}, {"/proc", true}, {plain, false}} {
		got, err := Is(tc.path)
		if err != nil || got != tc.want {
			t.Errorf("Is(%s) = %v, %v; want %v", tc.path, got, err, tc.want)
		}
	}
	if _, err := Is(filepath.Join(dir, "missing")); err == nil {
		t.Error("Is of a missing path succeeded")
	}

	testutil.RequireRoot(t)
	if err := unix.Mount("tmpfs", plain, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(plain, unix.MNT_DETACH)
	if got, err := Is(plain); err != nil || !got {
		t.Errorf("Is(tmpfs mount point) = %v, %v; want true", got, err)
	}
	// A link to a mount point is not one: it is not followed.
	link := filepath.Join(dir, "link")
	if err := os.Symlink(plain, link); err != nil {
		t.Fatal(err)
	}
	if got, err := Is(link); err != nil || got {
		t.Errorf("Is(link to a mount point) = %v, %v; want false", got, err)
	}
}

// Beneath finds the mounts at and beneath a directory, deepest first,
// and none of a sibling whose name starts the same.
func TestBeneath(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	outer, inner, sibling := filepath.Join(dir, "a"), filepath.Join(dir, "a", "b"), filepath.Join(dir, "ab")
	for _, p := range []string{outer, sibling} {
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{outer, inner, sibling} {
		if p == inner {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		if err := unix.Mount("tmpfs", p, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Unmount(p, unix.MNT_DETACH) })
	}
	got, err := Beneath(outer)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != inner || got[1] != outer {
		t.Fatalf("Beneath(%s) = %v, want [%s %s]", outer, got, inner, outer)
	}
}
