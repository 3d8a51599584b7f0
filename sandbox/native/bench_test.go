package native_test

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

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

// The host-workspace benchmarks run /bin/true as /v1/run, MCP's
// execute_code and the Go API do: with a new host workspace capped by
// capws, mounted after the warm sandboxes started, made and removed
// outside the timed run. A pause of 20 ms between runs (not timed) lets
// the pool refill, as between a server's requests; each reports its
// median (p50-ms) next to the mean. BenchmarkTrueWarmGap and
// BenchmarkTrueBareGap are the same without a workspace, and bare.
func BenchmarkTrueWarmHostWorkspace(b *testing.B) {
	benchGap(b, native.Options{Warm: 2}, true)
}

// BenchmarkTrueWarmHostWorkspaceBound binds the workspace out of a new
// sandbox's copy of the host's tree, the path where its mount cannot be
// sent to a warm sandbox.
func BenchmarkTrueWarmHostWorkspaceBound(b *testing.B) {
	benchGap(b, native.WithoutAttach(native.Options{Warm: 2}), true)
}

func BenchmarkTrueWarmGap(b *testing.B) { benchGap(b, native.Options{Warm: 2}, false) }

func BenchmarkTrueBareGap(b *testing.B) {
	var lat []time.Duration
	for b.Loop() {
		b.StopTimer()
		time.Sleep(20 * time.Millisecond)
		b.StartTimer()
		t := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
	}
	reportMedian(b, lat)
}

func benchGap(b *testing.B, opts native.Options, hostWorkspace bool) {
	if hostWorkspace && !capws.Supported() {
		b.Skip("a capped host workspace needs root")
	}
	be, err := native.New(opts)
	if err != nil {
		b.Skipf("native backend unavailable: %v", err)
	}
	defer be.Close()
	var lat []time.Duration
	for b.Loop() {
		b.StopTimer()
		time.Sleep(20 * time.Millisecond)
		spec := &sandbox.Spec{Args: []string{"/bin/true"}, Mounts: native.BaseMounts()}
		var ws *capws.Dir
		if hostWorkspace {
			ws, err = capws.New("", "bench-ws-", sandbox.DefaultLimits.WorkspaceSize, 0)
			if err != nil {
				b.Fatal(err)
			}
			spec.Workspace = ws.Path
		}
		b.StartTimer()
		t := time.Now()
		res, err := be.Run(context.Background(), spec)
		lat = append(lat, time.Since(t))
		b.StopTimer()
		if ws != nil {
			_ = ws.Remove()
		}
		b.StartTimer()
		if err != nil {
			b.Fatal(err)
		}
		if res.Status != sandbox.StatusOK {
			b.Fatalf("status %s: %s", res.Status, res.Stderr)
		}
	}
	reportMedian(b, lat)
}

func reportMedian(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
}
