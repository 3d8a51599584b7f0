package execute

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
)

// step is what the fake backend does for one Run: it may inspect the spec
// and the workspace, write files, and returns the scripted result.
type step func(t *testing.T, spec *sandbox.Spec) (*sandbox.Result, error)

// fakeBackend plays a sandbox: it writes Spec.Files into Spec.Workspace
// like a real backend, records every spec, and answers with the scripted
// steps in order.
type fakeBackend struct {
	t     *testing.T
	mu    sync.Mutex
	steps []step
	specs []*sandbox.Spec
	// seen holds the files of the workspace at the start of each run.
	seen [][]string
	// private accepts runs in the sandbox's private workspace.
	private bool
}

func (f *fakeBackend) Name() string { return "fake" }

func (f *fakeBackend) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := len(f.specs)
	f.specs = append(f.specs, spec)
	if spec.Workspace == "" {
		if !f.private {
			f.t.Fatalf("run %d: no host workspace", i)
		}
		return f.steps[i](f.t, spec)
	}
	for _, file := range spec.Files {
		p := filepath.Join(spec.Workspace, file.Path)
		if err := os.WriteFile(p, file.Content, 0o644); err != nil {
			f.t.Fatalf("run %d: %v", i, err)
		}
	}
	names, err := filepath.Glob(filepath.Join(spec.Workspace, "*"))
	if err != nil {
		f.t.Fatal(err)
	}
	for j := range names {
		names[j] = filepath.Base(names[j])
	}
	f.seen = append(f.seen, names)
	if i >= len(f.steps) {
		f.t.Fatalf("unexpected run %d: %v", i, spec.Args)
	}
	res, err := f.steps[i](f.t, spec)
	if res != nil {
		if spec.Stdout != nil {
			_, _ = spec.Stdout.Write(res.Stdout)
		}
		if spec.Stderr != nil {
			_, _ = spec.Stderr.Write(res.Stderr)
		}
	}
	return res, err
}

// returns is a step that answers res.
func returns(res sandbox.Result) step {
	return func(*testing.T, *sandbox.Spec) (*sandbox.Result, error) { return &res, nil }
}

// testTable holds languages whose toolchain needs nothing from the host, so
// that these tests run anywhere: "script" is interpreted, "native" is
// compiled, "ghost" has a toolchain that does not exist.
func testTable(t *testing.T) *lang.Table {
	t.Helper()
	tab, err := lang.New(map[string]lang.Recipe{
		"script": {
			Aliases:    []string{"sc"},
			Extensions: []string{".sc"},
			Source:     "main.sc",
			Run:        []string{"/usr/bin/script-interp", "-q", "{source}"},
			Env:        []string{"PATH=/opt/script/bin:/usr/bin", "SCRIPT_MODE=safe"},
			Mounts:     []lang.RecipeMount{{Source: "/", Target: "/opt/script"}},
		},
		"native": {
			Compiled: true,
			Source:   "prog.nc",
			Compile:  []string{"/usr/bin/ncc", "-m{memory_mb}", "-o", "{binary}", "{source}"},
			Run:      []string{"{binary}", "--mem={memory_mb}"},
		},
		"ghost": {
			Source:    "main.gh",
			Run:       []string{"{tool}", "{source}"},
			Toolchain: lang.Discovery{Paths: []string{"/nonexistent/coderunner-ghost"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// newTest returns an executor over a fake backend answering steps, with
// its workspaces under a test directory.
func newTest(t *testing.T, steps ...step) (*Executor, *fakeBackend, string) {
	t.Helper()
	fb := &fakeBackend{t: t, steps: steps}
	tmp := t.TempDir()
	return New(fb, testTable(t), Options{TempDir: tmp}), fb, tmp
}
