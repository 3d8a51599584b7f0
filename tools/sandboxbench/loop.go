package main

import (
	"flag"
	"fmt"
	"os/exec"
	"time"

	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/native"
)

var loopFlag = flag.String("loop", "", "run /bin/true -n times at the first -c concurrency on this (native, bwrap or bare) and nothing else, then print runs/s and the CPU per run: a steady load for a profiler such as perf record -a")

// loop runs the trivial program n times, conc at once, on one
// configuration, and prints runs/s and the CPU per run counted as in the
// table.
func loop(name string, n, conc int) {
	var run func() error
	switch name {
	case "bare":
		run = func() error { return exec.Command("/bin/true").Run() }
	case "native", "bwrap":
		var b bench
		var err error
		if name == "native" {
			var nb *native.Backend
			if nb, err = native.New(native.Options{Warm: 2}); err == nil {
				b = bench{name: name, backend: nb, close: func() { _ = nb.Close() }}
			}
		} else {
			b, err = openBench(name, nil)
		}
		if err != nil {
			fail(fmt.Sprintf("%s: %v", name, err))
		}
		defer b.close()
		run = func() error {
			return runOK(b.backend, &sandbox.Spec{Args: []string{"/bin/true"}, Mounts: native.BaseMounts()})
		}
	default:
		fail("-loop takes native, bwrap or bare")
	}
	if err := run(); err != nil {
		fail(err.Error())
	}
	var own ownTracker
	own.refresh()
	before, ownBefore := readProcStat(), own.read(false)
	t := time.Now()
	if err := concurrently(conc, n, run); err != nil {
		fail(err.Error())
	}
	elapsed := time.Since(t)
	o := perRun(own.read(true).since(ownBefore), n)
	m := perRun(readProcStat().sub(before), n)
	fmt.Printf("%s, /bin/true, %d runs at c=%d: %.0f runs/s; per run: own CPU %s core-ms (%s in the kernel), whole machine %s core-ms (%s in the kernel)\n",
		name, n, conc, float64(n)/elapsed.Seconds(), ms(o.busy()), ms(o.system), ms(m.busy()), ms(m.system))
}
