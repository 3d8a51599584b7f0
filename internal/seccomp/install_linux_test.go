package seccomp

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Install loads prog into the calling process, as the native backend's C
// init does, so that the kernel tests run the filter Go built. It sets
// no_new_privs first, which lets an unprivileged process install a filter
// and keeps a setuid binary from running with privileges under a filter it
// did not expect.
//
// The filter is installed with SECCOMP_FILTER_FLAG_TSYNC, so every thread of
// the process gets it: goroutines move between threads, and a filter on one
// thread alone would leave the others unfiltered. The filter cannot be
// removed again.
func Install(prog []unix.SockFilter) error {
	if len(prog) == 0 || len(prog) > bpfMaxInsns {
		return fmt.Errorf("unable to install seccomp filter: %d instructions, want 1 to %d", len(prog), bpfMaxInsns)
	}

	// no_new_privs is per thread until TSYNC spreads it; the seccomp call
	// must come from the thread that has it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("unable to set no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP,
		unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog))) //nolint:gosec // the program outlives the call (KeepAlive below)
	runtime.KeepAlive(prog)
	if errno != 0 {
		return fmt.Errorf("unable to install seccomp filter: %w", errno)
	}
	if r != 0 {
		// With TSYNC a positive result is the id of a thread that could not
		// take the filter (it already runs a diverging one).
		return fmt.Errorf("unable to install seccomp filter: thread %d cannot be synchronised", r)
	}
	return nil
}
