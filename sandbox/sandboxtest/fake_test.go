package sandboxtest_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/sandboxtest"
)

// recorder is a testing.TB that keeps the failures reported to it.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) { r.errs = append(r.errs, format) }

func TestFakeAnswers(t *testing.T) {
	boom := errors.New("boom")
	f := &sandboxtest.Fake{
		Programs: map[string]sandboxtest.Step{"/bin/cc": sandboxtest.Returns(sandbox.Result{Status: sandbox.StatusNonzeroExit, ExitCode: 2})},
		Steps:    []sandboxtest.Step{sandboxtest.Returns(sandbox.Result{Stdout: []byte("one")}), sandboxtest.Fails(boom)},
	}
	ctx := context.Background()
	var out bytes.Buffer
	res, err := f.Run(ctx, &sandbox.Spec{Args: []string{"/bin/prog"}, Stdout: &out})
	if err != nil || res.Status != sandbox.StatusOK || string(res.Stdout) != "one" || out.String() != "one" {
		t.Errorf("first step: %+v, %v, streamed %q; want ok, \"one\" in the result and streamed", res, err, out.String())
	}
	if res, err := f.Run(ctx, &sandbox.Spec{Args: []string{"/bin/cc"}}); err != nil || res.ExitCode != 2 {
		t.Errorf("program /bin/cc: %+v, %v; want its own step", res, err)
	}
	if _, err := f.Run(ctx, &sandbox.Spec{Args: []string{"/bin/prog"}}); !errors.Is(err, boom) {
		t.Errorf("second step: %v, want %v", err, boom)
	}
	if f.Runs() != 3 || f.Last().Args[0] != "/bin/prog" || f.Specs()[1].Args[0] != "/bin/cc" {
		t.Errorf("%d runs recorded: %v", f.Runs(), f.Specs())
	}

	// Past the steps, with no Default: unexpected.
	rec := &recorder{TB: t}
	f.T = rec
	if _, err := f.Run(ctx, &sandbox.Spec{Args: []string{"/bin/prog"}}); err == nil || len(rec.errs) != 1 {
		t.Errorf("unexpected run: %v, %d failures reported", err, len(rec.errs))
	}
	f.Default = sandboxtest.Returns(sandbox.Result{ExitCode: 7, Status: sandbox.StatusNonzeroExit})
	if res, err := f.Run(ctx, &sandbox.Spec{Args: []string{"/bin/prog"}}); err != nil || res.ExitCode != 7 {
		t.Errorf("default: %+v, %v", res, err)
	}
}

func TestFakeWorkspace(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "old"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f := &sandboxtest.Fake{HostWorkspace: true, Default: func(_ context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
		b, err := os.ReadFile(filepath.Join(spec.Workspace, "dir", "main.py"))
		return &sandbox.Result{Stdout: b}, err
	}}
	spec := &sandbox.Spec{Args: []string{"/bin/prog"}, Workspace: ws, Files: []sandbox.File{{Path: "dir/main.py", Content: []byte("print(1)")}}}
	res, err := f.Run(context.Background(), spec)
	if err != nil || string(res.Stdout) != "print(1)" {
		t.Fatalf("run: %+v, %v; want the file written before the step", res, err)
	}
	if got := f.Calls()[0].Workspace; !slices.Equal(got, []string{"dir", "old"}) {
		t.Errorf("workspace at the start %q, want [dir old]", got)
	}
	rec := &recorder{TB: t}
	f.T = rec
	if _, err := f.Run(context.Background(), &sandbox.Spec{Args: []string{"/bin/prog"}}); err == nil || len(rec.errs) != 1 {
		t.Errorf("run without a host workspace: %v, %d failures reported", err, len(rec.errs))
	}
}

func TestFakeBlocksAndProbes(t *testing.T) {
	f := &sandboxtest.Fake{BackendName: "native", Default: sandboxtest.Blocks}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Run(ctx, &sandbox.Spec{Args: []string{"/bin/prog"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("blocked run: %v, want context.Canceled", err)
	}
	if r := f.Probe(ctx); f.Name() != "native" || r.Backend != "native" || !r.Available {
		t.Errorf("name %q, report %+v", f.Name(), r)
	}
	f.Report = sandbox.Report{Backend: "native", Reason: "no user namespaces"}
	if r := f.Probe(ctx); r.Available || r.Reason != "no user namespaces" {
		t.Errorf("report %+v, want the one set", r)
	}
}
