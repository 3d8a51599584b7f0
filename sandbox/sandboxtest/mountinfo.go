package sandboxtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
)

// testMountinfoHostPaths attacks what the mount tables tell a program
// about the host: with a host workspace made as the product makes them
// (a capped tmpfs from capws, in a directory of the host's), neither
// /proc/self/mountinfo nor /proc/self/mounts may name the workspace's
// directory or its parent, and the workspace's own line names no
// product (its mount source is neutral).
func (s *suite) testMountinfoHostPaths(t *testing.T) {
	testutil.Require(t, capws.Supported(), "host workspaces are capped by a tmpfs mount, which needs root")
	parent, err := os.MkdirTemp("", "hostparent-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(parent) }()
	// The sandbox's user of some backends reaches the workspace through
	// its parent.
	if err := os.Chmod(parent, 0o755); err != nil { //nolint:gosec // a directory of empty mount points
		t.Fatal(err)
	}
	ws, err := capws.New(parent, "secretws-", sandbox.DefaultLimits.WorkspaceSize, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ws.Remove() }()
	spec := s.sh("cat /proc/self/mountinfo; echo ===; cat /proc/self/mounts")
	spec.Workspace = ws.Path
	res := s.run(t, spec)
	expect(t, res, sandbox.StatusOK)
	out := string(res.Stdout)
	if !strings.Contains(out, " /workspace ") {
		t.Fatalf("no /workspace in the mount tables: %s", out)
	}
	for _, leak := range []string{filepath.Base(ws.Path), parent, filepath.Base(parent), "secretws-", "hostparent-"} {
		if strings.Contains(out, leak) {
			t.Errorf("the mount tables name the host's %q:\n%s", leak, out)
		}
	}
	for line := range strings.SplitSeq(out, "\n") {
		if strings.Contains(line, " /workspace ") && strings.Contains(line, "coderunner") {
			t.Errorf("the workspace's mount names the product: %s", line)
		}
	}
}
