package docker_test

import (
	"testing"

	"github.com/coderunner/coderunner/internal/judgetest"
	"github.com/coderunner/coderunner/sandbox/docker"
)

// TestJudge judges Python and C programs through runner and judge on the
// docker backend, in both container modes.
func TestJudge(t *testing.T) {
	t.Run("reused", func(t *testing.T) {
		judgetest.Run(t, newBackend(t, docker.Options{}), localImages(t))
	})
	t.Run("per-run", func(t *testing.T) {
		judgetest.Run(t, newBackend(t, docker.Options{}), localImages(t))
	})
}
