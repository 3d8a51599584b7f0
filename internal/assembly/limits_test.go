package assembly

import (
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/config"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/sandbox"
)

// The configuration's limits.checker section bounds checkers and
// interactors; its defaults are the judge's own.
func TestJudgeOptionsCheckerLimits(t *testing.T) {
	cfg := config.Default()
	got := JudgeOptions(cfg, nil).ToolLimits
	d := judge.DefaultToolLimits
	if got.WallTime != d.WallTime || got.CPUTime != d.CPUTime || got.Memory != d.Memory {
		t.Errorf("default checker limits %+v, want those of %+v", got, d)
	}
	cfg.Limits.Checker = config.CheckerLimits{Timeout: config.Duration(1500 * time.Millisecond), MemoryMB: 64}
	got = JudgeOptions(cfg, nil).ToolLimits
	if got.WallTime != 1500*time.Millisecond || got.CPUTime != 1500*time.Millisecond || got.Memory != 64*sandbox.MiB {
		t.Errorf("checker limits %+v", got)
	}
}
