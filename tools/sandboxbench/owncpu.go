package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The CPU spent on the runs' behalf, whatever else the machine is doing:
// this process and every descendant it has waited for (a sandbox's init
// and what ran in it, bwrap, a docker client's work), the kernel's threads
// (kworkers tearing down namespaces, RCU) and the docker daemons. Unlike
// the whole machine's figure it does not move with other work on the
// machine; it misses what exits unwaited for by this process (a
// container's shim and runc) and counts the kernel threads' work for
// everyone else too.

// daemons are long-lived processes whose CPU is counted with the kernel's
// threads, because they work for a docker run.
var daemons = map[string]bool{"dockerd": true, "containerd": true}

// ownTracker counts the CPU time of this process's tree, the kernel's
// threads and the daemons.
type ownTracker struct {
	// pids are the kernel threads and daemons found when it last looked.
	pids []int
}

// refresh looks for the kernel threads and daemons again: kworkers come and
// go. It is called outside the counted time.
func (o *ownTracker) refresh() {
	o.pids = o.pids[:0]
	ents, err := os.ReadDir("/proc")
	if err != nil {
		fail(err.Error())
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone since
		}
		comm, ppid, err := parseStat(b)
		if err != nil {
			fail(fmt.Sprintf("/proc/%d/stat: %v", pid, err))
		}
		if pid == 2 || ppid == 2 || daemons[comm] {
			o.pids = append(o.pids, pid)
		}
	}
}

// ownSample is the CPU time so far of this process and its waited-for
// descendants, and of each kernel thread and daemon.
type ownSample struct {
	self    cpuTimes
	threads map[int]time.Duration
}

// read samples the CPU time so far: user and kernel time of this process
// and its waited-for descendants, and the run time of each kernel thread
// and daemon (nanoseconds, from schedstat). At the start the threads are
// read first, this process last, and at the end the other way round, so
// that reading /proc is not counted.
func (o *ownTracker) read(end bool) ownSample {
	s := ownSample{threads: make(map[int]time.Duration, len(o.pids))}
	if end {
		s.self = selfAndChildren()
	}
	for _, pid := range o.pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
		if err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
				continue // exited
			}
			fail(err.Error())
		}
		d, err := parseSchedstat(b)
		if err != nil {
			fail(fmt.Sprintf("/proc/%d/schedstat: %v", pid, err))
		}
		s.threads[pid] = d
	}
	if !end {
		s.self = selfAndChildren()
	}
	return s
}

// since is the CPU time spent from before to s, the kernel threads' and
// daemons' as kernel time. A thread that exited in between is left out on
// both ends (a pid is not reused that fast).
func (s ownSample) since(before ownSample) cpuTimes {
	c := s.self.sub(before.self)
	for pid, d := range s.threads {
		if b, ok := before.threads[pid]; ok && d >= b {
			c.system += d - b
		}
	}
	return c
}

// selfAndChildren is the CPU time of this process, of the children it has
// waited for, and of the children still alive with what they have waited
// for: a sandbox the native backend keeps between runs is an init that
// lives on and reaps each run, so its runs' CPU is in its own counts
// (/proc/PID/stat), not yet in this process's.
func selfAndChildren() cpuTimes {
	var c cpuTimes
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err != nil {
			fail(err.Error())
		}
		c.user += time.Duration(ru.Utime.Nano())
		c.system += time.Duration(ru.Stime.Nano())
	}
	live := liveChildren()
	c.user += live.user
	c.system += live.system
	return c
}

// liveChildren sums the CPU time of this process's living children and of
// the descendants each has waited for, in clock ticks of 10 ms (a child
// that exits in between moves from this sum into RUSAGE_CHILDREN, whole).
func liveChildren() cpuTimes {
	var c cpuTimes
	ents, err := os.ReadDir("/proc")
	if err != nil {
		fail(err.Error())
	}
	self := os.Getpid()
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone since
		}
		_, ppid, err := parseStat(b)
		if err != nil || ppid != self {
			continue
		}
		t, err := parseStatTimes(b)
		if err != nil {
			fail(fmt.Sprintf("/proc/%s/stat: %v", e.Name(), err))
		}
		c.user += t.user
		c.system += t.system
	}
	return c
}

// clockTick is the unit of /proc/PID/stat's times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// parseStatTimes reads a process's user and kernel time with its waited-for
// children's (utime, stime, cutime, cstime: the 14th to 17th fields) from
// /proc/PID/stat.
func parseStatTimes(b []byte) (cpuTimes, error) {
	shut := bytes.LastIndexByte(b, ')')
	if shut < 0 {
		return cpuTimes{}, fmt.Errorf("no (comm) in %.60q", b)
	}
	// After "(comm)": state is the 3rd field, utime the 14th.
	f := strings.Fields(string(b[shut+1:]))
	if len(f) < 15 {
		return cpuTimes{}, fmt.Errorf("%d fields after the name, want at least 15", len(f))
	}
	var ticks [4]int64
	for i := range ticks {
		n, err := strconv.ParseInt(f[11+i], 10, 64)
		if err != nil || n < 0 {
			return cpuTimes{}, fmt.Errorf("CPU time %q is not a count of clock ticks", f[11+i])
		}
		ticks[i] = n
	}
	return cpuTimes{user: time.Duration(ticks[0]+ticks[2]) * clockTick, system: time.Duration(ticks[1]+ticks[3]) * clockTick}, nil
}

// parseStat reads a process's name and parent from /proc/PID/stat:
// "pid (comm) state ppid ...", where comm may hold spaces and parentheses.
func parseStat(b []byte) (comm string, ppid int, err error) {
	open, shut := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || shut < open {
		return "", 0, fmt.Errorf("no (comm) in %.60q", b)
	}
	f := strings.Fields(string(b[shut+1:]))
	if len(f) < 2 {
		return "", 0, fmt.Errorf("no parent in %.60q", b)
	}
	ppid, err = strconv.Atoi(f[1])
	if err != nil || ppid < 0 {
		return "", 0, fmt.Errorf("parent %q is not a process id", f[1])
	}
	return string(b[open+1 : shut]), ppid, nil
}

// parseSchedstat reads the time a task has run, in nanoseconds, from the
// first of the three numbers of /proc/PID/schedstat.
func parseSchedstat(b []byte) (time.Duration, error) {
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return 0, fmt.Errorf("want 3 fields, got %d", len(f))
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("run time %q is not a count of nanoseconds", f[0])
	}
	return time.Duration(n), nil
}
