package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coderunner/coderunner/judge"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/runner"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/bwrap"
	"github.com/coderunner/coderunner/sandbox/docker"
	"github.com/coderunner/coderunner/sandbox/native"
)

// Flags of the side-by-side comparison of backends. With -backends set,
// sandboxbench compares the backends instead of measuring native against
// bare fork/exec.
var (
	backendsFlag = flag.String("backends", "", "compare these backends side by side (native,bwrap,docker,docker-per-run,docker-warm) instead of native against bare fork/exec")
	judgesFlag   = flag.Int("judges", 20, "10-test judge requests per backend in the -backends comparison (at most 10000)")
	imageFlag    = flag.String("image", "coderunner/core:bookworm", "image of the docker backend for Python and shell programs (scripts/build-images.sh)")
)

// bench is one backend in the comparison.
type bench struct {
	name    string
	backend sandbox.Backend
	close   func()
	// ready, when set, waits (untimed) until the backend can take a run
	// as it is meant to: a docker warm container is waiting.
	ready func()
	// workspace gives every run of the table a capped host workspace of
	// its own, as /v1/run does.
	workspace bool
}

// compareBackends measures a trivial run, a Python hello-world and a
// 10-test Python judge request on each backend, every run or request a
// program of its own (a docker container is reused only by the runs of one
// program: the tests of one judge request), plus the same hello-world run
// again and again, and prints p50/p95 and the ratio to native.
func compareBackends(names []string, n, judges int) {
	if judges < 1 || judges > 10000 {
		fail("-judges must be between 1 and 10000")
	}
	langs, err := lang.New(map[string]lang.Recipe{
		"python": {Image: *imageFlag}, "python3": {Image: *imageFlag}, "bash": {Image: *imageFlag},
		"c": {Image: *imageFlag}, "cpp": {Image: *imageFlag},
	})
	if err != nil {
		fail(err.Error())
	}
	var benches []bench
	for _, name := range names {
		b, err := openBench(name, langs)
		if err != nil {
			fail(fmt.Sprintf("%s: %v", name, err))
		}
		defer b.close()
		benches = append(benches, b)
	}
	cache, err := os.MkdirTemp("", "sandboxbench-cache-")
	if err != nil {
		fail(err.Error())
	}
	defer os.RemoveAll(cache)
	if err := os.Chmod(cache, 0o755); err != nil {
		fail(err.Error())
	}
	var seq atomic.Int64
	workloads := []struct {
		name  string
		count int
		run   func(b bench, j *judge.Judge) error
	}{
		{"trivial (/bin/true)", n, func(b bench, _ *judge.Judge) error {
			return runOK(b.backend, &sandbox.Spec{Args: []string{"/bin/true"},
				Env: []string{fmt.Sprintf("RUN=%d", seq.Add(1))}, Mounts: native.BaseMounts()})
		}},
		{"Python hello-world", n, func(b bench, _ *judge.Judge) error {
			return runOK(b.backend, &sandbox.Spec{Args: []string{"/usr/bin/python3", "-c", fmt.Sprintf("print('Hello, World!') # %d", seq.Add(1))},
				Mounts: native.BaseMounts()})
		}},
		{"Python hello, same code", n, func(b bench, _ *judge.Judge) error {
			// The same program again: a docker container is reused.
			return runOK(b.backend, &sandbox.Spec{Args: []string{"/usr/bin/python3", "-c", "print('Hello, World!')"},
				Mounts: native.BaseMounts()})
		}},
		{"Python judge, 10 tests", judges, func(_ bench, j *judge.Judge) error {
			var tests []judge.TestCase
			for i := range 10 {
				tests = append(tests, judge.TestCase{Input: fmt.Sprintf("%d %d", i, i), ExpectedOutput: fmt.Sprint(2 * i)})
			}
			res := j.Execute(context.Background(), judge.ExecutionRequest{
				Code:      fmt.Sprintf("a, b = map(int, input().split())\nprint(a + b)  # %d\n", seq.Add(1)),
				Language:  "python",
				TestCases: tests,
			})
			if res.Status != judge.StatusAllPassed {
				return fmt.Errorf("judge: %s %s", res.Status, res.Summary)
			}
			return nil
		}},
	}
	fmt.Printf("backends side by side, concurrency 1; every run is a new program; latency in ms; ratio = backend / native at the same percentile\n\n")
	fmt.Printf("%-24s %-16s %6s %9s %9s %8s %8s\n", "workload", "backend", "runs", "p50", "p95", "x p50", "x p95")
	for _, w := range workloads {
		var base *stats
		for _, b := range benches {
			r, err := runner.New(b.backend, langs, runner.Options{CacheDir: cache})
			if err != nil {
				fail(err.Error())
			}
			j := judge.New(r, judge.Options{})
			st := measure(w.count, 1, nil, func(string) error { return w.run(b, j) })
			ratio := func(p float64) string {
				if base == nil {
					return "1.00"
				}
				return fmt.Sprintf("%.2f", float64(st.pct(p))/float64(base.pct(p)))
			}
			fmt.Printf("%-24s %-16s %6d %9s %9s %8s %8s\n", w.name, b.name, w.count, ms(st.pct(.5)), ms(st.pct(.95)), ratio(.5), ratio(.95))
			if b.name == "native" {
				base = &st
			}
		}
		fmt.Println()
	}
}

func runOK(be sandbox.Backend, spec *sandbox.Spec) error {
	res, err := be.Run(context.Background(), spec)
	if err == nil && res.Status != sandbox.StatusOK {
		err = fmt.Errorf("status %s: %s", res.Status, res.Stderr)
	}
	return err
}

func openBench(name string, langs *lang.Table) (bench, error) {
	switch name {
	case "native":
		b, err := native.New(native.Options{})
		if err != nil {
			return bench{}, err
		}
		return bench{name: name, backend: b, close: func() { _ = b.Close() }}, nil
	case "bwrap":
		b, err := bwrap.New(bwrap.Options{})
		return bench{name: name, backend: b, close: func() {}}, err
	case "docker", "docker-per-run", "docker-warm":
		opts := docker.Options{Languages: langs, DefaultImage: *imageFlag,
			PullPolicy: docker.PullNever, Reuse: name == "docker"}
		if name == "docker-warm" {
			opts.Warm = 2
		}
		b, err := docker.New(opts)
		if err != nil {
			return bench{}, err
		}
		if err := b.CheckAvailable(context.Background()); err != nil {
			_ = b.Close()
			return bench{}, err
		}
		bn := bench{name: name, backend: b, close: func() { _ = b.Close() }}
		if name == "docker-warm" {
			bn.name, bn.workspace = "docker, warm pool", true
			bn.ready = warmReady(b)
		}
		return bn, nil
	}
	return bench{}, fmt.Errorf("unknown backend (known: native, bwrap, docker, docker-per-run, docker-warm)")
}

// warmReady waits (at most 10 s) until b has a warm container idle. One
// is made in a fraction of a second; a run that finds none makes its
// own, and shows.
func warmReady(b *docker.Backend) func() {
	return func() {
		for deadline := time.Now().Add(10 * time.Second); b.Warm().Idle == 0 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// parseBackends splits the -backends list; native, when listed, is
// measured first as the reference.
func parseBackends(s string) []string {
	var names []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(names, f) {
			names = append(names, f)
		}
	}
	if i := slices.Index(names, "native"); i > 0 {
		names = append([]string{"native"}, slices.Delete(names, i, i+1)...)
	}
	return names
}
