package execute

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/internal/mountpoint"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

// TestGivenWorkspace checks that a caller's workspace (a session's) is used
// as is, kept after the run, and that only files new in this run are
// artifacts.
func TestGivenWorkspace(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "old.txt"), []byte("from an earlier run"), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(_ context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
		if spec.Workspace != ws {
			t.Errorf("workspace %q, want %q", spec.Workspace, ws)
		}
		if err := os.WriteFile(filepath.Join(spec.Workspace, "new.txt"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return &sandbox.Result{Status: sandbox.StatusOK}, nil
	}
	ex, _, tmp := newTest(t, write)
	res, err := ex.Execute(context.Background(), Request{Language: "script", Code: "x", Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, a := range res.Artifacts {
		paths = append(paths, a.Path)
	}
	if !slices.Equal(paths, []string{"new.txt"}) {
		t.Errorf("artifacts %v, want [new.txt]", paths)
	}
	for _, name := range []string{"old.txt", "new.txt", "main.sc"} {
		if _, err := os.Stat(filepath.Join(ws, name)); err != nil {
			t.Errorf("%s not kept in the workspace: %v", name, err)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the executor made a workspace of its own: %v", left)
	}
}

// TestOwnWorkspaceCapped attacks the workspace the executor makes for a
// run without one: it must be a tmpfs capped at the workspace size while
// the program runs (a write past the cap fails with ENOSPC, nothing
// reaches the host's disk), for the compile step and the run alike, and
// it must be gone, mount and directory, once Execute returns.
func TestOwnWorkspaceCapped(t *testing.T) {
	testutil.RequireRoot(t)
	const size = 8 << 20
	fill := func(_ context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
		if err := capws.Check(spec.Workspace, size); err != nil {
			t.Fatalf("the workspace is not capped: %v", err)
		}
		f, err := os.Create(filepath.Join(spec.Workspace, "fill"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		err = unix.Fallocate(int(f.Fd()), 0, 0, 64<<20)
		if !errors.Is(err, unix.ENOSPC) {
			t.Errorf("fallocate of 64 MiB in an 8 MiB workspace: %v, want ENOSPC", err)
		}
		if err := os.Remove(f.Name()); err != nil {
			t.Fatal(err)
		}
		return &sandbox.Result{Status: sandbox.StatusOK}, nil
	}
	fb := &sandboxtest.Fake{T: t, HostWorkspace: true, Steps: []sandboxtest.Step{fill, fill}}
	tmp := t.TempDir()
	e := New(fb, testTable(t), Options{TempDir: tmp, SandboxLimits: sandbox.Limits{WorkspaceSize: size}})
	if _, err := e.Execute(context.Background(), Request{Language: "native", Code: "x"}); err != nil {
		t.Fatal(err)
	}
	if len(fb.Specs()) != 2 || fb.Specs()[0].Workspace != fb.Specs()[1].Workspace {
		t.Fatalf("the compile step and the run do not share one workspace: %d specs", len(fb.Specs()))
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the workspace was left behind: %v", left)
	}
}

// TestWorkspaceWithoutRoot plays a process that cannot mount a capped
// workspace: an interpreted program runs in the sandbox's private
// workspace (capped by the backend) and lists no artifacts; a compiled
// one, whose compile step needs a host directory, is refused with an
// error that says why, rather than given an uncapped directory.
func TestWorkspaceWithoutRoot(t *testing.T) {
	saved := newWorkspace
	t.Cleanup(func() { newWorkspace = saved })
	newWorkspace = func(string, string, int64, int) (*capws.Dir, error) {
		return nil, fmt.Errorf("%w: not running as root", capws.ErrUnsupported)
	}
	ex, fb, tmp := newTest(t, sandboxtest.Returns(sandbox.Result{Status: sandbox.StatusOK}))
	fb.HostWorkspace = false
	res, err := ex.Execute(context.Background(), Request{Language: "script", Code: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusSuccess || len(fb.Specs()) != 1 || fb.Specs()[0].Workspace != "" || len(fb.Specs()[0].Files) != 1 {
		t.Fatalf("interpreted without root: status %s, specs %+v", res.Status, fb.Specs())
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("a host workspace was made: %v", left)
	}
	ex, fb, _ = newTest(t)
	res, err = ex.Execute(context.Background(), Request{Language: "native", Code: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusSetupError || len(fb.Specs()) != 0 || res.ErrorMessage == nil || !strings.Contains(*res.ErrorMessage, "root") {
		t.Fatalf("compiled without root: status %s, %d runs, message %v", res.Status, len(fb.Specs()), res.ErrorMessage)
	}
}

// TestStaleWorkspacesSwept: a run's tmpfs outlives a process killed
// mid-run (SIGKILL) and would hold its memory until a restart; the next
// Executor on the same directory removes it, and leaves those of live
// processes alone.
func TestStaleWorkspacesSwept(t *testing.T) {
	testutil.RequireRoot(t)
	tmp := t.TempDir()
	dead := filepath.Join(tmp, workspacePrefix+"999999999-x")
	if err := os.Mkdir(dead, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := capws.Mount(dead, 1<<20, 0); err != nil {
		t.Fatal(err)
	}
	live, err := capws.New(tmp, workspacePrefix, 1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = live.Remove() }()
	New(&sandboxtest.Fake{T: t, HostWorkspace: true}, testTable(t), Options{TempDir: tmp})
	if _, err := os.Lstat(dead); !errors.Is(err, os.ErrNotExist) {
		_ = capws.Unmount(dead)
		t.Fatalf("the workspace of a dead process is still there: %v", err)
	}
	if err := capws.Check(live.Path, 1<<20); err != nil {
		t.Fatalf("a live workspace was touched: %v", err)
	}
}

// TestKeptWorkspaceDirs runs twice with KeepWorkspaceDirs: the second run
// gets the first's directory (once it is removed, after the first's
// result), as a new tmpfs with nothing of the first run in it, and Close
// leaves nothing in the work directory.
func TestKeptWorkspaceDirs(t *testing.T) {
	testutil.RequireRoot(t)
	var seen []string
	run := func(_ context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
		seen = append(seen, spec.Workspace)
		ents, err := os.ReadDir(spec.Workspace)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.Name() != "main.sc" {
				t.Errorf("the run's workspace holds %s, left by an earlier run", e.Name())
			}
		}
		if err := capws.Check(spec.Workspace, sandbox.DefaultLimits.WorkspaceSize); err != nil {
			t.Errorf("the run's workspace: %v", err)
		}
		if err := os.WriteFile(filepath.Join(spec.Workspace, "left"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return &sandbox.Result{Status: sandbox.StatusOK}, nil
	}
	fb := &sandboxtest.Fake{T: t, HostWorkspace: true, Steps: []sandboxtest.Step{run, run}}
	tmp := t.TempDir()
	ex := New(fb, testTable(t), Options{TempDir: tmp, KeepWorkspaceDirs: true})
	for range 2 {
		if _, err := ex.Execute(context.Background(), Request{Language: "script", Code: "x"}); err != nil {
			t.Fatal(err)
		}
		ex.pending.Wait()
	}
	if len(seen) != 2 || seen[0] != seen[1] {
		t.Fatalf("the runs' workspaces were %v, want the first's directory kept for the second", seen)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 1 {
		t.Fatalf("between runs the work directory holds %v, want the one kept directory", left)
	}
	if err := ex.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("after Close the work directory holds %v", left)
	}
}

// A run's workspace is removed after its result, in the background, but
// no more than maxRemoving at once: past that a run removes its own
// before it returns. Close waits for those under way.
func TestWorkspaceRemovedAfterResult(t *testing.T) {
	testutil.RequireRoot(t)
	var workspaces []string
	run := func(_ context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
		workspaces = append(workspaces, spec.Workspace)
		return &sandbox.Result{Status: sandbox.StatusOK}, nil
	}
	fb := &sandboxtest.Fake{T: t, HostWorkspace: true, Steps: []sandboxtest.Step{run, run}}
	tmp := t.TempDir()
	ex := New(fb, testTable(t), Options{TempDir: tmp, KeepWorkspaceDirs: true})
	release := make(chan struct{})
	ex.beforeRemove = func() { <-release }
	mounted := func(i int) bool {
		m, err := mountpoint.Is(workspaces[i])
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		return m
	}

	// Every place taken: the run removes its workspace itself.
	for range maxRemoving {
		ex.removing <- struct{}{}
	}
	if _, err := ex.Execute(context.Background(), Request{Language: "script", Code: "x"}); err != nil {
		t.Fatal(err)
	}
	if mounted(0) {
		t.Fatalf("with %d removals under way, the run returned with its workspace still mounted", maxRemoving)
	}
	for range maxRemoving {
		<-ex.removing
	}

	// A place free: the run returns first, and Close waits for the removal.
	if _, err := ex.Execute(context.Background(), Request{Language: "script", Code: "x"}); err != nil {
		t.Fatal(err)
	}
	if !mounted(1) {
		t.Fatal("the run removed its workspace before it returned, with places free")
	}
	closed := make(chan error, 1)
	go func() { closed <- ex.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a workspace was being removed", err)
	default:
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if mounted(1) {
		t.Fatal("Close returned with a workspace still mounted")
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("after Close the work directory holds %v", left)
	}
}
