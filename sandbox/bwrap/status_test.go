package bwrap_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

// TestSpoofedSetupError runs a program that prints what bwrap prints when
// it cannot build the sandbox and exits as bwrap then does: the program
// ran, so the run is the program's own failure, with its exit code and
// its stderr, never a setup error decided by the program's output.
func TestSpoofedSetupError(t *testing.T) {
	b := newBackend(t)
	const msg = "bwrap: Can't mkdir /x: Permission denied"
	for _, code := range []string{"1", "0", "2"} {
		res, err := b.Run(context.Background(), &sandbox.Spec{
			Args:   []string{"/bin/sh", "-c", "echo \"$0\" >&2; exit " + code, msg},
			Mounts: sandbox.SystemMounts(),
			Limits: sandbox.Limits{WallTime: 10 * time.Second},
		})
		if err != nil {
			t.Fatalf("exit %s: err %v, want the program's own result", code, err)
		}
		want := sandbox.StatusNonzeroExit
		if code == "0" {
			want = sandbox.StatusOK
		}
		if res.Status != want || res.ExitCode != int(code[0]-'0') || strings.TrimSpace(string(res.Stderr)) != msg {
			t.Fatalf("exit %s: status %s, exit code %d, stderr %q", code, res.Status, res.ExitCode, res.Stderr)
		}
	}
	if err := leftovers(); err != nil {
		t.Fatalf("left behind: %v", err)
	}
}

// TestExecFailureIsSetupError runs a program that is not there: bwrap's
// child fails its exec after the backend let it go, and the error is
// bwrap's reason.
func TestExecFailureIsSetupError(t *testing.T) {
	b := newBackend(t)
	_, err := b.Run(context.Background(), &sandbox.Spec{
		Args:   []string{"/no/such/program"},
		Mounts: sandbox.SystemMounts(),
		Limits: sandbox.Limits{WallTime: 10 * time.Second},
	})
	if !errors.Is(err, sandbox.ErrSetup) {
		t.Fatalf("err %v, want a setup error", err)
	}
	if !strings.Contains(err.Error(), "bwrap: execvp /no/such/program") {
		t.Fatalf("err %q does not give bwrap's reason", err)
	}
	if err := leftovers(); err != nil {
		t.Fatalf("left behind: %v", err)
	}
}
