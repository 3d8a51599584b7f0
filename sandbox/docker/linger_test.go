package docker_test

import (
	"context"
	"testing"
	"time"

	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/docker"
)

// bothPaths runs f with a backend that makes a container per run and
// with one whose runs take a warm container (run, there, fails the test
// when a run made a container of its own).
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
	t.Run("warm", func(t *testing.T) {
		b := warmBackend(t, docker.Options{})
		f(t, func(s *sandbox.Spec) *sandbox.Result {
			t.Helper()
			waitWarm(t, b, 1)
			taken := b.Warm().Taken
			res, err := b.Run(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if got := b.Warm().Taken; got != taken+1 {
				t.Fatalf("the run took %d warm containers, want 1", got-taken)
			}
			return res
		})
	})
}

// TestLeftoverOutput: a program ends and a child it left writes a little
// later. What the child writes while the output still flows is the run's,
// on both paths: the run waits for it before it kills the child.
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
		// The program ends once the child has started; it is gone long
		// before the cap is reached: only the child can reach it.
		const started = `while [ ! -e /tmp/started ]; do sleep 0.01; done; echo early`
		s := shSpec(`(: >/tmp/started; exec yes) & ` + started)
		s.Limits.OutputBytes = 1 << 20
		res := untilStatus(run, s, sandbox.StatusOutputLimit)
		if res.Status != sandbox.StatusOutputLimit || len(res.Stdout) != 1<<20 {
			t.Errorf("a child writing without end: status %s, %d bytes of output: want the output limit", res.Status, len(res.Stdout))
		}
		// One process that writes a line every 5 ms, without end.
		s = shSpec(`python3 -c "import itertools, time; print('x', flush=True); open('/tmp/started', 'w').close(); ` +
			`[(print('x', flush=True), time.sleep(0.005)) for _ in itertools.count()]" & ` + started)
		s.Limits.WallTime = time.Second
		res = untilStatus(run, s, sandbox.StatusTimeLimit)
		if res.Status != sandbox.StatusTimeLimit {
			t.Errorf("a child writing until the wall limit: status %s, %d bytes of output: want the time limit", res.Status, len(res.Stdout))
		}
		// The child writes 2 bytes at most every 5 ms: more than 2000 means
		// the run went on reading for seconds past its wall limit.
		if len(res.Stdout) > 2000 {
			t.Errorf("a child writing until the wall limit: %d bytes of output, want the run over at the limit", len(res.Stdout))
		}
	})
}

// untilStatus runs s until it ends with want, three times at most. The
// wait for a leftover's output ends once no output came for 50 ms: a
// pause of this process or of the engine that long (a loaded machine, the
// race detector) ends it as quiet output would. A wait that is not there,
// or that ignores the limits, fails every time.
func untilStatus(run func(*sandbox.Spec) *sandbox.Result, s *sandbox.Spec, want sandbox.Status) *sandbox.Result {
	var res *sandbox.Result
	for range 3 {
		c := *s
		if res = run(&c); res.Status == want {
			break
		}
	}
	return res
}
