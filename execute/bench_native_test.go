package execute_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/testutil"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/runner"
	"github.com/coderunner/coderunner/sandbox/native"
)

// BenchmarkExecuteBashTrue is /v1/run's work for a trivial bash script
// without the HTTP layer, with the executor set up as serve's is: the
// language checked, the script sent with the run, the native sandbox's
// run in its private workspace, which comes back to list the artifacts.
func BenchmarkExecuteBashTrue(b *testing.B) {
	be, err := native.New(native.Options{Warm: 2})
	if err != nil {
		b.Skipf("native backend unavailable: %v", err)
	}
	defer be.Close()
	e := execute.New(be, lang.Default(), execute.Options{TempDir: b.TempDir(), KeepWorkspaceDirs: true})
	req := execute.Request{Language: "bash", Code: "true"}
	for b.Loop() {
		res, err := e.Execute(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if res.Status != "success" {
			b.Fatalf("status %s: %s", res.Status, res.Stderr)
		}
	}
}

// BenchmarkMatplotlibPlot is a one-shot plotting script on the native
// backend, `plt.plot(...); plt.savefig(...)`, without and with the
// Python runs' /tmp seed (matplotlib's font list built once, copied into
// each run): the medians of each run's CPU time and of its wall time are
// reported as cpu-ms and wall-ms. The first run of each is a warm-up.
//
//	go test -run '^$' -bench MatplotlibPlot -benchtime 8x ./execute
func BenchmarkMatplotlibPlot(b *testing.B) {
	testutil.RequirePythonModule(b, "matplotlib")
	req := execute.Request{Language: "python", Code: "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.savefig('out.png')\n",
		Limits: execute.ExecutionLimits{TimeLimit: 60}}
	for _, seeded := range []bool{false, true} {
		name := "font-list-built-in-each-run"
		if seeded {
			name = "font-list-seeded"
		}
		b.Run(name, func(b *testing.B) {
			// A backend of its own: the seeds are per backend.
			be, err := native.New(native.Options{Warm: 1})
			if err != nil {
				b.Fatalf("native backend unavailable: %v", err)
			}
			defer be.Close()
			if seeded {
				if err := runner.NewBuilder(be, lang.Default(), runner.BuilderOptions{}).PrepareSeeds(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			e := execute.New(be, lang.Default(), execute.Options{TempDir: b.TempDir(), KeepWorkspaceDirs: true})
			run := func() (cpu, wall time.Duration) {
				start := time.Now()
				res, err := e.Execute(context.Background(), req)
				if err != nil {
					b.Fatal(err)
				}
				if res.Status != execute.StatusSuccess || len(res.Artifacts) != 1 {
					b.Fatalf("status %s, artifacts %v: %s", res.Status, res.Artifacts, res.Stderr)
				}
				return time.Duration(res.ResourceUsage.CPUTimeSeconds * float64(time.Second)), time.Since(start)
			}
			run()
			var cpus, walls []time.Duration
			for b.Loop() {
				cpu, wall := run()
				cpus, walls = append(cpus, cpu), append(walls, wall)
			}
			median := func(d []time.Duration) float64 {
				slices.Sort(d)
				return float64(d[len(d)/2]) / float64(time.Millisecond)
			}
			b.ReportMetric(median(cpus), "cpu-ms")
			b.ReportMetric(median(walls), "wall-ms")
		})
	}
}
