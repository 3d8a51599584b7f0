package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

// tmpSeedBuilder is a Builder on a fake backend whose seed runs (python's
// toolchain, run with "-c") answer with out, and whose other runs
// succeed.
func tmpSeedBuilder(t *testing.T, out string) (*Builder, *sandboxtest.Fake, *lang.Language) {
	t.Helper()
	langs := lang.Default()
	py, _ := langs.Lookup("python")
	be := &sandboxtest.Fake{T: t, Default: func(_ context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
		if slices.Contains(spec.Args, "-c") {
			return &sandbox.Result{Status: sandbox.StatusOK, Stdout: []byte(out)}, nil
		}
		return &sandbox.Result{Status: sandbox.StatusOK}, nil
	}}
	b := NewBuilder(be, langs, BuilderOptions{})
	err := b.Check(context.Background(), py)
	testutil.Require(t, err == nil, fmt.Sprintf("no Python: %v", err))
	return b, be, py
}

func runSpec(t *testing.T, b *Builder, l *lang.Language) *sandbox.Spec {
	t.Helper()
	p, _, err := b.Build(context.Background(), l, "print(1)", BuildOptions{Workspace: "/host/ws",
		Options: judge.ProgramOptions{Env: map[string]string{"SECRET_OF_THE_REQUEST": "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	return p.Spec(nil, sandbox.Limits{})
}

// TestTmpSeed: matplotlib's font list is built once per backend, by a run
// of the recipe's command with nothing of a request in it, and every run
// that starts afterwards, of either Python, finds a copy in its /tmp.
func TestTmpSeed(t *testing.T) {
	b, be, py := tmpSeedBuilder(t, "fontlist-v330.json\n{\"_version\": 330}\n")
	if spec := runSpec(t, b, py); spec.TmpFiles != nil {
		t.Fatalf("a run before the seed was built has TmpFiles %v", spec.TmpFiles)
	}
	if err := b.PrepareSeeds(context.Background()); err != nil {
		t.Fatal(err)
	}
	var seedRuns []*sandbox.Spec
	for _, c := range be.Calls() {
		if slices.Contains(c.Spec.Args, "-c") {
			seedRuns = append(seedRuns, c.Spec)
		}
	}
	if len(seedRuns) != 1 {
		for _, r := range seedRuns {
			t.Logf("%q %q", r.Args, r.Env)
		}
		t.Fatalf("%d seed runs for python and python3, want one", len(seedRuns))
	}
	sr := seedRuns[0]
	if sr.Workspace != "" || len(sr.Files) != 0 || sr.TmpFiles != nil || sr.Stdin != nil ||
		!slices.Contains(sr.Env, "MPLCONFIGDIR=/tmp/matplotlib") || strings.Contains(strings.Join(sr.Env, " "), "SECRET") {
		t.Errorf("the seed run: %+v", sr)
	}
	want := []sandbox.File{{Path: "matplotlib/fontlist-v330.json", Content: []byte("{\"_version\": 330}\n"), Mode: 0o644}}
	py3, _ := b.langs.Lookup("python3")
	for _, l := range []*lang.Language{py, py3} {
		spec := runSpec(t, b, l)
		if len(spec.TmpFiles) != 1 || spec.TmpFiles[0].Path != want[0].Path || string(spec.TmpFiles[0].Content) != string(want[0].Content) {
			t.Errorf("%s: TmpFiles %v", l.ID, spec.TmpFiles)
		}
	}
	// Another Builder on the same backend (the judge's, the invoker's)
	// finds it built.
	runs := be.Runs()
	other := NewBuilder(be, b.langs, BuilderOptions{})
	if err := other.PrepareSeeds(context.Background()); err != nil || be.Runs() != runs {
		t.Errorf("a second PrepareSeeds: %v, %d more runs", err, be.Runs()-runs)
	}
	if spec := runSpec(t, other, py); len(spec.TmpFiles) != 1 {
		t.Errorf("the other builder's run has TmpFiles %v", spec.TmpFiles)
	}
	// A language without a seed gets none.
	c, _ := b.langs.Lookup("bash")
	if files := b.tmpFiles(c); files != nil {
		t.Errorf("bash: %v", files)
	}
}

// TestTmpSeedRefused: a seed command's output that is not a plain file
// name and a bounded content, or a seed run that fails, gives the runs
// no seed and PrepareSeeds an error naming the language.
func TestTmpSeedRefused(t *testing.T) {
	for _, tc := range []struct{ name, out, want string }{
		{"no name", "{}", "no file name"},
		{"empty name", "\n{}", "not a plain file name"},
		{"a path", "../../etc/passwd\nx", "not a plain file name"},
		{"a directory", "a/b\nx", "not a plain file name"},
		{"hidden", ".bashrc\nx", "not a plain file name"},
		{"dot dot", "..\nx", "not a plain file name"},
		{"too large", "f.json\n" + strings.Repeat("x", maxTmpSeedBytes+1), "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _, py := tmpSeedBuilder(t, tc.out)
			err := b.PrepareSeeds(context.Background())
			if err == nil || !strings.Contains(err.Error(), "python") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("PrepareSeeds: %v, want an error with %q", err, tc.want)
			}
			if spec := runSpec(t, b, py); spec.TmpFiles != nil {
				t.Errorf("TmpFiles %v", spec.TmpFiles)
			}
		})
	}
	t.Run("failed", func(t *testing.T) {
		langs := lang.Default()
		py, _ := langs.Lookup("python")
		be := &sandboxtest.Fake{T: t, Default: sandboxtest.Returns(sandbox.Result{Status: sandbox.StatusNonzeroExit, ExitCode: 1,
			Stdout: []byte("fontlist.json\n{}"), Stderr: []byte("ModuleNotFoundError: No module named 'matplotlib'")})}
		b := NewBuilder(be, langs, BuilderOptions{})
		testutil.Require(t, b.Check(context.Background(), py) == nil, "no Python")
		if err := b.PrepareSeeds(context.Background()); err == nil || !strings.Contains(err.Error(), "No module named 'matplotlib'") {
			t.Errorf("PrepareSeeds: %v", err)
		}
		if files := b.tmpFiles(py); files != nil {
			t.Errorf("TmpFiles %v", files)
		}
	})
}

// TestTmpSeedNotOnDocker: a backend that places no TmpFiles builds no
// seed and gets none.
func TestTmpSeedNotOnDocker(t *testing.T) {
	langs := lang.Default()
	py, _ := langs.Lookup("python")
	fake := &sandboxtest.Fake{T: t, NoTmpFiles: true, Default: sandboxtest.Returns(sandbox.Result{Status: sandbox.StatusOK, Stdout: []byte("f.json\n{}")})}
	b := NewBuilder(fake, langs, BuilderOptions{})
	testutil.Require(t, b.Check(context.Background(), py) == nil, "no Python")
	if err := b.PrepareSeeds(context.Background()); err != nil || fake.Runs() != 0 {
		t.Errorf("PrepareSeeds: %v after %d runs", err, fake.Runs())
	}
	if spec := runSpec(t, b, py); spec.TmpFiles != nil {
		t.Errorf("TmpFiles %v", spec.TmpFiles)
	}
}
