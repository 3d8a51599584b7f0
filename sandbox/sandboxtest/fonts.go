package sandboxtest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
)

// TestFonts checks the sandbox's own fontconfig configuration
// (sandbox.FontsConf) on a backend that writes the sandbox's /etc:
// fc-list finds the system's fonts without an error, and its cache goes
// to /tmp, not to the workspace, where it would pass for the program's
// output.
func TestFonts(t *testing.T, b sandbox.Backend, mounts []sandbox.Mount) {
	_, err := os.Stat("/usr/bin/fc-list")
	testutil.Require(t, err == nil, "fc-list (fontconfig) is not installed")
	spec := &sandbox.Spec{
		Args:   []string{"/bin/sh", "-c", "fc-list --format='%{file}\\n'; echo ===; ls -A /workspace; echo ===; ls -A /tmp/.fontconfig | grep -c ."},
		Env:    []string{"PATH=/usr/bin:/bin", "HOME=" + sandbox.WorkspaceDir},
		Mounts: mounts,
	}
	res, err := b.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, res, sandbox.StatusOK)
	if len(res.Stderr) != 0 {
		t.Errorf("fontconfig complained: %s", res.Stderr)
	}
	parts := strings.Split(string(res.Stdout), "===\n")
	if len(parts) != 3 {
		t.Fatalf("output: %s", res.Stdout)
	}
	if !strings.Contains(parts[0], "/usr/share/fonts/") {
		t.Errorf("fc-list found none of the system's fonts: %q", parts[0])
	}
	if parts[1] != "" {
		t.Errorf("fontconfig wrote into the workspace: %q", parts[1])
	}
	if strings.TrimSpace(parts[2]) == "0" {
		t.Errorf("no font cache in /tmp/.fontconfig")
	}
}
