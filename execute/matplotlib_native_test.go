package execute_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/testutil"
)

// TestMatplotlibArtifactNative: a script that saves a figure of the real
// matplotlib gets it back as its one artifact, a PNG, with nothing on
// stderr and nothing of matplotlib's (its font cache) among the
// workspace's files.
func TestMatplotlibArtifactNative(t *testing.T) {
	testutil.RequirePythonModule(t, "matplotlib")
	e := nativeExecutor(t)
	code := "import os\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.savefig('out.png')\n" +
		"print(sorted(os.listdir('.')))\n"
	res, err := e.Execute(context.Background(), execute.Request{Language: "python", Code: code,
		// Importing matplotlib takes a second or more of CPU (its font
		// cache, built anew in each run's /tmp): time to spare.
		Limits:    execute.ExecutionLimits{TimeLimit: 120},
		Artifacts: execute.ArtifactOptions{IncludeContent: true, MaxBytes: 4 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != execute.StatusSuccess || res.Stderr != "" {
		t.Fatalf("status %s stderr %q", res.Status, res.Stderr)
	}
	// Hidden files are no artifacts: the listing shows them.
	if res.Stdout != "['main.py', 'out.png']\n" {
		t.Fatalf("the workspace holds %s", res.Stdout)
	}
	if len(res.Artifacts) != 1 || res.Artifacts[0].Path != "out.png" || res.Artifacts[0].Content == nil {
		t.Fatalf("artifacts %+v", res.Artifacts)
	}
	png, err := base64.StdEncoding.DecodeString(*res.Artifacts[0].Content)
	if err != nil || !strings.HasPrefix(string(png), "\x89PNG\r\n\x1a\n") || len(png) < 1000 {
		t.Fatalf("out.png is not a PNG (%v): %q", err, png[:min(len(png), 16)])
	}
}

// TestNumpyThreadsNative: importing numpy starts no thread per host core:
// its BLAS is told the run's CPU allowance (one thread for the default
// half core), and a request that sets the count itself gets its own.
func TestNumpyThreadsNative(t *testing.T) {
	testutil.RequirePythonModule(t, "numpy")
	e := nativeExecutor(t)
	code := "import os, numpy\nnumpy.ones((64, 64)) @ numpy.ones((64, 64))\n" +
		"print(len(os.listdir('/proc/self/task')), len(os.sched_getaffinity(0)), os.environ['OPENBLAS_NUM_THREADS'], os.environ['OMP_NUM_THREADS'])\n"
	run := func(env map[string]string, cpus float64) (tasks, cores int, blas, omp string) {
		t.Helper()
		res, err := e.Execute(context.Background(), execute.Request{Language: "python", Code: code, Env: env,
			Limits: execute.ExecutionLimits{TimeLimit: 60, CPULimit: cpus}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != execute.StatusSuccess {
			t.Fatalf("status %s stderr %q", res.Status, res.Stderr)
		}
		if _, err := fmt.Sscan(res.Stdout, &tasks, &cores, &blas, &omp); err != nil {
			t.Fatalf("output %q: %v", res.Stdout, err)
		}
		return tasks, cores, blas, omp
	}
	tasks, cores, blas, omp := run(nil, 0)
	if tasks != 1 || blas != "1" || omp != "1" {
		t.Errorf("default limits on %d cores: %d threads, OPENBLAS_NUM_THREADS %s, OMP_NUM_THREADS %s; want 1", cores, tasks, blas, omp)
	}
	// The request's count wins; the others keep the run's.
	tasks, cores, blas, omp = run(map[string]string{"OPENBLAS_NUM_THREADS": "2"}, 0)
	if tasks != min(2, cores) || blas != "2" || omp != "1" {
		t.Errorf("OPENBLAS_NUM_THREADS=2 on %d cores: %d threads, OPENBLAS_NUM_THREADS %s, OMP_NUM_THREADS %s", cores, tasks, blas, omp)
	}
}
