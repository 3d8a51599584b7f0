package hostws

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
)

func TestPrepareReplacesPlantedLinks(t *testing.T) {
	ws := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("host"), 0o600); err != nil {
		t.Fatal(err)
	}
	// An earlier run planted a link to a host file and a link to a host
	// directory.
	if err := os.Symlink(outside, filepath.Join(ws, "main.py")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(ws, "pkg")); err != nil {
		t.Fatal(err)
	}
	err := Prepare(ws, []sandbox.File{{Path: "main.py", Content: []byte("print(1)")}}, os.Getuid(), false)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "host" {
		t.Fatalf("the host file was written through a link: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "main.py")); string(b) != "print(1)" {
		t.Fatalf("main.py holds %q", b)
	}
	err = Prepare(ws, []sandbox.File{{Path: "pkg/mod.py", Content: []byte("x")}}, os.Getuid(), false)
	if err == nil {
		t.Fatal("a file was written beneath a planted directory link")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(outside), "mod.py")); err == nil {
		t.Fatal("the file landed outside the workspace")
	}
}

func TestPrepareModesAndDirectories(t *testing.T) {
	ws := t.TempDir()
	err := Prepare(ws, []sandbox.File{
		{Path: "a/b/run.sh", Content: []byte("#!/bin/sh\n"), Mode: 0o755},
		{Path: "a/data", Content: []byte("d")},
	}, os.Getuid(), false)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{"a/b/run.sh": 0o755, "a/data": 0o644} {
		fi, err := os.Stat(filepath.Join(ws, p))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", p, fi, err, want)
		}
	}
	if err := Prepare(filepath.Join(ws, "missing"), nil, 0, false); err == nil {
		t.Fatal("a missing workspace was accepted")
	}
}

// A workspace handed to a sandbox user for the first time gives that user
// what the host wrote there before (a session's uploaded files), and
// nothing a link points to.
func TestPrepareHandsOverHostFiles(t *testing.T) {
	testutil.RequireRoot(t)
	ws := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	for _, err := range []error{
		os.WriteFile(outside, []byte("host"), 0o600),
		os.MkdirAll(filepath.Join(ws, "dir"), 0o755),
		os.WriteFile(filepath.Join(ws, "dir", "data.txt"), []byte("d"), 0o644),
		os.Symlink(outside, filepath.Join(ws, "link")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	const uid = 4321
	if err := Prepare(ws, nil, uid, true); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", "dir", "dir/data.txt", "link"} {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(ws, p), &st); err != nil || st.Uid != uid {
			t.Errorf("%q: owner %d, %v", p, st.Uid, err)
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(outside, &st); err != nil || st.Uid != 0 {
		t.Fatalf("the file a link points to changed owner: %d, %v", st.Uid, err)
	}
	// Handed over already: a file another user owns is left alone.
	if err := os.WriteFile(filepath.Join(ws, "later"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Prepare(ws, nil, uid, true); err != nil {
		t.Fatal(err)
	}
	if err := unix.Lstat(filepath.Join(ws, "later"), &st); err != nil || st.Uid != 0 {
		t.Fatalf("a workspace already handed over was walked again: %d, %v", st.Uid, err)
	}
}
