//go:build linux

// Package threadid runs a function on the calling goroutine's OS thread
// with that thread, and only it, given another host user's ids: a backend
// running as root starts sandboxes or sets their limits as the user that
// owns them, so that the kernel charges that user and not root.
//
// The switch uses raw system calls, which change one thread
// (syscall.Setresuid would change every thread of the process). The saved
// ids stay 0, so that the thread becomes root again afterwards; the
// goroutine is locked to its thread meanwhile, so nothing else runs with
// the borrowed ids. If the ids cannot be restored the thread stays locked
// and ends with its goroutine.
package threadid

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// As runs f with the thread's real and effective uid and gid set to id
// and no supplementary group, and without capabilities: what id itself
// may do.
func As(id int, f func() error) error {
	return run(id, false, f)
}

// Privileged runs f as As does, but with the thread's capabilities kept
// effective: f acts as id for what the kernel charges or records (the
// owner of a user namespace the thread creates, the owner of its files),
// with root's privileges for everything else.
func Privileged(id int, f func() error) error {
	return run(id, true, f)
}

func run(id int, keepCaps bool, f func() error) error {
	if id <= 0 {
		return fmt.Errorf("threadid: invalid host id %d", id)
	}
	runtime.LockOSThread()
	groups, err := unix.Getgroups()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("getgroups: %w", err)
	}
	dumpable, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("get dumpable: %w", err)
	}
	err = switchTo(id, keepCaps)
	if err == nil {
		err = f()
	}
	if !restore(groups) {
		// Locked for good: the thread ends with the goroutine.
		return fmt.Errorf("threadid: unable to restore the thread's ids (%w)", err)
	}
	// Changing the effective uid made the process undumpable (the
	// kernel's rule for any process whose ids change), which would make
	// its /proc files root's and stop core dumps.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, uintptr(dumpable), 0, 0, 0)
	runtime.UnlockOSThread()
	return err
}

// switchTo gives the calling thread id's ids, and with keepCaps the
// capabilities it had: dropping euid 0 empties the effective set, and
// the permitted set, kept while the saved uid is 0, refills it.
func switchTo(id int, keepCaps bool) error {
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(id), uintptr(id), ^uintptr(0)); e != 0 {
		return fmt.Errorf("setresgid: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(id), uintptr(id), ^uintptr(0)); e != 0 {
		return fmt.Errorf("setresuid: %w", e)
	}
	if !keepCaps {
		return nil
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	for i := range data {
		data[i].Effective = data[i].Permitted
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// restore makes the calling thread root again, with its supplementary
// groups; the effective capabilities come back with euid 0.
func restore(groups []int) bool {
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, 0, 0, ^uintptr(0)); e != 0 {
		return false
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, 0, 0, ^uintptr(0)); e != 0 {
		return false
	}
	gids := make([]uint32, len(groups))
	for i, g := range groups {
		gids[i] = uint32(g) //nolint:gosec // gids are 32-bit in the kernel
	}
	if len(gids) == 0 {
		_, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0)
		return e == 0
	}
	_, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(gids)), uintptr(unsafe.Pointer(&gids[0])), 0) //nolint:gosec // the raw call (this thread only) takes the array
	return e == 0
}
