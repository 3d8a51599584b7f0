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

// TestBuildInWorkspace checks the cache-free path every single-run front
// end takes: the compile step runs in the caller's workspace with the one
// set of compile limits and the language's compile environment (no seeded
// build cache), and the program then runs in that workspace.
func TestBuildInWorkspace(t *testing.T) {
	langs := lang.Default()
	golang, _ := langs.Lookup("go")
	err := NewBuilder(compiler(nil), langs, BuilderOptions{}).Check(context.Background(), golang)
	testutil.Require(t, err == nil, fmt.Sprintf("no Go toolchain: %v", err))
	be := &sandboxtest.Fake{T: t, Steps: []sandboxtest.Step{
		compile(func(spec *sandbox.Spec) error { return writeBinary(spec.Workspace) }),
		sandboxtest.Returns(sandbox.Result{Status: sandbox.StatusNonzeroExit, ExitCode: 1, Stderr: []byte("syntax error")}),
	}}
	b := NewBuilder(be, langs, BuilderOptions{CompileLimits: sandbox.Limits{WorkspaceSize: 8 * sandbox.MiB}})
	ws := t.TempDir()
	p, cr, err := b.Build(context.Background(), golang, "package main\nfunc main() {}\n", BuildOptions{Workspace: ws, SampleInterval: 7})
	if err != nil || p == nil || cr == nil || cr.Status != sandbox.StatusOK {
		t.Fatalf("Build = %v, %v, %v", p, cr, err)
	}
	compile := be.Last()
	if compile.Workspace != ws || compile.SampleInterval != 7 || compile.Limits != b.CompileLimits() {
		t.Errorf("compile spec: workspace %q, sample interval %v, limits %+v", compile.Workspace, compile.SampleInterval, compile.Limits)
	}
	if compile.Limits.Processes != DefaultCompileLimits.Processes || compile.Limits.WorkspaceSize != 8*sandbox.MiB {
		t.Errorf("compile limits %+v", compile.Limits)
	}
	if !slices.Contains(compile.Env, "GOPROXY=off") || !slices.Contains(compile.Env, "GOCACHE=/tmp/gocache") {
		t.Errorf("compile env %q: want the recipe's compile_env and its own GOCACHE", compile.Env)
	}
	if !p.Compiled() {
		t.Error("a compiled program does not say so")
	}
	spec := p.Spec([]byte("in"), sandbox.Limits{Memory: 64 * sandbox.MiB})
	if spec.Workspace != ws || len(spec.Files) != 0 || !slices.Equal(spec.Args, []string{"/workspace/main"}) || spec.Stdin == nil {
		t.Errorf("run spec: workspace %q, files %v, args %q", spec.Workspace, spec.Files, spec.Args)
	}
	if slices.Contains(spec.Env, "GOPROXY=off") {
		t.Errorf("run env %q has the compile step's entries", spec.Env)
	}

	// A failed compile step (the second step) gives its result and no
	// program.
	p, cr, err = b.Build(context.Background(), golang, "package main\nfunc", BuildOptions{Workspace: t.TempDir()})
	if err != nil || p != nil || cr == nil || string(cr.Stderr) != "syntax error" {
		t.Errorf("failed Build = %v, %v, %v", p, cr, err)
	}
	// A compiled language needs a host workspace to come back through.
	if _, _, err := b.Build(context.Background(), golang, "package main", BuildOptions{}); err == nil {
		t.Error("Build of a compiled language without a workspace succeeded")
	}
}

// TestBuildInterpreted: the source is a file of each run, in the caller's
// workspace, and nothing runs at build time.
func TestBuildInterpreted(t *testing.T) {
	langs := lang.Default()
	py, _ := langs.Lookup("python")
	be := compiler(nil)
	b := NewBuilder(be, langs, BuilderOptions{})
	err := b.Check(context.Background(), py)
	testutil.Require(t, err == nil, fmt.Sprintf("no Python: %v", err))
	p, cr, err := b.Build(context.Background(), py, "print(1)", BuildOptions{Workspace: "/host/ws"})
	if err != nil || cr != nil || p == nil || be.Runs() != 0 {
		t.Fatalf("Build = %v, %v, %v after %d runs", p, cr, err, be.Runs())
	}
	spec := p.Spec(nil, sandbox.Limits{})
	if spec.Workspace != "/host/ws" || len(spec.Files) != 1 || spec.Files[0].Path != "main.py" || spec.Args[len(spec.Args)-1] != "/workspace/main.py" {
		t.Errorf("run spec: workspace %q, files %v, args %q", spec.Workspace, spec.Files, spec.Args)
	}
	if p.Compiled() || p.Source() != "/workspace/main.py" {
		t.Errorf("compiled %v, source %q", p.Compiled(), p.Source())
	}
}

// TestThreadCountsInTheRunEnvironment: a Python run tells numpy's BLAS
// and OpenMP its CPU allowance (1 for the default half core, 2 for two
// cores), unless the request sets a count itself, whose value is then
// the only one in the environment.
func TestThreadCountsInTheRunEnvironment(t *testing.T) {
	langs := lang.Default()
	py, _ := langs.Lookup("python")
	b := NewBuilder(compiler(nil), langs, BuilderOptions{})
	err := b.Check(context.Background(), py)
	testutil.Require(t, err == nil, fmt.Sprintf("no Python: %v", err))
	count := func(env []string, name string) []string {
		var out []string
		for _, kv := range env {
			if strings.HasPrefix(kv, name+"=") {
				out = append(out, kv)
			}
		}
		return out
	}
	p, _, err := b.Build(context.Background(), py, "print(1)", BuildOptions{Workspace: "/host/ws"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		limits sandbox.Limits
		want   string
	}{{sandbox.Limits{}, "1"}, {sandbox.Limits{CPUs: 2}, "2"}} {
		env := p.Spec(nil, tc.limits).Env
		for _, name := range py.ThreadEnv {
			if got := count(env, name); !slices.Equal(got, []string{name + "=" + tc.want}) {
				t.Errorf("%+v: %s is %q, want %s", tc.limits, name, got, tc.want)
			}
		}
		if !slices.Contains(env, "MPLBACKEND=Agg") {
			t.Errorf("%+v: env %q without the recipe's own", tc.limits, env)
		}
	}
	p, _, err = b.Build(context.Background(), py, "print(1)", BuildOptions{Workspace: "/host/ws",
		Options: judge.ProgramOptions{Env: map[string]string{"OPENBLAS_NUM_THREADS": "3"}}})
	if err != nil {
		t.Fatal(err)
	}
	env := p.Spec(nil, sandbox.Limits{CPUs: 2}).Env
	if got := count(env, "OPENBLAS_NUM_THREADS"); !slices.Equal(got, []string{"OPENBLAS_NUM_THREADS=3"}) {
		t.Errorf("the request's count: %q", got)
	}
	if got := count(env, "OMP_NUM_THREADS"); !slices.Equal(got, []string{"OMP_NUM_THREADS=2"}) {
		t.Errorf("a count the request left: %q", got)
	}
	// matplotlib's variables stay the recipe's.
	_, _, err = b.Build(context.Background(), py, "print(1)", BuildOptions{Workspace: "/host/ws",
		Options: judge.ProgramOptions{Env: map[string]string{"MPLCONFIGDIR": "/workspace"}}})
	if err == nil {
		t.Error("a request's MPLCONFIGDIR was taken")
	}
}
