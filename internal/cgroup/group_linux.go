package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Bounds on the waits of Kill and Destroy. They are far above what a
// healthy kernel needs (microseconds to a few milliseconds) and only stop
// a stuck group from hanging the caller.
const (
	killTimeout   = 2 * time.Second
	freezeTimeout = 100 * time.Millisecond
	rmdirTimeout  = time.Second
)

// Group is the cgroup of one run, in every hierarchy the Manager uses.
// Its methods are safe for concurrent use.
type Group struct {
	m    *Manager
	name string

	// mu guards fds against Destroy closing them under a concurrent call.
	mu sync.RWMutex
	// fds are O_PATH descriptors of the group's directory, one per
	// hierarchy; -1 once closed.
	fds []int
	// stats are the control files Stats reads, opened once: opening a
	// cgroupfs file costs far more than reading it again.
	stats     []statFile
	made      int // directories created, for rollback
	destroyed bool
	// peak is the largest memory.current seen, for v2 kernels without
	// memory.peak.
	peak atomic.Int64
	// leaf is, on v2 once ResetPeak had to start a new peak without
	// writing memory.peak (before Linux 6.12), an O_PATH descriptor of
	// the child group that holds the group's processes, and leafName its
	// name; -1 and "" before. The limits stay on the group, which bounds
	// the child; Stats reads the child, whose counters started at zero.
	leaf     int
	leafName string
	// leaves counts the children made, to name the next one; oldLeaves
	// are those a reset could not remove yet.
	leaves    int
	oldLeaves []string
}

// Name returns the name the group was created with.
func (g *Group) Name() string { return g.name }

// FD returns a descriptor of the group's directory for
// syscall.SysProcAttr.CgroupFD, which starts a child directly inside the
// group (clone3 CLONE_INTO_CGROUP), so that not even its first
// instruction runs outside the limits. It is v2 only; on v1 ok is false
// and the caller uses Add. The descriptor stays owned by the Group.
func (g *Group) FD() (fd int, ok bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.m.version != V2 || g.destroyed {
		return -1, false
	}
	return g.procDir(0), true
}

// procDir is the directory of hierarchy h that holds the group's
// processes and whose counters Stats reads: the group's own, or its
// leaf.
func (g *Group) procDir(h int) int {
	if g.leaf >= 0 {
		return g.leaf
	}
	return g.fds[h]
}

// statPath names the directory procDir(h) returns, for messages.
func (g *Group) statPath(h int) string {
	if g.leaf >= 0 {
		return g.m.hiers[h].base + "/" + g.name + "/" + g.leafName
	}
	return g.m.hiers[h].base + "/" + g.name
}

// Add moves the process pid, with all its threads, into the group (into
// every hierarchy on v1).
func (g *Group) Add(pid int) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.destroyed {
		return fmt.Errorf("unable to add %d to %s: %w", pid, g.name, ErrDestroyed)
	}
	for i := range g.fds {
		var buf [24]byte
		if err := writeAt(g.procDir(i), ctlProcs, strconv.AppendInt(buf[:0], int64(pid), 10)); err != nil {
			return fmt.Errorf("unable to write %s/%s=%d: %w", g.statPath(i), ctlProcs.name, pid, err)
		}
	}
	return nil
}

// statBufSize holds any of the files Stats reads: cpu.stat, the largest,
// has a dozen short lines.
const statBufSize = 1024

// Stats reads what the group has used so far.
func (g *Group) Stats() (Stats, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.destroyed {
		return Stats{}, fmt.Errorf("unable to read the usage of %s: %w", g.name, ErrDestroyed)
	}
	var buf [statBufSize]byte
	if g.m.version == V2 {
		return g.statsV2(buf[:])
	}
	return g.statsV1(buf[:])
}

// statFile is an open control file of hierarchy h.
type statFile struct {
	h  int
	f  ctl
	fd int
	// writable is set for a descriptor opened for writing too.
	writable bool
}

// statFiles are the control files Stats reads.
func (m *Manager) statFiles() []statFile {
	if m.version == V2 {
		files := []statFile{{h: 0, f: ctlCPUStat, fd: -1}, {h: 0, f: ctlMemoryCurrent, fd: -1}, {h: 0, f: ctlMemoryEvents, fd: -1}}
		if m.peak {
			files = append(files, statFile{h: 0, f: ctlMemoryPeak, fd: -1})
		}
		return files
	}
	return []statFile{
		{h: m.cpuacct, f: ctlCPUAcctUsage, fd: -1}, {h: m.mem, f: ctlMemUsage, fd: -1},
		{h: m.mem, f: ctlMemMaxUsage, fd: -1}, {h: m.mem, f: ctlOOMControl, fd: -1},
	}
}

// openStats opens the control files Stats reads. One that cannot be
// opened now is left to Stats, which then reports why.
//
// memory.peak (v2) is opened for writing too where the kernel allows it
// (Linux 6.12 on): a write resets the peak this descriptor reports, which
// is how ResetPeak works there.
func (g *Group) openStats() {
	g.stats = g.m.statFiles()
	for i := range g.stats {
		s := &g.stats[i]
		if s.f.name == ctlMemoryPeak.name {
			if fd, err := openat(g.procDir(s.h), s.f, unix.O_RDWR); err == nil {
				s.fd, s.writable = fd, true
				continue
			}
		}
		if fd, err := openat(g.procDir(s.h), s.f, unix.O_RDONLY); err == nil {
			s.fd = fd
		}
	}
}

// ResetPeak makes the group's peak memory start again: Stats then reports
// the largest use since the call. It lets one group serve runs one after
// another, each with its own peak.
//
// On v1, and on v2 from Linux 6.12, the kernel resets the peak in place.
// Before Linux 6.12 memory.peak cannot be written; there the group's
// processes move into a new child group, whose counters start at zero,
// and Stats reads that child from then on: the peak, the memory in use,
// the CPU time and the OOM kills are those of the processes since the
// call (memory the group held before stays charged to the group, and its
// limits, which stay on the group, still count it). The child before, if
// any, is removed.
func (g *Group) ResetPeak() error {
	g.mu.RLock()
	if g.destroyed {
		g.mu.RUnlock()
		return fmt.Errorf("unable to reset the peak memory of %s: %w", g.name, ErrDestroyed)
	}
	if g.m.version == V1 {
		defer g.mu.RUnlock()
		return g.set(g.m.mem, ctlMemMaxUsage, 0)
	}
	if !g.m.peak {
		// The peak is sampled by Stats: start the samples again.
		defer g.mu.RUnlock()
		g.peak.Store(0)
		return nil
	}
	for _, s := range g.stats {
		if s.f.name != ctlMemoryPeak.name || !s.writable {
			continue
		}
		err := writePeak(s.fd)
		if !errors.Is(err, unix.EINVAL) {
			g.mu.RUnlock()
			if err != nil {
				return fmt.Errorf("unable to reset %s/%s: %w", g.statPath(0), ctlMemoryPeak.name, err)
			}
			return nil
		}
		// Before Linux 6.12 root opens memory.peak for writing (cgroupfs
		// has a write handler for every file) and the write fails.
	}
	g.mu.RUnlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.destroyed {
		return fmt.Errorf("unable to reset the peak memory of %s: %w", g.name, ErrDestroyed)
	}
	return g.newLeaf()
}

// writePeak writes a reset to the memory.peak open at fd.
func writePeak(fd int) error {
	for {
		_, err := unix.Write(fd, []byte("reset\n"))
		if err != unix.EINTR {
			return err
		}
	}
}

// moveTimeout bounds how long newLeaf waits for the group's processes to
// be moved: a process that is exiting stays listed, and cannot be moved,
// until its exit is done, and one that forks fast may need a few rounds.
const moveTimeout = 2 * time.Second

// newLeaf moves the group's processes into a new child group and makes
// it the one Stats reads (see ResetPeak). The caller holds g.mu for
// writing.
func (g *Group) newLeaf() (retErr error) {
	g.leaves++
	name := "peak-" + strconv.Itoa(g.leaves)
	dir := g.m.hiers[0].base + "/" + g.name + "/" + name
	if err := unix.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("unable to create cgroup %s: %w", dir, err)
	}
	if g.m.hooks != nil {
		if err := g.m.hooks.populate(dir, nil); err != nil {
			return errors.Join(err, g.m.rmdir(dir))
		}
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return errors.Join(fmt.Errorf("unable to open cgroup %s: %w", dir, err), g.m.rmdir(dir))
	}
	from := g.procDir(0)
	defer func() {
		if retErr != nil {
			// Back where they were, so that the group still holds them.
			_ = g.m.moveProcs(fd, from)
			_ = unix.Close(fd)
			_ = g.m.rmdirRetry(dir)
		}
	}()
	if err := g.m.moveProcs(from, fd); err != nil {
		return fmt.Errorf("unable to move the processes of %s into %s: %w", g.statPath(0), dir, err)
	}
	if g.leaf < 0 {
		// The group, now without processes of its own, gives its
		// controllers to the child: the no-internal-process rule
		// refuses that to a group that holds processes, so a process
		// forked there meanwhile is moved too.
		deadline := time.Now().Add(moveTimeout)
		var b backoff
		for {
			err = writeAt(g.fds[0], ctlSubtreeControl, []byte("+"+strings.Join(g.m.hiers[0].controllers, " +")))
			if err == nil || !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
				break
			}
			b.sleep()
			if err := g.m.moveProcs(g.fds[0], fd); err != nil {
				return fmt.Errorf("unable to move the processes of %s into %s: %w", g.statPath(0), dir, err)
			}
		}
		if err != nil {
			return fmt.Errorf("unable to enable the controllers of %s/%s for its child %s: %w", g.m.hiers[0].base, g.name, name, err)
		}
	}
	oldFD, oldName := g.leaf, g.leafName
	for i := range g.stats {
		if g.stats[i].fd >= 0 {
			_ = unix.Close(g.stats[i].fd)
		}
	}
	g.leaf, g.leafName = fd, name
	g.openStats()
	g.peak.Store(0)
	if oldFD >= 0 {
		_ = unix.Close(oldFD)
		// Empty now: what it had charged goes to the group. One that a
		// process still exiting keeps busy is left to Destroy.
		if g.m.rmdirRetry(g.m.hiers[0].base+"/"+g.name+"/"+oldName) != nil {
			g.oldLeaves = append(g.oldLeaves, oldName)
		}
	}
	return nil
}

// moveProcs moves every process of the group at from into the group at
// to, until from is empty. A process that exits meanwhile is skipped.
func (m *Manager) moveProcs(from, to int) error {
	var stack [16]int
	pids := stack[:0]
	deadline := time.Now().Add(moveTimeout)
	var b backoff
	for round := 0; round == 0 || time.Now().Before(deadline); round++ {
		if round > 0 {
			b.sleep()
		}
		var err error
		if pids, err = readPids(from, pids[:0]); err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			var buf [24]byte
			b := strconv.AppendInt(buf[:0], int64(pid), 10)
			var err error
			if m.hooks != nil {
				err = m.hooks.move(from, to, b)
			} else {
				err = writeAt(to, ctlProcs, b)
			}
			if err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("unable to move process %d: %w", pid, err)
			}
		}
	}
	return fmt.Errorf("processes %v still there after %v of moves", pids, moveTimeout)
}

// read reads the control file f of hierarchy h, through the descriptor
// opened for Stats if there is one.
func (g *Group) read(h int, f ctl, buf []byte) ([]byte, error) {
	for _, s := range g.stats {
		if s.h == h && s.f.name == f.name {
			if s.fd >= 0 {
				return preadAll(s.fd, buf)
			}
			return readAt(g.procDir(h), f, buf)
		}
	}
	return readAt(g.fds[h], f, buf)
}

// readNumber reads a file holding a single number.
func (g *Group) readNumber(h int, f ctl, buf []byte) (int64, error) {
	data, err := g.read(h, f, buf)
	if err != nil {
		return 0, fmt.Errorf("unable to read %s/%s/%s: %w", g.m.hiers[h].base, g.name, f.name, err)
	}
	v, err := parseUint(data)
	if err != nil {
		return 0, fmt.Errorf("unable to parse %s/%s/%s=%q: %w", g.m.hiers[h].base, g.name, f.name, string(data), err)
	}
	return v, nil
}

// readKey reads the value of key in a flat-keyed file; an absent key reads
// as zero.
func (g *Group) readKey(h int, f ctl, key string, buf []byte) (int64, error) {
	data, err := g.read(h, f, buf)
	if err != nil {
		return 0, fmt.Errorf("unable to read %s/%s/%s: %w", g.m.hiers[h].base, g.name, f.name, err)
	}
	v, _, err := keyValue(data, key)
	if err != nil {
		return 0, fmt.Errorf("unable to parse %s/%s/%s: %w", g.m.hiers[h].base, g.name, f.name, err)
	}
	return v, nil
}

func (g *Group) statsV2(buf []byte) (Stats, error) {
	var s Stats
	usec, err := g.readKey(0, ctlCPUStat, "usage_usec", buf)
	if err != nil {
		return s, err
	}
	s.CPU = time.Duration(usec) * time.Microsecond
	if s.Memory, err = g.readNumber(0, ctlMemoryCurrent, buf); err != nil {
		return s, err
	}
	if g.m.peak {
		if s.PeakMemory, err = g.readNumber(0, ctlMemoryPeak, buf); err != nil {
			return s, err
		}
	} else {
		s.PeakMemory = g.notePeak(s.Memory)
	}
	// oom_kill counts the processes the OOM killer chose in this group and
	// its descendants; the oom line counts times the limit was hit, killed
	// or not.
	kills, err := g.readKey(0, ctlMemoryEvents, "oom_kill", buf)
	if err != nil {
		return s, err
	}
	s.OOMKills = int(kills)
	return s, nil
}

// notePeak records cur and returns the largest value recorded.
func (g *Group) notePeak(cur int64) int64 {
	for {
		p := g.peak.Load()
		if cur <= p {
			return p
		}
		if g.peak.CompareAndSwap(p, cur) {
			return cur
		}
	}
}

func (g *Group) statsV1(buf []byte) (Stats, error) {
	m := g.m
	var s Stats
	ns, err := g.readNumber(m.cpuacct, ctlCPUAcctUsage, buf)
	if err != nil {
		return s, err
	}
	s.CPU = time.Duration(ns)
	if s.Memory, err = g.readNumber(m.mem, ctlMemUsage, buf); err != nil {
		return s, err
	}
	if s.PeakMemory, err = g.readNumber(m.mem, ctlMemMaxUsage, buf); err != nil {
		return s, err
	}
	// Not memory.failcnt: it counts every time usage hit the limit and
	// the kernel reclaimed, which happens to programs that never lose a
	// process.
	kills, err := g.readKey(m.mem, ctlOOMControl, "oom_kill", buf)
	if err != nil {
		return s, err
	}
	s.OOMKills = int(kills)
	return s, nil
}

// Kill kills every process in the group, including those that left the
// process tree (a double fork), and returns once the group is empty.
// Killing a destroyed group does nothing.
func (g *Group) Kill() error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.destroyed {
		return nil
	}
	return g.kill()
}

// pids lists the processes in the group. On v1 it reads every hierarchy:
// a process moved out of one would otherwise keep its directory busy.
func (g *Group) pids(dst []int) ([]int, error) {
	dst = dst[:0]
	for h, fd := range g.fds {
		var err error
		if dst, err = readPids(fd, dst); err != nil {
			return dst, fmt.Errorf("unable to read %s/%s/%s: %w", g.m.hiers[h].base, g.name, ctlProcs.name, err)
		}
	}
	if g.leaf >= 0 {
		var err error
		if dst, err = readPids(g.leaf, dst); err != nil {
			return dst, fmt.Errorf("unable to read %s/%s: %w", g.statPath(0), ctlProcs.name, err)
		}
	}
	if len(g.fds) > 1 {
		slices.Sort(dst)
		dst = slices.Compact(dst)
	}
	return dst, nil
}

func (g *Group) kill() error {
	var stack [16]int
	pids, err := g.pids(stack[:0])
	if err != nil || len(pids) == 0 {
		return err
	}
	deadline := time.Now().Add(killTimeout)
	if g.m.version == V2 && g.m.killFile {
		// The kernel kills every process, forks racing with it included.
		if err := g.write(0, ctlKill, []byte("1")); err != nil {
			return err
		}
		var b backoff
		for time.Now().Before(deadline) {
			b.sleep()
			if pids, err = g.pids(pids); err != nil || len(pids) == 0 {
				return err
			}
		}
		return g.stillThere(pids)
	}
	// Without cgroup.kill, a process may fork between the read of
	// cgroup.procs and the signal, and a pid may be reused by a process
	// outside the group once its owner died. Frozen processes do neither;
	// the signals take effect when they thaw.
	var b backoff
	for {
		frozen := g.freeze()
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGKILL) // ESRCH: already gone
		}
		if frozen {
			if err := g.thaw(); err != nil {
				return err
			}
		}
		b.sleep()
		if pids, err = g.pids(pids); err != nil || len(pids) == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return g.stillThere(pids)
		}
	}
}

func (g *Group) stillThere(pids []int) error {
	return fmt.Errorf("unable to kill the processes of cgroup %s: %d still there after %v (%v)", g.name, len(pids), killTimeout, pids)
}

// freeze stops every process of the group and reports whether it could.
// A group that does not freeze in time (a process in uninterruptible
// sleep) is killed unfrozen rather than not at all.
func (g *Group) freeze() bool {
	m := g.m
	var h int
	var f, state ctl
	var on, done []byte
	switch {
	case m.version == V1 && m.freezer >= 0:
		h, f, on, state, done = m.freezer, ctlFreezerState, []byte("FROZEN"), ctlFreezerState, []byte("FROZEN")
	case m.version == V2 && m.freezeFile:
		h, f, on, state, done = 0, ctlFreeze, []byte("1"), ctlEvents, nil
	default:
		return false
	}
	if err := g.write(h, f, on); err != nil {
		return false
	}
	deadline := time.Now().Add(freezeTimeout)
	var buf [256]byte
	var b backoff
	for {
		data, err := readAt(g.fds[h], state, buf[:])
		if err != nil {
			return true // frozen or freezing; thaw anyway
		}
		if done != nil && bytes.Equal(bytes.TrimSpace(data), done) {
			return true
		}
		if done == nil {
			if v, _, _ := keyValue(data, "frozen"); v == 1 {
				return true
			}
		}
		if time.Now().After(deadline) {
			return true
		}
		b.sleep()
	}
}

func (g *Group) thaw() error {
	if g.m.version == V1 {
		return g.write(g.m.freezer, ctlFreezerState, []byte("THAWED"))
	}
	return g.write(0, ctlFreeze, []byte("0"))
}

// Destroy kills every process in the group and removes it from every
// hierarchy. It is safe to call more than once; a later call retries what
// an earlier one could not remove.
func (g *Group) Destroy() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var errs []error
	if !g.destroyed {
		errs = append(errs, g.kill())
		g.closeFDs()
		g.destroyed = true
	}
	// The children first: a group with children cannot be removed.
	for _, leaf := range append(g.oldLeaves, g.leafName) {
		if leaf != "" {
			errs = append(errs, g.m.rmdirRetry(g.m.hiers[0].base+"/"+g.name+"/"+leaf))
		}
	}
	for _, h := range g.m.hiers {
		errs = append(errs, g.m.rmdirRetry(h.base+"/"+g.name))
	}
	return errors.Join(errs...)
}

func (g *Group) closeFDs() {
	for i, s := range g.stats {
		if s.fd >= 0 {
			_ = unix.Close(s.fd)
			g.stats[i].fd = -1
		}
	}
	for i, fd := range g.fds {
		if fd >= 0 {
			_ = unix.Close(fd)
			g.fds[i] = -1
		}
	}
	if g.leaf >= 0 {
		_ = unix.Close(g.leaf)
		g.leaf = -1
	}
}

// rmdirRetry removes a group directory. EBUSY lasts while the kernel
// finishes the exit of the last processes, so it is retried for a while.
func (m *Manager) rmdirRetry(dir string) error {
	deadline := time.Now().Add(rmdirTimeout)
	var b backoff
	for {
		err := m.rmdir(dir)
		switch {
		case err == nil, errors.Is(err, unix.ENOENT):
			return nil
		case errors.Is(err, unix.EBUSY) && time.Now().Before(deadline):
			b.sleep()
		default:
			return fmt.Errorf("unable to remove cgroup %s: %w", dir, err)
		}
	}
}
