package docker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/mountpoint"
)

// hostCgroup reads a container's cgroup counters on this machine: CPU time,
// memory now and at its peak, and the OOM killer's kills. The engine finds
// the container (its init's pid); the kernel's counters are then read
// directly. The engine's own stats endpoint answers in about a second per
// call (Docker 20.10, one-shot or not), too slow to watch a CPU-time limit
// or to measure runs of tens of milliseconds; on a remote engine, whose
// cgroups are not here, the backend falls back to it.
type hostCgroup struct {
	v2 bool
	// mem and cpu are the group's directories in the memory and cpuacct
	// hierarchies (the same directory on v2).
	mem, cpu string
	// peak is v2's memory.peak, held open: a write resets the peak seen
	// through this descriptor (Linux 6.12).
	peak *os.File
	// path is the group's path as /proc/PID/cgroup shows it in the
	// memory hierarchy (v1) or the unified one (v2), to tell whether a
	// process still belongs to the container.
	path string
	// controller is "memory" on v1, "" on v2.
	controller string
}

// cgroupUsage is one reading of a container's counters.
type cgroupUsage struct {
	cpu      time.Duration
	memory   int64
	peak     int64
	oomKills int
}

// openHostCgroup finds the cgroup of pid through /proc.
func openHostCgroup(pid int) (*hostCgroup, error) {
	self, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return nil, err
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	return locateCgroup(string(self), string(mounts))
}

// locateCgroup maps a process's cgroup membership (/proc/PID/cgroup) to
// directories through the mount table (/proc/self/mountinfo). A v1 memory
// hierarchy means v1, as internal/cgroup decides.
func locateCgroup(membership, mountinfo string) (*hostCgroup, error) {
	type mnt struct{ root, point, fstype, opts string }
	var mounts []mnt
	for _, line := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		mounts = append(mounts, mnt{root: mountpoint.Unescape(f[3]), point: mountpoint.Unescape(f[4]), fstype: g[0], opts: g[2]})
	}
	paths := map[string]string{} // controller ("" for v2) -> path
	for _, line := range strings.Split(membership, "\n") {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			paths[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			paths[c] = parts[2]
		}
	}
	dir := func(controller string) (string, error) {
		p, ok := paths[controller]
		if !ok {
			return "", fmt.Errorf("the process is in no %q cgroup", controller)
		}
		for _, m := range mounts {
			v1 := m.fstype == "cgroup" && controller != "" && hasOption(m.opts, controller)
			v2 := m.fstype == "cgroup2" && controller == ""
			if !v1 && !v2 {
				continue
			}
			rel, ok := within(p, m.root)
			if !ok {
				continue
			}
			return filepath.Join(m.point, rel), nil
		}
		return "", fmt.Errorf("no mount shows the %q cgroup %s", controller, p)
	}
	for _, m := range mounts {
		if m.fstype == "cgroup" && hasOption(m.opts, "memory") {
			mem, err := dir("memory")
			if err != nil {
				return nil, err
			}
			cpu, err := dir("cpuacct")
			if err != nil {
				return nil, err
			}
			return &hostCgroup{mem: mem, cpu: cpu, path: paths["memory"], controller: "memory"}, nil
		}
	}
	d, err := dir("")
	if err != nil {
		return nil, err
	}
	return &hostCgroup{v2: true, mem: d, cpu: d, path: paths[""]}, nil
}

// within returns p relative to root when p lies inside it.
func within(p, root string) (string, bool) {
	if root == "/" {
		return strings.TrimPrefix(p, "/"), strings.HasPrefix(p, "/")
	}
	if p == root {
		return "", true
	}
	rest, ok := strings.CutPrefix(p, root+"/")
	return rest, ok
}

func hasOption(opts, name string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// resetPeak starts a new peak for the next run. It reports false where
// the kernel cannot (v2 before 6.12).
func (c *hostCgroup) resetPeak() bool {
	if !c.v2 {
		return os.WriteFile(filepath.Join(c.mem, "memory.max_usage_in_bytes"), []byte("0"), 0) == nil
	}
	if c.peak == nil {
		f, err := os.OpenFile(filepath.Join(c.mem, "memory.peak"), os.O_RDWR, 0)
		if err != nil {
			return false
		}
		c.peak = f
	}
	_, err := c.peak.Write([]byte("reset\n"))
	return err == nil
}

func (c *hostCgroup) close() {
	if c.peak != nil {
		_ = c.peak.Close()
		c.peak = nil
	}
}

// read takes one reading.
func (c *hostCgroup) read() (cgroupUsage, error) {
	var u cgroupUsage
	var err error
	if c.v2 {
		stat, err := os.ReadFile(filepath.Join(c.cpu, "cpu.stat"))
		if err != nil {
			return u, err
		}
		usec, err := keyed(stat, "usage_usec")
		if err != nil {
			return u, err
		}
		u.cpu = time.Duration(usec) * time.Microsecond
		if u.memory, err = number(filepath.Join(c.mem, "memory.current")); err != nil {
			return u, err
		}
		if c.peak != nil {
			buf := make([]byte, 32)
			n, err := c.peak.ReadAt(buf, 0)
			if err != nil && n == 0 {
				return u, err
			}
			u.peak, err = strconv.ParseInt(string(bytes.TrimSpace(buf[:n])), 10, 64)
			if err != nil {
				return u, err
			}
		} else if u.peak, err = number(filepath.Join(c.mem, "memory.peak")); err != nil {
			u.peak = u.memory
		}
		events, err := os.ReadFile(filepath.Join(c.mem, "memory.events"))
		if err != nil {
			return u, err
		}
		kills, err := keyed(events, "oom_kill")
		u.oomKills = int(kills)
		return u, err
	}
	ns, err := number(filepath.Join(c.cpu, "cpuacct.usage"))
	if err != nil {
		return u, err
	}
	u.cpu = time.Duration(ns)
	if u.memory, err = number(filepath.Join(c.mem, "memory.usage_in_bytes")); err != nil {
		return u, err
	}
	if u.peak, err = number(filepath.Join(c.mem, "memory.max_usage_in_bytes")); err != nil {
		return u, err
	}
	ctl, err := os.ReadFile(filepath.Join(c.mem, "memory.oom_control"))
	if err != nil {
		return u, err
	}
	kills, err := keyed(ctl, "oom_kill")
	u.oomKills = int(kills)
	return u, err
}

func number(p string) (int64, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
}

// keyed reads "key value" from a flat-keyed file; an absent key is 0.
func keyed(data []byte, key string) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", key, err)
			}
			return n, nil
		}
	}
	return 0, sc.Err()
}

// errSurvivors means processes of the program's user were still alive
// after killLeftovers gave up.
var errSurvivors = errors.New("processes of the program survive in the container")

// killTimeout bounds killLeftovers; the kernel needs microseconds.
const killTimeout = 2 * time.Second

// killLeftovers kills, from this machine, every process of uid in the
// container's cgroup: what a program left running after it exited. Each
// process is opened as a pidfd, then checked to be uid's and the
// container's, then signalled through the pidfd, so that a pid reused by
// another process in the meantime is never signalled. docker-init and the
// keeper run as other users and stay.
func (c *hostCgroup) killLeftovers(uid int) error {
	deadline := time.Now().Add(killTimeout)
	for {
		data, err := os.ReadFile(filepath.Join(c.mem, "cgroup.procs"))
		if err != nil {
			return err
		}
		alive := 0
		for _, f := range strings.Fields(string(data)) {
			pid, err := strconv.Atoi(f)
			if err != nil || pid <= 1 {
				continue
			}
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue // gone
			}
			if c.owns(pid, uid) {
				alive++
				_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			}
			_ = unix.Close(fd)
		}
		if alive == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %d still there after %v", errSurvivors, alive, killTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// owns reports whether pid is a live (not zombie) process of uid in the
// container's cgroup.
func (c *hostCgroup) owns(pid, uid int) bool {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	realUID, zombie := -1, false
	for _, line := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		f := strings.Fields(v)
		switch {
		case k == "State" && len(f) > 0:
			zombie = f[0] == "Z" || f[0] == "X"
		case k == "Uid" && len(f) > 0:
			realUID, _ = strconv.Atoi(f[0])
		}
	}
	if zombie || realUID != uid {
		return false
	}
	membership, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(membership), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if (c.controller == "" && parts[1] == "") || (c.controller != "" && hasOption(parts[1], c.controller)) {
			return parts[2] == c.path
		}
	}
	return false
}
