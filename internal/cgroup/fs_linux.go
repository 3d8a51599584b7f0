package cgroup

import (
	"errors"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ctl is a control file name, kept both as a Go string for error messages
// and as a NUL-terminated C string so that the per-run paths open it
// relative to a group's directory fd without allocating.
type ctl struct {
	name string
	c    *byte
}

func newCtl(name string) ctl {
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		panic(err) // only constant names reach here
	}
	return ctl{name: name, c: p}
}

// Control files, v2 then v1.
var (
	ctlProcs          = newCtl("cgroup.procs")
	ctlKill           = newCtl("cgroup.kill")
	ctlFreeze         = newCtl("cgroup.freeze")
	ctlEvents         = newCtl("cgroup.events")
	ctlSubtreeControl = newCtl("cgroup.subtree_control")
	ctlMemoryMax      = newCtl("memory.max")
	ctlMemorySwapMax  = newCtl("memory.swap.max")
	ctlMemoryCurrent  = newCtl("memory.current")
	ctlMemoryPeak     = newCtl("memory.peak")
	ctlMemoryEvents   = newCtl("memory.events")
	ctlPidsMax        = newCtl("pids.max")
	ctlCPUMax         = newCtl("cpu.max")
	ctlCPUWeight      = newCtl("cpu.weight")
	ctlCPUStat        = newCtl("cpu.stat")

	ctlMemLimit     = newCtl("memory.limit_in_bytes")
	ctlMemswLimit   = newCtl("memory.memsw.limit_in_bytes")
	ctlSwappiness   = newCtl("memory.swappiness")
	ctlMemUsage     = newCtl("memory.usage_in_bytes")
	ctlMemMaxUsage  = newCtl("memory.max_usage_in_bytes")
	ctlOOMControl   = newCtl("memory.oom_control")
	ctlCFSPeriod    = newCtl("cpu.cfs_period_us")
	ctlCPUShares    = newCtl("cpu.shares")
	ctlCFSQuota     = newCtl("cpu.cfs_quota_us")
	ctlCPUAcctUsage = newCtl("cpuacct.usage")
	ctlFreezerState = newCtl("freezer.state")
)

// openat opens f beneath dirfd, retrying on EINTR.
func openat(dirfd int, f ctl, flags int) (int, error) {
	for {
		// f.c is a NUL-terminated name kept alive by the package-level ctl.
		r, _, e := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(f.c)), //nolint:gosec // audited
			uintptr(flags|unix.O_CLOEXEC), 0, 0, 0)
		switch e {
		case 0:
			return int(r), nil
		case unix.EINTR:
			continue
		}
		return -1, e
	}
}

// writeAt writes val to the control file f of the group at dirfd with a
// single write(2), which is how cgroupfs expects a value.
func writeAt(dirfd int, f ctl, val []byte) error {
	fd, err := openat(dirfd, f, unix.O_WRONLY|unix.O_TRUNC)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for {
		_, err = unix.Write(fd, val)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// readAt reads the control file f of the group at dirfd into buf and
// returns the bytes read. Files larger than buf are an error: every file
// read this way is small and bounded.
func readAt(dirfd int, f ctl, buf []byte) ([]byte, error) {
	fd, err := openat(dirfd, f, unix.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, err
		case m == 0:
			return buf[:n], nil
		}
		n += m
	}
	return nil, unix.EFBIG
}

// preadAll reads an open control file from its start into buf with one
// read: cgroupfs generates the whole content afresh for a read at offset
// zero, so a second read could see another snapshot when two callers share
// the descriptor. Files that do not fit buf are an error, as for readAt.
func preadAll(fd int, buf []byte) ([]byte, error) {
	for {
		n, err := unix.Pread(fd, buf, 0)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, err
		case n == len(buf):
			return nil, unix.EFBIG
		}
		return buf[:n], nil
	}
}

// readPids appends the pids listed in the cgroup.procs of the group at
// dirfd to dst. An empty group costs one open, one read and one close.
func readPids(dirfd int, dst []int) ([]int, error) {
	fd, err := openat(dirfd, ctlProcs, unix.O_RDONLY)
	if err != nil {
		return dst, err
	}
	defer unix.Close(fd)
	var stack [512]byte
	buf := stack[:]
	var partial int64 // digits of a pid split across two reads
	inNum := false
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return dst, err
		}
		if n == 0 {
			if inNum {
				dst = append(dst, int(partial))
			}
			return dst, nil
		}
		for _, c := range buf[:n] {
			if c >= '0' && c <= '9' {
				partial = partial*10 + int64(c-'0')
				inNum = true
				continue
			}
			if inNum {
				dst = append(dst, int(partial))
			}
			partial, inNum = 0, false
		}
	}
}

// existsAt reports whether name exists beneath dir.
func existsAt(dir, name string) bool {
	_, err := os.Lstat(dir + "/" + name)
	return err == nil
}

// backoff sleeps a little longer on each call, from 50µs up to 10ms: the
// waits below are usually over within a few hundred microseconds, and a
// slow one must not spin.
type backoff struct{ d time.Duration }

func (b *backoff) sleep() {
	if b.d == 0 {
		b.d = 50 * time.Microsecond
	}
	time.Sleep(b.d)
	b.d = min(2*b.d, 10*time.Millisecond)
}
