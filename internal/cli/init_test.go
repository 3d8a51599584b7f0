package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/pid1"
)

// The init's signals, reaping and statuses are tested in internal/pid1 and,
// as the image's PID 1, by scripts/test-image.sh; these are the command
// line's refusals, which start nothing.

func TestInitNoCommand(t *testing.T) {
	for _, args := range [][]string{{"init"}, {"init", "--"}} {
		ta := newApp(t, "")
		if code := ta.Run(context.Background(), args); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, ExitUsage)
		}
		if !strings.Contains(ta.stderr.String(), "coderunner init: no command given") {
			t.Errorf("%v: stderr %q", args, ta.stderr)
		}
	}
}

func TestInitMissingCommand(t *testing.T) {
	ta := newApp(t, "")
	if code := ta.Run(context.Background(), []string{"init", "--", "/nonexistent/coderunner-test"}); code != pid1.ExitNotFound {
		t.Errorf("exit %d, want %d", code, pid1.ExitNotFound)
	}
	if !strings.Contains(ta.stderr.String(), "/nonexistent/coderunner-test") {
		t.Errorf("stderr %q does not name the command", ta.stderr)
	}
}

func TestInitUnknownFlag(t *testing.T) {
	ta := newApp(t, "")
	if code := ta.Run(context.Background(), []string{"init", "--reap", "--", "true"}); code != ExitUsage {
		t.Errorf("exit %d, want %d", code, ExitUsage)
	}
	if !strings.Contains(ta.stderr.String(), "unknown flag --reap") {
		t.Errorf("stderr %q", ta.stderr)
	}
}

func TestInitHelp(t *testing.T) {
	ta := newApp(t, "")
	if code := ta.run("help", "init"); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"coderunner init [--writable-cgroup] [--] COMMAND", "SIGTERM", "128+N", "PID 1", "--cgroupns=private"} {
		if !strings.Contains(ta.stdout.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, ta.stdout)
		}
	}
}
