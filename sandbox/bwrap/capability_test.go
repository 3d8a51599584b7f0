package bwrap_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/bwrap"
)

// withoutKillEnv marks the copy of the test binary TestWithoutCapKill
// starts without CAP_KILL.
const withoutKillEnv = "CODERUNNER_TEST_BWRAP_WITHOUT_KILL"

// withoutKillMain runs the scenario of TestWithoutCapKill when the binary
// was started for it, printing "ok" or the failure, and reports whether
// it was.
func withoutKillMain() bool {
	if os.Getenv(withoutKillEnv) == "" {
		return false
	}
	if err := withoutKill(); err != nil {
		fmt.Println(err)
	} else {
		fmt.Println("ok")
	}
	return true
}

// withoutKill runs a program that ends by itself, then one stopped at its
// wall-time limit, and one stopped past its output cap, checking that
// nothing this process started is left.
func withoutKill() error {
	b, err := bwrap.New(bwrap.Options{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tt := range []struct {
		args []string
		lim  sandbox.Limits
		want sandbox.Status
	}{
		{[]string{"/bin/true"}, sandbox.Limits{}, sandbox.StatusOK},
		{[]string{"/bin/sleep", "100"}, sandbox.Limits{WallTime: 500 * time.Millisecond}, sandbox.StatusTimeLimit},
		{[]string{"/usr/bin/yes"}, sandbox.Limits{OutputBytes: 1000}, sandbox.StatusOutputLimit},
	} {
		res, err := b.Run(ctx, &sandbox.Spec{Args: tt.args, Mounts: sandbox.SystemMounts(), Limits: tt.lim})
		if err != nil {
			return fmt.Errorf("%v: %w", tt.args, err)
		}
		if res.Status != tt.want {
			return fmt.Errorf("%v: status %s, want %s (stderr %q)", tt.args, res.Status, tt.want, res.Stderr)
		}
	}
	return ownLeftovers()
}

// ownLeftovers lists the processes this process started, directly or not,
// that still run: other tests on the machine may run sandboxes meanwhile.
func ownLeftovers() error {
	var found []string
	for _, p := range testutil.Descendants() {
		found = append(found, strconv.Itoa(p.PID))
	}
	if len(found) > 0 {
		return fmt.Errorf("processes left: %v", found)
	}
	return nil
}

// TestWithoutCapKill runs the backend as root without CAP_KILL, as a
// container given fewer capabilities would: bwrap runs as another host
// user, whom root may then not signal. A run stopped early must still
// stop bwrap and everything in it, and never hang.
func TestWithoutCapKill(t *testing.T) {
	testutil.RequireRoot(t)
	requireBwrap(t)
	setpriv, err := exec.LookPath("setpriv")
	testutil.Require(t, err == nil, "setpriv (util-linux) is needed to drop a capability")
	// A bound on a hang, not a timing assertion: the scenario takes a
	// few seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, setpriv, "--inh-caps=-kill", "--bounding-set=-kill", "--",
		os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), withoutKillEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("still running after 3 minutes: stderr %s", stderr.String())
	}
	if err != nil {
		t.Fatalf("%v: stderr %s", err, stderr.String())
	}
	if got := strings.TrimSpace(string(out)); got != "ok" {
		t.Fatalf("without CAP_KILL: %s (stderr %s)", got, stderr.String())
	}
}
