package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

// Step answers one run of a Fake: it may look at the spec and the host
// workspace, write files there, and returns the run's result or the
// sandbox's error.
type Step func(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error)

// Fake is a sandbox.Backend for the tests of the layers above the
// sandbox: it isolates nothing and runs nothing unless a Step does.
// Like a real backend, it writes the spec's files into a host workspace
// before the run, and sends the result's output to Spec.Stdout and
// Spec.Stderr when they are set. It records every run.
//
// A run is answered by the Step of Programs named by its Args[0] when
// there is one, else by the next of Steps, else by Default. A run none
// of them answers is unexpected: it fails T, when set, and returns an
// error. A Step's result with no Status is StatusOK.
//
// Its fields are not guarded: set them while no run is under way. Runs
// may be concurrent.
type Fake struct {
	// BackendName is what Name returns; empty means "fake".
	BackendName string
	// Programs answer the runs of the program named by their key
	// (Spec.Args[0]), as many as there are.
	Programs map[string]Step
	// Steps answer the other runs, one each, in order.
	Steps []Step
	// Default answers the runs past Steps.
	Default Step
	// HostWorkspace makes a run without a host workspace (one in the
	// sandbox's private workspace) unexpected.
	HostWorkspace bool
	// NoTmpFiles makes the Fake say it places no TmpFiles, as docker.
	NoTmpFiles bool
	// Report is what Probe returns. Its zero value stands for an
	// available backend named as Name says, with no checks.
	Report sandbox.Report
	// T, when set, fails on unexpected runs and on files that cannot be
	// written.
	T testing.TB

	mu    sync.Mutex
	calls []Call
	steps int
}

// Call is one run a Fake was asked for.
type Call struct {
	// Spec is the spec as the caller gave it.
	Spec *sandbox.Spec
	// Workspace names the entries of the host workspace when the program
	// started (the spec's files written), sorted; nil without a host
	// workspace.
	Workspace []string
}

var (
	_ sandbox.Backend  = (*Fake)(nil)
	_ sandbox.Prober   = (*Fake)(nil)
	_ sandbox.TmpFiler = (*Fake)(nil)
)

// PlacesTmpFiles reports true unless NoTmpFiles is set: a run's TmpFiles
// are recorded with its spec, as the caller gave them.
func (f *Fake) PlacesTmpFiles() bool { return !f.NoTmpFiles }

// Name returns BackendName, or "fake".
func (f *Fake) Name() string {
	if f.BackendName == "" {
		return "fake"
	}
	return f.BackendName
}

// Probe returns Report; its zero value stands for an available backend.
func (f *Fake) Probe(context.Context) sandbox.Report {
	r := f.Report
	if r.Backend == "" && !r.Available && r.Reason == "" && r.Checks == nil && r.Warnings == nil {
		r = sandbox.Report{Backend: f.Name(), Available: true}
	}
	return r
}

// Run records spec, writes its files into its host workspace and answers
// with the Step the run falls to.
func (f *Fake) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	call := Call{Spec: spec}
	if spec.Workspace != "" {
		names, err := writeFiles(spec)
		if err != nil {
			return nil, f.fail("run %v: %w", spec.Args, err)
		}
		call.Workspace = names
	}
	f.mu.Lock()
	n := len(f.calls)
	f.calls = append(f.calls, call)
	var step Step
	switch {
	case spec.Workspace == "" && f.HostWorkspace:
	case len(spec.Args) > 0 && f.Programs[spec.Args[0]] != nil:
		step = f.Programs[spec.Args[0]]
	case f.steps < len(f.Steps):
		step = f.Steps[f.steps]
		f.steps++
	default:
		step = f.Default
	}
	f.mu.Unlock()
	if step == nil {
		if spec.Workspace == "" && f.HostWorkspace {
			return nil, f.fail("run %d %v: no host workspace", n, spec.Args)
		}
		return nil, f.fail("unexpected run %d: %v", n, spec.Args)
	}
	res, err := step(ctx, spec)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, f.fail("run %d %v: the step returned no result and no error", n, spec.Args)
	}
	if res.Status == "" {
		res.Status = sandbox.StatusOK
	}
	if spec.Stdout != nil {
		_, _ = spec.Stdout.Write(res.Stdout)
	}
	if spec.Stderr != nil {
		_, _ = spec.Stderr.Write(res.Stderr)
	}
	return res, nil
}

// fail reports an error to T, when set, and returns it.
func (f *Fake) fail(format string, args ...any) error {
	err := fmt.Errorf("sandboxtest: "+format, args...)
	if f.T != nil {
		f.T.Errorf("%v", err)
	}
	return err
}

// Calls returns the runs so far, in the order they started.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Specs returns the specs of the runs so far, in the order they started.
func (f *Fake) Specs() []*sandbox.Spec {
	f.mu.Lock()
	defer f.mu.Unlock()
	specs := make([]*sandbox.Spec, len(f.calls))
	for i, c := range f.calls {
		specs[i] = c.Spec
	}
	return specs
}

// Last returns the spec of the latest run, or nil before the first.
func (f *Fake) Last() *sandbox.Spec {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		return nil
	}
	return f.calls[len(f.calls)-1].Spec
}

// Runs returns how many runs the Fake was asked for.
func (f *Fake) Runs() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// writeFiles writes spec's files into its host workspace, as a backend
// does, and lists what the workspace then holds.
func writeFiles(spec *sandbox.Spec) ([]string, error) {
	root, err := os.OpenRoot(spec.Workspace)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	for _, file := range spec.Files {
		if dir := filepath.Dir(file.Path); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
		}
		mode := file.Mode
		if mode == 0 {
			mode = 0o644
		}
		if err := root.WriteFile(file.Path, file.Content, mode); err != nil {
			return nil, err
		}
	}
	entries, err := os.ReadDir(spec.Workspace)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

// Returns is a Step that answers every run it is given with a copy of
// res.
func Returns(res sandbox.Result) Step {
	return func(context.Context, *sandbox.Spec) (*sandbox.Result, error) {
		r := res
		return &r, nil
	}
}

// Fails is a Step that fails every run it is given with err, as a broken
// sandbox does.
func Fails(err error) Step {
	return func(context.Context, *sandbox.Spec) (*sandbox.Result, error) { return nil, err }
}

// Blocks is a Step that waits for the run's context to end and returns
// its error: a program that runs until it is cancelled.
func Blocks(ctx context.Context, _ *sandbox.Spec) (*sandbox.Result, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// OnHost is a Step that runs the spec's program directly on the host,
// with no isolation at all, mapping the workspace and the toolchain
// mounts back to their host paths: it lets what a program does be tested
// where no sandbox works. Its files must be in a host workspace. The
// wall-time limit holds; no other does.
func OnHost(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	if spec.Workspace == "" || len(spec.Args) == 0 {
		return nil, errors.New("sandboxtest: a run on the host needs a host workspace and a program")
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
	if spec.Limits.WallTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, spec.Limits.WallTime)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...) //nolint:gosec // a test's own program
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
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Status, res.ExitCode, res.Signal = sandbox.StatusSignaled, -1, ws.Signal()
		} else {
			res.Status, res.ExitCode = sandbox.StatusNonzeroExit, ee.ExitCode()
		}
	case err != nil:
		return nil, err
	}
	return res, nil
}
