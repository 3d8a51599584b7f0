package native_test

import (
	"os"
	"testing"

	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/native"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

func openAsUser(allowRlimitsOnly bool) (sandbox.Backend, error) {
	return native.New(native.Options{AllowRlimitsOnly: allowRlimitsOnly})
}

func TestMain(m *testing.M) {
	if sandboxtest.RootlessMain(openAsUser, native.BaseMounts()) {
		os.Exit(0)
	}
	if mode := os.Getenv(delegatedEnv); mode != "" {
		os.Exit(delegatedChild(mode == "full"))
	}
	if withoutCapabilityMain() {
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestUnprivileged runs the backend as an ordinary user (uid 65534 when
// the tests run as root): user namespaces still isolate; without a
// usable cgroup runs are refused unless rlimits alone are allowed, and
// with a delegated one its limits hold.
func TestUnprivileged(t *testing.T) {
	sandboxtest.TestRootless(t, openAsUser, native.BaseMounts())
}
