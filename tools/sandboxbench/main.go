// Command sandboxbench measures the latency and throughput of sandboxed runs
// next to bare fork/exec runs of the same programs, in the same process and
// at the same time, and prints percentiles and the overhead.
//
// Usage: sandboxbench [-n 300] [-warm 2] [-c 1,2] [-gap 0] [-workspace]
//
//	sandboxbench -table native,bwrap,docker-per-run,docker-warm [-n 100] [-batch 10] [-settle 50ms]
//
// prints one interleaved table of bare fork/exec and the backends: c=1
// p50/p95, c=2 runs/s and the CPU the whole machine spent per run
// (table.go).
//
//	sandboxbench -loop native [-n 2000] [-c 2]
//
// runs /bin/true and nothing else, for a profiler to watch (loop.go).
//
//	sandboxbench -peers -coderunner http://127.0.0.1:PORT [-gojudge http://127.0.0.1:PORT] [-n 100] [-judge-n 10]
//
// compares coderunner serve with go-judge and bare fork/exec over HTTP, in
// one interleaved run (peers.go; scripts/bench-peers.sh starts both).
//
//	sandboxbench -backends native,bwrap,docker,docker-per-run [-n 100] [-judges 20]
//
// compares the backends side by side instead (backends.go).
//
//	sandboxbench -docker-launch [-n 100] [-batch 10]
//
// compares, for a trivial run, a bare docker exec with the docker warm
// pool's two ways of starting a program: docker exec, and its launcher
// (launch.go).
//
// It needs what the native backend needs (root, or user namespaces) and gcc
// for the C hello-world. Every loop is bounded by -n.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/native"
)

type workload struct {
	name string
	args []string
	// mounts adds host paths the program needs inside the sandbox.
	mounts []sandbox.Mount
}

func main() {
	n := flag.Int("n", 300, "runs per measurement (at most 100000)")
	warm := flag.Int("warm", 2, "sandboxes started ahead of need in the warm configuration")
	conc := flag.String("c", "1,2", "comma-separated concurrency levels")
	gap := flag.Duration("gap", 0, "pause between two runs of a worker (at most 1s), so that sandboxes started ahead of need are ready as they would be between a server's requests")
	hostWS := flag.Bool("workspace", false, "give every sandboxed run a new capped host workspace, as /v1/run, execute_code and the Go API do (made and removed outside the timed run; needs root)")
	flag.Parse()
	if *n < 10 || *n > 100000 {
		fail("-n must be between 10 and 100000")
	}
	if *gap < 0 || *gap > time.Second {
		fail("-gap must be between 0 and 1s")
	}
	pause = *gap
	if *launchFlag {
		dockerLaunch(*n, *batchFlag)
		return
	}
	if *peersFlag {
		peers(*n, *batchFlag, *judgeNFlag, *judgeTestsFlag, *settleFlag)
		return
	}
	if *loopFlag != "" {
		c, err := strconv.Atoi(strings.TrimSpace(strings.Split(*conc, ",")[0]))
		if err != nil || c < 1 || c > 64 {
			fail("-c takes concurrency levels between 1 and 64")
		}
		loop(*loopFlag, *n, c)
		return
	}
	if *tableFlag != "" {
		table(parseBackends(*tableFlag), *n, *batchFlag, *settleFlag)
		return
	}
	if *backendsFlag != "" {
		compareBackends(parseBackends(*backendsFlag), *n, *judgesFlag)
		return
	}
	var levels []int
	for _, f := range strings.Split(*conc, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 || c > 64 {
			fail("-c takes concurrency levels between 1 and 64")
		}
		levels = append(levels, c)
	}

	dir, hello := compileHello()
	defer os.RemoveAll(dir)

	workloads := []workload{
		{name: "trivial (/bin/true)", args: []string{"/bin/true"}},
		{name: "C hello-world", args: []string{"/opt/hello"}, mounts: []sandbox.Mount{{Source: hello, Target: "/opt/hello"}}},
		{name: "Python hello-world", args: []string{"/usr/bin/python3", "-c", "print('Hello, World!')"}},
	}
	cold, err := native.New(native.Options{})
	if err != nil {
		fail(err.Error())
	}
	hot, err := native.New(native.Options{Warm: *warm})
	if err != nil {
		fail(err.Error())
	}
	defer hot.Close()

	fmt.Printf("%d runs per row, %v between runs; latency in ms; overhead = sandbox - bare at the same percentile, ratio = sandbox / bare\n\n", *n, *gap)
	fmt.Printf("%-22s %-18s %2s %8s %8s %8s %9s %10s %10s %7s %7s\n", "program", "how", "c", "p50", "p95", "p99", "runs/s", "+p50", "+p95", "x p50", "x p95")
	for _, w := range workloads {
		for _, c := range levels {
			bareHost := w.args
			if w.mounts != nil {
				bareHost = []string{hello}
			}
			bare := measure(*n, c, nil, func(string) error { return exec.Command(bareHost[0], bareHost[1:]...).Run() })
			row(w.name, "bare fork/exec", c, bare, nil)
			var prep func() (string, func())
			if *hostWS {
				prep = newWorkspace
			}
			for _, b := range []struct {
				name string
				be   *native.Backend
			}{{"sandbox", cold}, {fmt.Sprintf("sandbox, warm %d", *warm), hot}} {
				st := measure(*n, c, prep, func(ws string) error {
					spec := &sandbox.Spec{Args: w.args, Mounts: append(native.BaseMounts(), w.mounts...), Workspace: ws}
					res, err := b.be.Run(context.Background(), spec)
					if err == nil && res.Status != sandbox.StatusOK {
						err = fmt.Errorf("status %s: %s", res.Status, res.Stderr)
					}
					return err
				})
				row(w.name, b.name, c, st, &bare)
			}
		}
		fmt.Println()
	}
	precision(cold, min(*n, 50))
}

// precision reports how far past a limit a run goes before it is stopped:
// wall time for a sleeping program, CPU time for a spinning one.
func precision(be *native.Backend, n int) {
	fmt.Printf("limit precision over %d runs (how far past the limit the run was stopped, ms)\n", n)
	fmt.Printf("%-28s %8s %8s %8s\n", "limit", "p50", "p95", "max")
	for _, c := range []struct {
		name  string
		args  []string
		lim   sandbox.Limits
		taken func(*sandbox.Result) time.Duration
		limit time.Duration
	}{
		{"wall 200 ms (sleep)", []string{"/bin/sleep", "10"},
			sandbox.Limits{WallTime: 200 * time.Millisecond}, func(r *sandbox.Result) time.Duration { return r.WallTime }, 200 * time.Millisecond},
		{"cpu 200 ms (busy loop)", []string{"/bin/sh", "-c", "while :; do :; done"},
			sandbox.Limits{CPUTime: 200 * time.Millisecond, CPUs: 1}, func(r *sandbox.Result) time.Duration { return r.CPUTime }, 200 * time.Millisecond},
	} {
		var over []time.Duration
		for range n {
			res, err := be.Run(context.Background(), &sandbox.Spec{Args: c.args, Mounts: native.BaseMounts(), Limits: c.lim})
			if err != nil {
				fail(err.Error())
			}
			if res.Status != sandbox.StatusTimeLimit {
				fail(fmt.Sprintf("%s: status %s", c.name, res.Status))
			}
			over = append(over, c.taken(res)-c.limit)
		}
		slices.Sort(over)
		st := stats{lat: over}
		fmt.Printf("%-28s %8s %8s %8s\n", c.name, ms(st.pct(.5)), ms(st.pct(.95)), ms(over[len(over)-1]))
	}
}

// pause is the -gap between two runs of a worker; it is not timed.
var pause time.Duration

type stats struct {
	lat  []time.Duration
	rate float64
}

func (s stats) pct(p float64) time.Duration { return percentile(s.lat, p) }

// compileHello builds the C hello-world, outside any timing, into a new
// directory that sandboxes can read, and returns the directory (for the
// caller to remove) and the binary.
func compileHello() (dir, hello string) {
	dir, err := os.MkdirTemp("", "sandboxbench-")
	if err != nil {
		fail(err.Error())
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		fail(err.Error())
	}
	hello = filepath.Join(dir, "hello")
	src := filepath.Join(dir, "hello.c")
	if err := os.WriteFile(src, []byte("#include <stdio.h>\nint main(void){puts(\"Hello, World!\");return 0;}\n"), 0o644); err != nil {
		fail(err.Error())
	}
	if out, err := exec.Command("gcc", "-O2", "-o", hello, src).CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		fail(fmt.Sprintf("gcc: %v: %s", err, out))
	}
	return dir, hello
}

// newWorkspace makes a capped host workspace for one run, and returns its
// path and what removes it.
func newWorkspace() (string, func()) {
	d, err := capws.New("", "sandboxbench-ws-", sandbox.DefaultLimits.WorkspaceSize, 0)
	if err != nil {
		fail(err.Error())
	}
	return d.Path, func() { _ = d.Remove() }
}

// measure times n calls of f, conc at once. prep, when set, is called
// before each, untimed: f gets the string it returns, and the function it
// returns is called once f has returned, untimed too.
func measure(n, conc int, prep func() (string, func()), f func(string) error) stats {
	call := func() (time.Duration, error) {
		arg, done := "", func() {}
		if prep != nil {
			arg, done = prep()
		}
		defer done()
		t := time.Now()
		err := f(arg)
		return time.Since(t), err
	}
	// One untimed run per worker warms caches.
	for range conc {
		if _, err := call(); err != nil {
			fail(err.Error())
		}
	}
	lat := make([]time.Duration, n)
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				if pause > 0 {
					time.Sleep(pause)
				}
				var err error
				lat[i], err = call()
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		fail(firstErr.Error())
	}
	elapsed := time.Since(start)
	slices.Sort(lat)
	return stats{lat: lat, rate: float64(n) / elapsed.Seconds()}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/1e6) }

func row(name, how string, c int, s stats, bare *stats) {
	extra := ""
	if bare != nil {
		extra = fmt.Sprintf(" %+10.2f %+10.2f %7.2f %7.2f",
			float64(s.pct(.5)-bare.pct(.5))/1e6, float64(s.pct(.95)-bare.pct(.95))/1e6,
			float64(s.pct(.5))/float64(bare.pct(.5)), float64(s.pct(.95))/float64(bare.pct(.95)))
	}
	fmt.Printf("%-22s %-18s %2d %8s %8s %8s %9.0f%s\n", name, how, c, ms(s.pct(.5)), ms(s.pct(.95)), ms(s.pct(.99)), s.rate, extra)
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "sandboxbench:", msg)
	os.Exit(1)
}
