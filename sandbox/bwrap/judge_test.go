package bwrap_test

import (
	"testing"

	"github.com/coderunner/coderunner/internal/judgetest"
)

// TestJudge judges Python and C programs through runner and judge on the
// bwrap backend.
func TestJudge(t *testing.T) {
	judgetest.Run(t, newBackend(t), nil)
}
