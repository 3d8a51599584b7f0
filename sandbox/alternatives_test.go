package sandbox_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/coderunner/coderunner/sandbox"
)

// Only a directory of its own is bound: a link in its place could lead
// anywhere on the host (/etc, /root), and a file is no directory of links.
func TestHostAlternatives(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "alternatives")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	parent := filepath.Join(root, "parent")
	if err := os.Symlink(root, parent); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{dir, dir},
		{filepath.Join(parent, "alternatives"), dir},
		{link, ""},
		{file, ""},
		{filepath.Join(root, "missing"), ""},
	} {
		if got := sandbox.HostAlternatives(tc.path); got != tc.want {
			t.Errorf("HostAlternatives(%s) = %q, want %q", tc.path, got, tc.want)
		}
	}
}
