package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the times in /proc/stat: 1/100 s on every Linux
// architecture this tool builds for (USER_HZ, not the kernel's HZ).
const userHZ = 100

// cpuTimes is the machine's CPU time so far, all cores together, from the
// "cpu" line of /proc/stat.
type cpuTimes struct {
	// user is time in user mode (nice and guest time included).
	user time.Duration
	// system is time in the kernel: system calls, kernel threads such as
	// the kworkers that tear namespaces down, interrupts and softirqs.
	system time.Duration
	// idle is time with nothing to run, waiting for I/O included.
	idle time.Duration
}

// busy is the CPU time spent on work of any kind. Time stolen by the
// hypervisor is neither busy nor idle: no work of this machine ran in it.
func (c cpuTimes) busy() time.Duration { return c.user + c.system }

func (c cpuTimes) sub(o cpuTimes) cpuTimes {
	return c.add(cpuTimes{user: -o.user, system: -o.system, idle: -o.idle})
}

func (c cpuTimes) add(o cpuTimes) cpuTimes {
	return cpuTimes{user: c.user + o.user, system: c.system + o.system, idle: c.idle + o.idle}
}

// parseProcStat reads the aggregate "cpu" line of /proc/stat: user nice
// system idle iowait irq softirq steal guest guest_nice, in 1/userHZ s.
// Kernels before 2.6.33 print fewer fields; at least the first four must
// be there.
func parseProcStat(r io.Reader) (cpuTimes, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		f = f[1:]
		if len(f) < 4 {
			return cpuTimes{}, fmt.Errorf("/proc/stat: cpu line has %d fields, want at least 4", len(f))
		}
		var v [10]time.Duration
		for i := range min(len(f), len(v)) {
			n, err := strconv.ParseUint(f[i], 10, 63)
			if err != nil {
				return cpuTimes{}, fmt.Errorf("/proc/stat: cpu field %d: %w", i+1, err)
			}
			if n > uint64(1<<62)/uint64(time.Second/userHZ) {
				return cpuTimes{}, fmt.Errorf("/proc/stat: cpu field %d out of range: %d", i+1, n)
			}
			v[i] = time.Duration(n) * (time.Second / userHZ)
		}
		// guest and guest_nice are already part of user and nice.
		return cpuTimes{
			user:   v[0] + v[1],
			system: v[2] + v[5] + v[6],
			idle:   v[3] + v[4],
		}, nil
	}
	if err := sc.Err(); err != nil {
		return cpuTimes{}, fmt.Errorf("/proc/stat: %w", err)
	}
	return cpuTimes{}, fmt.Errorf("/proc/stat: no cpu line")
}

// readProcStat reads the machine's CPU times now.
func readProcStat() cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		fail(err.Error())
	}
	c, err := parseProcStat(bytes.NewReader(b))
	if err != nil {
		fail(err.Error())
	}
	return c
}
