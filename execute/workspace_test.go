package execute

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/coderunner/coderunner/sandbox"
)

// TestGivenWorkspace checks that a caller's workspace (a session's) is used
// as is, kept after the run, and that only files new in this run are
// artifacts.
func TestGivenWorkspace(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "old.txt"), []byte("from an earlier run"), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(t *testing.T, spec *sandbox.Spec) (*sandbox.Result, error) {
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
