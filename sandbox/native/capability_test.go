package native_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/native"
)

// withoutCapabilityEnv names, in a copy of the test binary started by
// TestWithoutCapKill, the capability it was started without.
const withoutCapabilityEnv = "CODERUNNER_TEST_NATIVE_WITHOUT_CAP"

// capabilityReport is what that copy found, as JSON on its stdout.
type capabilityReport struct {
	// Steps are what ran, in order; Err is the first failure, if any.
	Steps []string
	Err   string
}

// withoutCapabilityMain runs the scenario of TestWithoutCapKill when
// the binary was started for it, and reports whether it was.
func withoutCapabilityMain() bool {
	if os.Getenv(withoutCapabilityEnv) == "" {
		return false
	}
	rep := withoutCapability()
	_ = json.NewEncoder(os.Stdout).Encode(rep)
	return true
}

// withoutCapability drives a backend with sandboxes started ahead of need
// through every way a sandbox ends: a run that ends by itself, a run
// stopped at its wall-time limit, one stopped past its output cap, a
// series whose sandbox is kept, then Close.
func withoutCapability() (rep capabilityReport) {
	fail := func(step string, err error) capabilityReport {
		rep.Err = fmt.Sprintf("%s: %v", step, err)
		return rep
	}
	b, err := native.New(native.Options{Warm: 1})
	if err != nil {
		return fail("new", err)
	}
	if !native.WaitWarm(b) {
		return fail("warm", errors.New("no sandbox was started ahead of need"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := func(step string, r interface {
		Run(context.Context, *sandbox.Spec) (*sandbox.Result, error)
	}, spec *sandbox.Spec, want sandbox.Status) error {
		spec.Mounts = native.BaseMounts()
		res, err := r.Run(ctx, spec)
		if err != nil {
			return err
		}
		if res.Status != want {
			return fmt.Errorf("status %s, want %s (stderr %q)", res.Status, want, res.Stderr)
		}
		rep.Steps = append(rep.Steps, step)
		return nil
	}
	if err := run("ends", b, &sandbox.Spec{Args: []string{"/bin/true"}}, sandbox.StatusOK); err != nil {
		return fail("ends", err)
	}
	if err := run("wall", b, &sandbox.Spec{Args: []string{"/bin/sleep", "100"},
		Limits: sandbox.Limits{WallTime: 500 * time.Millisecond}}, sandbox.StatusTimeLimit); err != nil {
		return fail("wall", err)
	}
	if err := run("output", b, &sandbox.Spec{Args: []string{"/usr/bin/yes"},
		Limits: sandbox.Limits{OutputBytes: 1000}}, sandbox.StatusOutputLimit); err != nil {
		return fail("output", err)
	}
	ser := b.Series()
	for i := range 2 {
		if err := run("series", ser, &sandbox.Spec{Args: []string{"/bin/true"}}, sandbox.StatusOK); err != nil {
			return fail(fmt.Sprintf("series run %d", i), err)
		}
	}
	if err := ser.Close(); err != nil {
		return fail("series close", err)
	}
	if err := b.Close(); err != nil {
		return fail("close", err)
	}
	if err := leftovers(); err != nil {
		return fail("leftovers", err)
	}
	rep.Steps = append(rep.Steps, "closed")
	return rep
}

// TestWithoutCapKill runs the backend as root without CAP_KILL, as a
// container given fewer capabilities would: root may then not signal a
// sandbox's init, a process of another host user. No run, teardown or
// Close may hang or fail for it.
func TestWithoutCapKill(t *testing.T) {
	testutil.RequireRoot(t)
	setpriv, err := exec.LookPath("setpriv")
	testutil.Require(t, err == nil, "setpriv (util-linux) is needed to drop a capability")
	// A bound on a hang, not a timing assertion: the scenario takes a few
	// seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, setpriv, "--inh-caps=-kill", "--bounding-set=-kill", "--",
		os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), withoutCapabilityEnv+"=kill")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("still running after 3 minutes: stderr %s", stderr.String())
	}
	if err != nil {
		t.Fatalf("%v: stderr %s", err, stderr.String())
	}
	var rep capabilityReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report %q: %v (stderr %s)", out, err, stderr.String())
	}
	if rep.Err != "" {
		t.Fatalf("after %v: %s (stderr %s)", rep.Steps, rep.Err, stderr.String())
	}
	if len(rep.Steps) == 0 || rep.Steps[len(rep.Steps)-1] != "closed" {
		t.Fatalf("steps %v, want every one up to Close", rep.Steps)
	}
}
