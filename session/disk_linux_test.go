package session

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// hostile builds, in a workspace, what a program could leave to trick the
// host: links to files and directories outside, a deep tree, unreadable
// and read-only directories. It returns the workspace and an outside
// directory that must survive.
func hostile(t *testing.T) (ws, outside string) {
	t.Helper()
	base := t.TempDir()
	outside = filepath.Join(base, "outside")
	ws = filepath.Join(base, "ws")
	for _, d := range []string{outside, ws} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), make([]byte, 8<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(outside, filepath.Join(ws, "dirlink")))
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws, "filelink")))
	must(os.Symlink("/", filepath.Join(ws, "root")))
	deep := ws
	for range 3 * removeDepth {
		deep = filepath.Join(deep, "d")
	}
	must(os.MkdirAll(deep, 0o755))
	must(os.WriteFile(filepath.Join(deep, "leaf"), []byte("x"), 0o644))
	must(os.Symlink(outside, filepath.Join(deep, "link")))
	locked := filepath.Join(ws, "locked")
	must(os.MkdirAll(filepath.Join(locked, "inner"), 0o755))
	must(os.WriteFile(filepath.Join(locked, "inner", "f"), []byte("x"), 0o644))
	must(os.Chmod(filepath.Join(locked, "inner"), 0o555))
	must(os.Chmod(locked, 0o000))
	must(os.Link(filepath.Join(deep, "leaf"), filepath.Join(ws, "hardlink")))
	return ws, outside
}

func TestRemoveTreeHostile(t *testing.T) {
	ws, outside := hostile(t)
	if err := removeTree(ws); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(ws); !os.IsNotExist(err) {
		t.Errorf("workspace left: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(outside, "secret")); err != nil || fi.Size() != 8<<20 {
		t.Errorf("a file outside the workspace was touched: %v", err)
	}
	left, err := os.ReadDir(filepath.Dir(ws))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		if e.Name() != "outside" {
			t.Errorf("removeTree left %s beside the workspace", e.Name())
		}
	}
}

func TestTreeUsageHostile(t *testing.T) {
	ws, _ := hostile(t)
	t.Cleanup(func() { _ = removeTree(ws) })
	if err := os.WriteFile(filepath.Join(ws, "data"), make([]byte, 300<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	// As root the unreadable directory is read too; otherwise the walk
	// stops there, which counts as over the cap.
	if os.Geteuid() != 0 {
		if _, err := treeUsage(ws, 10_000, 1000); err == nil {
			t.Error("an unreadable directory was not reported")
		}
		if err := os.Chmod(filepath.Join(ws, "locked"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	used, err := treeUsage(ws, 10_000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	// The links to the 8 MB secret and to / are not followed: the total is
	// the data file plus directories, far below the secret's size.
	if used < 300<<10 || used >= 8<<20 {
		t.Errorf("usage %d bytes, want between 300 KiB and 8 MiB", used)
	}
	if _, err := treeUsage(ws, 10_000, removeDepth); !errors.Is(err, errTooLarge) {
		t.Errorf("depth bound: %v, want errTooLarge", err)
	}
	if _, err := treeUsage(ws, 5, 1000); !errors.Is(err, errTooLarge) {
		t.Errorf("entry bound: %v, want errTooLarge", err)
	}
}
