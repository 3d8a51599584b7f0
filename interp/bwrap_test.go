package interp_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/bwrap"
)

// bwrapUIDBase is a host uid range of this test's own: sandbox/bwrap's
// tests, which may run at the same time, count every process of the
// default range and every run directory of the default state directory
// as theirs, left behind.
const bwrapUIDBase = bwrap.DefaultHostUIDBase + 100_000

// openBwrap is a bwrap backend with a state directory and host uids of
// this test's own.
func openBwrap(t *testing.T) sandbox.Backend {
	t.Helper()
	_, err := exec.LookPath("bwrap")
	testutil.Require(t, err == nil, "needs bwrap (apt-get install bubblewrap)")
	// bwrap runs as a host uid of its range, which must reach the state
	// directory (the sandbox's /etc is there).
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bwrap.New(bwrap.Options{StateDir: filepath.Join(dir, "state"), HostUIDBase: bwrapUIDBase})
	testutil.Require(t, err == nil, fmt.Sprintf("the bwrap backend does not work here: %v", err))
	return b
}

// TestBwrap runs the interpreter suite on the bwrap backend.
func TestBwrap(t *testing.T) {
	runSuite(t, target{name: "bwrap", open: openBwrap, hostToolchains: true})
}
