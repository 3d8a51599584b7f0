package native_test

import (
	"context"
	"os/exec"
	"testing"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/native"
)

// The benchmarks run each program in the sandbox next to a bare fork/exec
// of the same program, so that the overhead can be read as a difference
// measured on the same machine at the same time. tools/sandboxbench gives
// percentiles and concurrency.

func benchSandbox(b *testing.B, warm int, args ...string) {
	be, err := native.New(native.Options{Warm: warm})
	if err != nil {
		b.Skipf("native backend unavailable: %v", err)
	}
	defer be.Close()
	spec := &sandbox.Spec{Args: args, Mounts: native.BaseMounts()}
	for b.Loop() {
		res, err := be.Run(context.Background(), spec)
		if err != nil {
			b.Fatal(err)
		}
		if res.Status != sandbox.StatusOK {
			b.Fatalf("status %s: %s", res.Status, res.Stderr)
		}
	}
}

func benchBare(b *testing.B, args ...string) {
	for b.Loop() {
		if err := exec.Command(args[0], args[1:]...).Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTrueBare(b *testing.B)    { benchBare(b, "/bin/true") }
func BenchmarkTrueSandbox(b *testing.B) { benchSandbox(b, 0, "/bin/true") }
func BenchmarkTrueWarm(b *testing.B)    { benchSandbox(b, 2, "/bin/true") }
func BenchmarkPythonBare(b *testing.B)  { benchBare(b, "/usr/bin/python3", "-c", "print('hi')") }
func BenchmarkPythonSandbox(b *testing.B) {
	benchSandbox(b, 0, "/usr/bin/python3", "-c", "print('hi')")
}
func BenchmarkPythonWarm(b *testing.B) { benchSandbox(b, 2, "/usr/bin/python3", "-c", "print('hi')") }

// BenchmarkTrueSeries runs /bin/true again and again in one series: each
// run after the first is served by the kept sandbox of the one before.
func BenchmarkTrueSeries(b *testing.B) {
	be, err := native.New(native.Options{})
	if err != nil {
		b.Skipf("native backend unavailable: %v", err)
	}
	defer be.Close()
	ser := be.Series()
	defer ser.Close()
	spec := &sandbox.Spec{Args: []string{"/bin/true"}, Mounts: native.BaseMounts()}
	for b.Loop() {
		res, err := ser.Run(context.Background(), spec)
		if err != nil {
			b.Fatal(err)
		}
		if res.Status != sandbox.StatusOK {
			b.Fatalf("status %s: %s", res.Status, res.Stderr)
		}
	}
}

// BenchmarkTrueWarmHostWorkspace runs /bin/true with a warm pool and a
// host workspace capped by capws, as /v1/run, MCP's execute_code and the
// Go API do; BenchmarkTrueSandboxHostWorkspace is the same without a pool.
func BenchmarkTrueWarmHostWorkspace(b *testing.B)    { benchHostWorkspace(b, 2) }
func BenchmarkTrueSandboxHostWorkspace(b *testing.B) { benchHostWorkspace(b, 0) }

func benchHostWorkspace(b *testing.B, warm int) {
	if !capws.Supported() {
		b.Skip("a capped host workspace needs root")
	}
	be, err := native.New(native.Options{Warm: warm})
	if err != nil {
		b.Skipf("native backend unavailable: %v", err)
	}
	defer be.Close()
	for b.Loop() {
		// A fresh workspace per run, as its callers make one, mounted
		// after the warm sandboxes started.
		b.StopTimer()
		ws, err := capws.New("", "bench-ws-", sandbox.DefaultLimits.WorkspaceSize, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		spec := &sandbox.Spec{Args: []string{"/bin/true"}, Mounts: native.BaseMounts(), Workspace: ws.Path}
		res, err := be.Run(context.Background(), spec)
		b.StopTimer()
		_ = ws.Remove()
		b.StartTimer()
		if err != nil {
			b.Fatal(err)
		}
		if res.Status != sandbox.StatusOK {
			b.Fatalf("status %s: %s", res.Status, res.Stderr)
		}
	}
}
