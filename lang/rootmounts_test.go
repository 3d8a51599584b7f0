package lang

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/sandbox"
)

// debianTree makes, under dir, a toolchain laid out as Debian's golang-go
// is: its root in lib, with src and pkg/include relative links into
// share. It returns the root.
func debianTree(t *testing.T, dir string) string {
	t.Helper()
	root := filepath.Join(dir, "usr", "lib", "tc-1")
	share := filepath.Join(dir, "usr", "share", "tc-1")
	for _, d := range []string{"bin", "pkg/tool"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"src", "pkg/include"} {
		if err := os.MkdirAll(filepath.Join(share, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(root, "VERSION"), "tc1\n", 0o644)
	writeFile(t, filepath.Join(root, "pkg", "tool", "compile"), "x", 0o644)
	writeFile(t, filepath.Join(share, "src", "hello.txt"), "hello\n", 0o644)
	writeFile(t, filepath.Join(share, "pkg", "include", "x.h"), "header\n", 0o644)
	for name, target := range map[string]string{
		"src":         "../../share/tc-1/src",
		"pkg/include": "../../../share/tc-1/pkg/include",
		"gone":        "../../share/tc-1/nothing",
		"inside":      "bin",
		"absolute":    "/usr/bin",
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestRootMounts(t *testing.T) {
	dir := t.TempDir()
	root := debianTree(t, dir)
	share := filepath.Join(dir, "usr", "share", "tc-1")
	for _, d := range []string{filepath.Join(share, "src", "deeper"), filepath.Join(dir, "usr", "lib", "tc", "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{
		// Shown by the mount of src.
		"deep": "../../share/tc-1/src/deeper",
		// At /etc in the sandbox, which the sandbox reserves.
		"hostetc": strings.Repeat("../", 32) + "etc",
		// At /opt/tc/bin, inside the root's own mount.
		"again": "../tc/bin",
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	base := []sandbox.Mount{{Source: "/usr", Target: "/usr"}}
	got, err := rootMounts(root, "/opt/tc", base)
	if err != nil {
		t.Fatal(err)
	}
	want := []sandbox.Mount{
		{Source: root, Target: "/opt/tc"},
		// Where /opt/tc/pkg/include and /opt/tc/src lead.
		{Source: share + "/pkg/include", Target: "/share/tc-1/pkg/include"},
		{Source: share + "/src", Target: "/share/tc-1/src"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("rootMounts =\n%v\nwant\n%v", got, want)
	}
	// Through the mounts, each link leads where it does on the host.
	for link, sandboxPath := range map[string]string{
		"src/hello.txt":   "/share/tc-1/src/hello.txt",
		"pkg/include/x.h": "/share/tc-1/pkg/include/x.h",
		"deep":            "/share/tc-1/src/deeper",
		"VERSION":         "/opt/tc/VERSION",
	} {
		h, ok := hostPath(got, sandboxPath)
		if !ok {
			t.Errorf("%s is not mounted", sandboxPath)
			continue
		}
		want, err := filepath.EvalSymlinks(filepath.Join(root, link))
		if err != nil {
			t.Fatal(err)
		}
		if h != want {
			t.Errorf("%s is %s, want %s", sandboxPath, h, want)
		}
	}
}

func TestRootMountsWhole(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Relative links that stay inside the root, and absolute ones (the
	// follow_links recipes' business), keep it one mount.
	for name, target := range map[string]string{"a": "bin", "bin/b": "../a", "c": "./bin/../bin", "d": "/usr/bin"} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := rootMounts(root, "/opt/tc", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []sandbox.Mount{{Source: root, Target: "/opt/tc"}}; !slices.Equal(got, want) {
		t.Errorf("rootMounts = %v, want %v", got, want)
	}
}

func TestRootMountsBounded(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range maxLinkMounts + 1 {
		name := fmt.Sprintf("d%03d", i)
		if err := os.MkdirAll(filepath.Join(dir, "out", name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../out/"+name, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rootMounts(root, "/opt/tc", nil); err == nil || !strings.Contains(err.Error(), "more than 16 links") {
		t.Fatalf("rootMounts = %v, want the bound named", err)
	}
}
