package native_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
)

// TestToolchainWithRelativeLinks runs a host toolchain laid out as
// Debian's golang-go is (its root in /usr/lib/tc-1, whose src and
// pkg/include are relative links into /usr/share/tc-1) at its neutral
// path: through the links that lead out of the root, the program finds
// the files they lead to.
func TestToolchainWithRelativeLinks(t *testing.T) {
	b := newBackend(t)
	defer b.Close()
	dir := testutil.ReachableDir(t, "toolchain-")
	root := filepath.Join(dir, "usr", "lib", "tc-1")
	share := filepath.Join(dir, "usr", "share", "tc-1")
	for _, d := range []string{filepath.Join(root, "bin"), filepath.Join(root, "pkg"),
		filepath.Join(share, "src"), filepath.Join(share, "pkg", "include")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := os.ReadFile("/usr/bin/cat")
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		filepath.Join(root, "bin", "tool"):                 string(cat),
		filepath.Join(share, "src", "hello.txt"):           "hello\n",
		filepath.Join(share, "pkg", "include", "header.h"): "header\n",
	} {
		if err := os.WriteFile(name, []byte(content), 0o755); err != nil { //nolint:gosec // the sandbox's users read and run them
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{
		"src":         "../../share/tc-1/src",
		"pkg/include": "../../../share/tc-1/pkg/include",
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	tab, err := lang.New(map[string]lang.Recipe{"tc": {
		Source: "main.txt",
		Run:    []string{"{tool}", "{root}/src/hello.txt", "{root}/pkg/include/header.h"},
		Toolchain: lang.Discovery{
			Paths:  []string{filepath.Join(root, "bin", "tool")},
			RootUp: 2,
			Mount:  "/opt/tc",
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := tab.Lookup("tc")
	if err != nil {
		t.Fatal(err)
	}
	if tc := l.Discover(context.Background()); !tc.Available {
		t.Fatalf("toolchain unavailable: %s", tc.Reason)
	}
	res, err := b.Run(context.Background(), &sandbox.Spec{
		Args:   l.RunArgs(lang.Vars{}),
		Mounts: l.Mounts,
		Limits: sandbox.Limits{WallTime: 10 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusOK || string(res.Stdout) != "hello\nheader\n" {
		t.Fatalf("status %s, stdout %q, stderr %q; want both files through the links",
			res.Status, res.Stdout, strings.TrimSpace(string(res.Stderr)))
	}
}
