package hostws

import (
	"os"
	"path/filepath"
	"testing"

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
