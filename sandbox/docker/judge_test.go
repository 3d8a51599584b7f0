package docker_test

import (
	"testing"

	"github.com/coderunner/coderunner/internal/judgetest"
	"github.com/coderunner/coderunner/sandbox/docker"
)

// TestJudge judges Python and C programs through runner and judge on the
// docker backend, in each container mode.
func TestJudge(t *testing.T) {
	t.Run("reused", func(t *testing.T) {
		judgetest.Run(t, newBackend(t, docker.Options{Reuse: true}), localImages(t))
	})
	t.Run("per-run", func(t *testing.T) {
		judgetest.Run(t, newBackend(t, docker.Options{}), localImages(t))
	})
	t.Run("warm", func(t *testing.T) {
		requireWarm(t)
		b := newBackend(t, docker.Options{Warm: 2})
		judgetest.Run(t, b, localImages(t))
		if b.Warm().Taken == 0 {
			t.Error("no test found a warm container")
		}
	})
}
