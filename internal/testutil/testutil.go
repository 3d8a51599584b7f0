// Package testutil holds helpers shared by the project's tests.
//
// Tests that need root, a backend or a machine feature call Require or one
// of its wrappers. Outside CI a missing requirement skips the test with the
// reason; under CI=true it fails it, so that nothing is silently skipped
// where the whole suite must run.
//
// A rootless run of the suites (CODERUNNER_TEST_ROOTLESS=1, as an ordinary
// user) is the one exception: there, tests that need root are expected not
// to run, so RequireRoot skips them even under CI, while every other
// requirement still fails.
package testutil

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// InCI reports whether the tests run under CI (CI=true), where every
// privileged and backend test must run.
func InCI() bool { return os.Getenv("CI") == "true" }

// Require skips the test when ok is false, or fails it under CI.
func Require(t testing.TB, ok bool, reason string) {
	t.Helper()
	if ok {
		return
	}
	if InCI() {
		t.Fatalf("required under CI=true: %s", reason)
	}
	t.Skip(reason)
}

// RequirePythonModule skips t, or fails it under CI, unless the host's
// /usr/bin/python3 (the interpreter the python language takes first, and
// so the one sandboxed programs run) imports module.
func RequirePythonModule(t testing.TB, module string) {
	t.Helper()
	err := exec.Command("/usr/bin/python3", "-c", "import "+module).Run()
	Require(t, err == nil, fmt.Sprintf("/usr/bin/python3 cannot import %s (%v): scripts/install-deps.sh installs it", module, err))
}

// TimeScaleEnv names the factor by which a test widens the time limit of
// a program that must reach a given point before its limit passes (a
// blocking call, a signal handler installed), where programs run much
// slower than on an ordinary machine: the cgroup v2 guest under emulation
// sets it. Unset, the factor is 1.
const TimeScaleEnv = "CODERUNNER_TEST_TIME_SCALE"

// TimeScale is the factor of TimeScaleEnv, from 1 to 100; any other value
// fails the test rather than run it with limits it did not mean.
func TimeScale(t testing.TB) float64 {
	t.Helper()
	v := os.Getenv(TimeScaleEnv)
	if v == "" {
		return 1
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || f < 1 || f > 100 {
		t.Fatalf("%s=%q: want a number from 1 to 100", TimeScaleEnv, v)
	}
	return f
}

// Rootless reports whether this is a rootless run of the suites
// (CODERUNNER_TEST_ROOTLESS=1 and not uid 0): the tests that need root are
// known not to run.
func Rootless() bool {
	return os.Getenv("CODERUNNER_TEST_ROOTLESS") == "1" && os.Geteuid() != 0
}

// DelegatedCgroup reports whether this is a rootless run of the suites as
// a user root delegated a cgroup to (CODERUNNER_TEST_DELEGATED_CGROUP=1,
// set by scripts/test-rootless.sh): the tests that need a cgroup run as
// that user and must find it. In a rootless run without it, an ordinary
// user is expected to have no cgroup.
func DelegatedCgroup() bool {
	return Rootless() && os.Getenv("CODERUNNER_TEST_DELEGATED_CGROUP") == "1"
}

// RequireRoot requires the test to run as uid 0. In a rootless run of the
// suites it skips the test even under CI.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 && Rootless() {
		t.Skip("needs root (a rootless run of the suites)")
	}
	Require(t, os.Geteuid() == 0, "needs root")
}

// ReachableDir is a fresh temporary directory every user can reach
// (mode 0755), removed when t ends: a compile cache or seed directory the
// sandbox's unprivileged users must read, which t.TempDir is not (its
// parent is private to the test's user).
func ReachableDir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
