package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/native"
)

// Flags of the interleaved table (-table).
var (
	tableFlag  = flag.String("table", "", "print one interleaved table of bare fork/exec and these backends (native,native-per-request,bwrap,docker,docker-per-run,docker-warm): c=1 p50/p95, c=2 runs/s and CPU per run, instead of the native-only report")
	batchFlag  = flag.Int("batch", 10, "in -table, runs of one configuration in a row before the next takes its turn (at c=2, twice as many; 1 to 1000)")
	settleFlag = flag.Duration("settle", 50*time.Millisecond, "in -table, how long the CPU count goes on after a c=2 batch, for work a backend finishes after its runs return (a warm pool's refill, a teardown); at most 1s")
)

// config is one way of running a program: bare or on a backend.
type config struct {
	name string
	run  func(w workload) error
	// ready, when set, is called before each c=1 run, untimed.
	ready func()
	// err, when set, is why the configuration cannot run here.
	err error
}

// cell is what the table measured for one configuration and program.
type cell struct {
	lat     []time.Duration // c=1, back to back
	runs    int             // c=2
	elapsed time.Duration   // c=2, the batches only
	cpu     cpuTimes        // whole machine over the c=2 batches and their settle time
	own     cpuTimes        // this process's tree, kernel threads and daemons, over the same time
	counted time.Duration   // the time cpu was counted over
}

// table measures every program on every configuration, round-robin in
// batches of batch runs, so that a change in the machine's load hits all
// alike, and prints one table.
func table(names []string, n, batch int, settle time.Duration) {
	if batch < 1 || batch > 1000 {
		fail("-batch must be between 1 and 1000")
	}
	if settle < 0 || settle > time.Second {
		fail("-settle must be between 0 and 1s")
	}
	dir, hello := compileHello()
	defer os.RemoveAll(dir)
	workloads := []workload{
		{name: "trivial (/bin/true)", args: []string{"/bin/true"}},
		{name: "Python hello-world", args: []string{"/usr/bin/python3", "-c", "print('Hello, World!')"}},
		{name: "C hello-world", args: []string{"/opt/hello"}, mounts: []sandbox.Mount{{Source: hello, Target: "/opt/hello"}}},
	}
	configs := []config{{name: "bare fork/exec", run: func(w workload) error {
		args := w.args
		if w.mounts != nil {
			args = []string{hello}
		}
		return exec.Command(args[0], args[1:]...).Run()
	}}}
	var langs *lang.Table
	if slicesHasDocker(names) {
		var err error
		if langs, err = lang.New(map[string]lang.Recipe{"python": {Image: *imageFlag}}); err != nil {
			fail(err.Error())
		}
	}
	var seq atomic.Int64
	for _, name := range names {
		var b bench
		var err error
		if name == "native" || name == "native-per-request" {
			// As serve, mcp and judge run it: two sandboxes started
			// ahead, and each kept for later runs unless per request
			// (backend.sandbox_per_request).
			perRequest := name == "native-per-request"
			label := "native, warm 2, kept"
			if perRequest {
				label = "native, warm 2, per request"
			}
			var nb *native.Backend
			if nb, err = native.New(native.Options{Warm: 2, PerRequest: perRequest}); err == nil {
				b = bench{name: label, backend: nb, close: func() { _ = nb.Close() }}
			}
		} else {
			b, err = openBench(name, langs)
		}
		if err != nil {
			configs = append(configs, config{name: name, err: err})
			continue
		}
		defer b.close()
		be, hostWS := b.backend, b.workspace
		configs = append(configs, config{name: b.name, ready: b.ready, run: func(w workload) error {
			// A new program every run, as a server sees them: no docker
			// container is reused across runs.
			spec := &sandbox.Spec{Args: w.args, Env: []string{fmt.Sprintf("RUN=%d", seq.Add(1))},
				Mounts: append(native.BaseMounts(), w.mounts...)}
			if hostWS {
				// As /v1/run: a capped host workspace per run.
				ws, err := capws.New("", "sandboxbench-", sandbox.DefaultLimits.WorkspaceSize, 0)
				if err != nil {
					return err
				}
				defer func() { _ = ws.Remove() }()
				spec.Workspace = ws.Path
			}
			return runOK(be, spec)
		}})
	}

	cells := make([][]cell, len(workloads))
	for i := range cells {
		cells[i] = make([]cell, len(configs))
	}
	// One untimed run of each warms caches and a docker image's layers.
	for _, w := range workloads {
		for i := range configs {
			if c := &configs[i]; c.err == nil {
				if err := c.run(w); err != nil {
					if i == 0 {
						// Every ratio is to bare: without it there is no table.
						fail(fmt.Sprintf("%s, %s: %v", c.name, w.name, err))
					}
					c.err = err
				}
			}
		}
	}
	var idle cell
	var own ownTracker
	rounds := (n + batch - 1) / batch
	start := time.Now()
	for r := range rounds {
		k := min(batch, n-r*batch)
		own.refresh()
		for wi, w := range workloads {
			for ci, c := range configs {
				if c.err != nil {
					continue
				}
				cl := &cells[wi][ci]
				for range k {
					if c.ready != nil {
						c.ready()
					}
					t := time.Now()
					if err := c.run(w); err != nil {
						fail(fmt.Sprintf("%s, %s: %v", c.name, w.name, err))
					}
					cl.lat = append(cl.lat, time.Since(t))
				}
				before := readProcStat()
				ownBefore := own.read(false)
				t := time.Now()
				if err := concurrently(2, 2*k, func() error { return c.run(w) }); err != nil {
					fail(fmt.Sprintf("%s, %s: %v", c.name, w.name, err))
				}
				cl.elapsed += time.Since(t)
				cl.runs += 2 * k
				time.Sleep(settle)
				cl.own = cl.own.add(own.read(true).since(ownBefore))
				cl.cpu = cl.cpu.add(readProcStat().sub(before))
				cl.counted += time.Since(t)
			}
		}
		// The machine's own load, measured as often as the rest.
		idle.measureIdle(settle)
	}
	printTable(workloads, configs, cells, idle, n, batch, time.Since(start))
}

func slicesHasDocker(names []string) bool {
	for _, n := range names {
		if strings.HasPrefix(n, "docker") {
			return true
		}
	}
	return false
}

// concurrently calls f total times, conc at once, and returns the first
// error.
func concurrently(conc, total int, f func() error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(total) {
				if err := f(); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// netCPU is the CPU time the machine spent per run of a cell, less what it
// spends when nothing is measured (the load of everything else), scaled
// to the time the cell's CPU was counted over.
// measureIdle adds to c the machine's busy time (/proc/stat) over a pause
// of settle (at least 20 ms) in which the benchmark runs nothing: the
// background load that the CPU figures subtract.
func (c *cell) measureIdle(settle time.Duration) {
	before, t := readProcStat(), time.Now()
	time.Sleep(max(settle, 20*time.Millisecond))
	c.cpu = c.cpu.add(readProcStat().sub(before))
	c.counted += time.Since(t)
}

func netCPU(c cell, idle cell) (total, system time.Duration) {
	if c.runs == 0 {
		return 0, 0
	}
	bg := func(d time.Duration) time.Duration {
		if idle.counted <= 0 {
			return 0
		}
		return time.Duration(float64(d) * float64(c.counted) / float64(idle.counted))
	}
	total = (c.cpu.busy() - bg(idle.cpu.busy())) / time.Duration(c.runs)
	system = (c.cpu.system - bg(idle.cpu.system)) / time.Duration(c.runs)
	return total, system
}

func printTable(workloads []workload, configs []config, cells [][]cell, idle cell, n, batch int, took time.Duration) {
	load := 0.0
	if idle.counted > 0 {
		load = float64(idle.cpu.busy()) / float64(idle.counted)
	}
	if load > 0.2 {
		fmt.Printf("the machine was busy with other work (%.2f cores): its whole-machine figures are unreliable, the own CPU figures less so\n", load)
	}
	fmt.Printf("one interleaved run: %d runs per row at c=1 and %d at c=2, in turns of %d and %d; %.1f s; background load %.2f cores (subtracted from CPU)\n",
		n, 2*n, batch, 2*batch, took.Seconds(), load)
	fmt.Printf("latency in ms, c=1 back to back; runs/s at c=2 back to back; x = ratio to bare\n")
	fmt.Printf("CPU = core-ms per run at c=2 of this process and its children, the kernel's threads and the docker daemons (sys: in the kernel)\n")
	fmt.Printf("machine = core-ms per run at c=2 of the whole machine (/proc/stat), less the background load\n\n")
	fmt.Printf("%-20s %-16s %7s %7s %8s %6s %7s %7s %6s %8s %6s\n", "program", "how", "p50", "p95", "runs/s", "x", "CPU", "sys", "x", "machine", "x")
	for wi, w := range workloads {
		bare := cells[wi][0]
		bareCPU, _ := netCPU(bare, idle)
		bareOwn := perRun(bare.own, bare.runs)
		for ci, c := range configs {
			if c.err != nil {
				if wi == 0 {
					fmt.Printf("%-20s %-16s unavailable: %v\n", w.name, c.name, c.err)
				}
				continue
			}
			cl := cells[wi][ci]
			lat := sortedCopy(cl.lat)
			rate := float64(cl.runs) / cl.elapsed.Seconds()
			bareRate := float64(bare.runs) / bare.elapsed.Seconds()
			cpu, _ := netCPU(cl, idle)
			o := perRun(cl.own, cl.runs)
			fmt.Printf("%-20s %-16s %7s %7s %8.0f %6.2f %7s %7s %6s %8s %6s\n", w.name, c.name,
				ms(percentile(lat, .5)), ms(percentile(lat, .95)), rate, rate/bareRate,
				ms(o.busy()), ms(o.system), ratio(o.busy(), bareOwn.busy()), ms(cpu), ratio(cpu, bareCPU))
		}
	}
}

// perRun divides c's times by runs.
func perRun(c cpuTimes, runs int) cpuTimes {
	if runs <= 0 {
		return cpuTimes{}
	}
	r := time.Duration(runs)
	return cpuTimes{user: c.user / r, system: c.system / r, idle: c.idle / r}
}

// ratio is a/b to two places, or "-" when b is not positive (a CPU figure
// below the resolution of /proc/stat after the background is subtracted).
func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(a)/float64(b))
}
