package bwrap_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

// TestPrivateToolchain mounts a toolchain that only root can reach, as
// rustup's under root's 0700 home: bwrap runs as an unprivileged host uid
// and could not bind it itself (its child failed, and the run was a setup
// error about a cgroup). The file inside must be there, and still on the
// host after the run.
func TestPrivateToolchain(t *testing.T) {
	b := newBackend(t)
	home := t.TempDir()
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	tool := filepath.Join(home, ".rustup", "toolchain")
	if err := os.MkdirAll(tool, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(tool, "VERSION")
	if err := os.WriteFile(file, []byte("1.2.3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	single := filepath.Join(home, "tool.conf")
	if err := os.WriteFile(single, []byte("conf\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		res, err := b.Run(context.Background(), &sandbox.Spec{
			Args: []string{"/bin/cat", "/opt/tool/VERSION", "/etc/tool.conf"},
			Mounts: append(sandbox.SystemMounts(),
				sandbox.Mount{Source: tool, Target: "/opt/tool"},
				sandbox.Mount{Source: single, Target: "/etc/tool.conf"}),
			Limits: sandbox.Limits{WallTime: 10 * time.Second},
		})
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if res.Status != sandbox.StatusOK || string(res.Stdout) != "1.2.3\nconf\n" {
			t.Fatalf("status %s, stdout %q, stderr %q", res.Status, res.Stdout, res.Stderr)
		}
	}
	if data, err := os.ReadFile(file); err != nil || string(data) != "1.2.3\n" {
		t.Fatalf("toolchain file after the runs: %q, %v", data, err)
	}
	if err := leftovers(); err != nil {
		t.Fatalf("left behind: %v", err)
	}
}

// TestSetupErrorSaysWhy makes bwrap's child fail to build the sandbox (a
// mount point it cannot make: /usr is bound read-only before): the error
// is bwrap's own reason, not the failure to move a dead process into the
// run's cgroup that follows.
func TestSetupErrorSaysWhy(t *testing.T) {
	b := newBackend(t)
	target := "/usr/share/coderunner-no-such-dir"
	_, err := b.Run(context.Background(), &sandbox.Spec{
		Args:   []string{"/bin/true"},
		Mounts: append(sandbox.SystemMounts(), sandbox.Mount{Source: "/etc", Target: target}),
		Limits: sandbox.Limits{WallTime: 10 * time.Second},
	})
	if !errors.Is(err, sandbox.ErrSetup) {
		t.Fatalf("err %v, want a setup error", err)
	}
	if !strings.Contains(err.Error(), "bwrap: ") || !strings.Contains(err.Error(), target) || strings.Contains(err.Error(), "cgroup") {
		t.Fatalf("err %q does not give bwrap's reason", err)
	}
	if err := leftovers(); err != nil {
		t.Fatalf("left behind: %v", err)
	}
}
