package testutil

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Process is a running process as its /proc/PID/status shows it.
type Process struct {
	PID, PPID, UID int
}

// Descendants lists the processes this process started, directly or not,
// that still run (their real uid in UID): what a test leaves running,
// apart from what other tests on the machine, in other processes, run
// meanwhile. A process more than 64 generations down is not found.
func Descendants() []Process {
	procs := map[int]Process{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		p := Process{PID: pid}
		for _, line := range strings.Split(string(status), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) > 1 && f[0] == "PPid:":
				p.PPID, _ = strconv.Atoi(f[1])
			case len(f) > 1 && f[0] == "Uid:":
				p.UID, _ = strconv.Atoi(f[1])
			}
		}
		procs[pid] = p
	}
	self := os.Getpid()
	var found []Process
	for _, p := range procs {
		for parent, n := p.PPID, 0; parent > 1 && n < 64; parent, n = procs[parent].PPID, n+1 {
			if parent == self {
				found = append(found, p)
				break
			}
		}
	}
	return found
}
