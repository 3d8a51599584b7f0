package invoke

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
)

// hostBackend runs a spec's program directly on the host, with the
// workspace and the toolchain mounts mapped back to host paths. It has no
// isolation at all: it lets the wrappers be tested where no sandbox works.
type hostBackend struct{}

func (hostBackend) Name() string { return "host" }

func (hostBackend) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	for _, f := range spec.Files {
		p := filepath.Join(spec.Workspace, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, f.Content, 0o644); err != nil {
			return nil, err
		}
	}
	hostPath := func(a string) string {
		if a == sandbox.WorkspaceDir || strings.HasPrefix(a, sandbox.WorkspaceDir+"/") {
			return spec.Workspace + strings.TrimPrefix(a, sandbox.WorkspaceDir)
		}
		for _, m := range spec.Mounts {
			t := m.TargetPath()
			if t != m.Source && (a == t || strings.HasPrefix(a, t+"/")) {
				return m.Source + strings.TrimPrefix(a, t)
			}
		}
		return a
	}
	args := make([]string, len(spec.Args))
	for i, a := range spec.Args {
		args[i] = hostPath(a)
	}
	ctx, cancel := context.WithTimeout(ctx, spec.Limits.WallTime)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = spec.Workspace
	cmd.Env = spec.Env
	cmd.Stdin = spec.Stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	res := &sandbox.Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), WallTime: time.Since(start), Status: sandbox.StatusOK}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		res.Status, res.ExitCode, res.TimeLimit = sandbox.StatusTimeLimit, -1, "wall"
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			res.Status, res.ExitCode, res.Signal = sandbox.StatusSignaled, -1, ws.Signal()
		} else {
			res.Status, res.ExitCode = sandbox.StatusNonzeroExit, ws.ExitStatus()
		}
	case err != nil:
		return nil, err
	}
	return res, nil
}

// scripted is a backend that returns a fixed result, or err, and records
// the spec it got.
type scripted struct {
	res  *sandbox.Result
	err  error
	spec *sandbox.Spec
	// block makes Run wait for its context.
	block bool
}

func (s *scripted) Name() string { return "scripted" }

func (s *scripted) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	s.spec = spec
	if s.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if s.err != nil {
		return nil, s.err
	}
	r := *s.res
	return &r, nil
}

// requireToolchain skips a test whose language has no toolchain here.
func requireToolchain(t *testing.T, id string) {
	t.Helper()
	l, err := lang.Default().Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	tc := l.Discover(context.Background())
	testutil.Require(t, tc.Available, id+" is not available here: "+tc.Reason)
}
