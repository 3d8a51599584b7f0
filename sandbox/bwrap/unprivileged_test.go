package bwrap_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/bwrap"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

func openAsUser(allowRlimitsOnly bool) (sandbox.Backend, error) {
	return bwrap.New(bwrap.Options{AllowRlimitsOnly: allowRlimitsOnly})
}

func TestMain(m *testing.M) {
	if sandboxtest.RootlessMain(openAsUser, sandbox.SystemMounts()) {
		os.Exit(0)
	}
	if withoutKillMain() {
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestUnprivileged runs the backend as an ordinary user (uid 65534 when
// the tests run as root): without a usable cgroup runs are refused unless
// rlimits alone are allowed, and with a delegated one its limits hold.
func TestUnprivileged(t *testing.T) {
	_, err := exec.LookPath("bwrap")
	testutil.Require(t, err == nil, "needs bwrap (apt-get install bubblewrap)")
	sandboxtest.TestRootless(t, openAsUser, sandbox.SystemMounts())
}
