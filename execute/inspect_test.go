package execute

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

// inspecting is a fake backend that hands each run's private workspace
// back (sandbox.WorkspaceInspector): a directory of the test's where the
// spec's files are written and the step plays the program.
type inspecting struct {
	*sandboxtest.Fake
	t       *testing.T
	program func(dir string)
}

func (b *inspecting) InspectsWorkspace() bool { return true }

func (b *inspecting) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	if spec.Workspace != "" {
		return b.Fake.Run(ctx, spec)
	}
	dir := b.t.TempDir()
	for _, f := range spec.Files {
		if err := os.WriteFile(filepath.Join(dir, f.Path), f.Content, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	b.program(dir)
	res, err := b.Fake.Run(ctx, spec)
	if err == nil && spec.Inspect != nil {
		root, err := os.Open(dir)
		if err != nil {
			b.t.Fatal(err)
		}
		defer root.Close()
		spec.Inspect(root)
	}
	return res, err
}

// TestPrivateWorkspaceInspected checks that where the backend hands the
// private workspace back, an interpreted program runs there, with no host
// workspace made, and its artifacts are read from it: its own files and
// hidden ones left out, a link neither listed nor followed, a FIFO
// neither listed nor opened. A compiled program still gets a host
// workspace, where its compile step leaves it.
func TestPrivateWorkspaceInspected(t *testing.T) {
	fb := &sandboxtest.Fake{T: t, Default: sandboxtest.Returns(sandbox.Result{Status: sandbox.StatusOK})}
	be := &inspecting{Fake: fb, t: t, program: func(dir string) {
		for name, content := range map[string]string{"out.txt": "result", ".hidden": "x"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink("/etc/passwd", filepath.Join(dir, "passwd")); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
			t.Fatal(err)
		}
	}}
	tmp := t.TempDir()
	ex := New(be, testTable(t), Options{TempDir: tmp})
	res, err := ex.Execute(context.Background(), Request{Language: "script", Code: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusSuccess {
		t.Fatalf("status %s", res.Status)
	}
	specs := fb.Specs()
	if len(specs) != 1 || specs[0].Workspace != "" || specs[0].Inspect == nil {
		t.Fatalf("the run was not in the private workspace with Inspect set: %+v", specs)
	}
	var paths []string
	for _, a := range res.Artifacts {
		paths = append(paths, a.Path)
	}
	if !slices.Equal(paths, []string{"out.txt"}) {
		t.Errorf("artifacts %v, want [out.txt]", paths)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("a host workspace was made: %v", left)
	}

	// The compile step needs a host workspace.
	fb.HostWorkspace = true
	if _, err := ex.Execute(context.Background(), Request{Language: "native", Code: "x"}); err != nil {
		t.Fatal(err)
	}
	if specs = fb.Specs(); len(specs) < 2 || specs[1].Workspace == "" {
		t.Errorf("a compiled program ran without a host workspace: %+v", specs[1:])
	}
}
