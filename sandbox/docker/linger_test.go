package docker_test

import (
	"context"
	"testing"
	"time"

	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/docker"
)

// bothPaths runs f with a backend that makes a container per run.
func bothPaths(t *testing.T, f func(t *testing.T, run func(*sandbox.Spec) *sandbox.Result)) {
	t.Run("per run", func(t *testing.T) {
		b := newBackend(t, docker.Options{})
		f(t, func(s *sandbox.Spec) *sandbox.Result {
			t.Helper()
			res, err := b.Run(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			return res
		})
	})
}

// TestLeftoverOutput: a program ends and a child it left writes a little
// later. What the child writes while the output still flows is the run's:
// the run waits for it before it kills the child.
func TestLeftoverOutput(t *testing.T) {
	bothPaths(t, func(t *testing.T, run func(*sandbox.Spec) *sandbox.Result) {
		res := run(shSpec(`(sleep 0.02; echo late; echo late >&2) & echo early`))
		if res.Status != sandbox.StatusOK || res.ExitCode != 0 || string(res.Stdout) != "early\nlate\n" || string(res.Stderr) != "late\n" {
			t.Errorf("status %s exit %d stdout %q stderr %q: want ok, 0, early and late, late",
				res.Status, res.ExitCode, res.Stdout, res.Stderr)
		}
		// A child that keeps quiet is killed: the run does not wait for it.
		res = run(shSpec(`sleep 600 & echo early`))
		if res.Status != sandbox.StatusOK || string(res.Stdout) != "early\n" {
			t.Errorf("with a quiet child: status %s stdout %q", res.Status, res.Stdout)
		}
	})
}

// TestLeftoverOutputBounded: a child the program left that never stops
// writing is held to the run's limits: the wait for its output ends at
// the output cap or at the wall limit, as if the program still ran.
func TestLeftoverOutputBounded(t *testing.T) {
	bothPaths(t, func(t *testing.T, run func(*sandbox.Spec) *sandbox.Result) {
		// The program is gone long before the cap is reached: only the
		// child can reach it.
		s := shSpec(`yes & echo early`)
		s.Limits.OutputBytes = 1 << 20
		res := run(s)
		if res.Status != sandbox.StatusOutputLimit || len(res.Stdout) != 1<<20 {
			t.Errorf("a child writing without end: status %s, %d bytes of output: want the output limit", res.Status, len(res.Stdout))
		}
		// One process that writes a line every 5 ms, without end.
		s = shSpec(`python3 -c "import itertools, time; [(print('x', flush=True), time.sleep(0.005)) for _ in itertools.count()]" & echo early`)
		s.Limits.WallTime = time.Second
		res = run(s)
		if res.Status != sandbox.StatusTimeLimit {
			t.Errorf("a child writing until the wall limit: status %s, %d bytes of output: want the time limit", res.Status, len(res.Stdout))
		}
	})
}
