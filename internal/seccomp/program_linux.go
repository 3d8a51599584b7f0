package seccomp

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Offsets into struct seccomp_data (<linux/seccomp.h>):
// int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// argLow is the offset of the low 32 bits of args[i]. Every supported
// architecture is little-endian, so they come first.
func argLow(i int) uint32 { return offArgs + 8*uint32(i) }

// bpfMaxInsns is BPF_MAXINSNS, the kernel's limit on a classic BPF program.
const bpfMaxInsns = 4096

// Actions the filter returns. EPERM, ENOSYS and EAFNOSUPPORT have the same
// numbers on every supported architecture (amd64 and arm64 share the
// generic errno table).
const (
	retAllow        = unix.SECCOMP_RET_ALLOW
	retKillProcess  = unix.SECCOMP_RET_KILL_PROCESS
	retEPERM        = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)&unix.SECCOMP_RET_DATA
	retENOSYS       = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)&unix.SECCOMP_RET_DATA
	retEAFNOSUPPORT = unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT)&unix.SECCOMP_RET_DATA
)

// cloneNamespaceFlags are the clone(2) flags that create namespaces. The
// kernel uses only the low 32 bits of clone's flags, and all of these live
// there.
//
// CLONE_NEWTIME (0x80) overlaps CSIGNAL, the exit-signal byte of clone(2):
// the kernel reads it as part of the signal number there, so a time
// namespace can only come from clone3 or unshare, both refused. Keeping it in
// the mask still costs nothing, since it only refuses exit signals of 128
// and above, which no valid program passes.
const cloneNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// Program returns the filter for the architecture this binary runs on.
func Program() ([]unix.SockFilter, error) {
	return ProgramFor(runtime.GOARCH)
}

// ProgramFor builds the filter for the named GOARCH ("amd64" or "arm64").
func ProgramFor(goarch string) ([]unix.SockFilter, error) {
	a, ok := archs[goarch]
	if !ok {
		return nil, fmt.Errorf("unable to build seccomp filter for %q: %w", goarch, ErrUnsupportedArch)
	}
	nr := func(name string) (uint32, error) {
		n, ok := a.nr[name]
		if !ok {
			return 0, fmt.Errorf("unable to build seccomp filter for %s: no number for %s", goarch, name)
		}
		return n, nil
	}

	var p asm
	// The arch check comes first: the same number means different calls
	// under another ABI (int 0x80 on amd64, AArch32 on arm64), and a
	// denylist written for one ABI does not hold for the other.
	p.load(offArch)
	p.jeq(a.auditArch, next, lblKill)
	p.load(offNr)
	if a.x32 {
		// x32 calls carry the native audit arch but reach other entry
		// points. BPF compares unsigned, so negative numbers such as -1
		// are killed too; no honest program makes them.
		p.jge(x32SyscallBit, lblKill, next)
	}

	// Dispatch on nr alone, loading arguments only in the blocks below:
	// that lets the kernel (5.11+) prove the filter always allows every
	// other call and skip running it for them.
	targets := make(map[uint32]label)
	add := func(name string, to label) error {
		n, err := nr(name)
		if err != nil {
			return err
		}
		if other, dup := targets[n]; dup {
			return fmt.Errorf("unable to build seccomp filter for %s: %s has number %d, already sent to label %d", goarch, name, n, other)
		}
		targets[n] = to
		return nil
	}
	for _, special := range []struct {
		name string
		to   label
	}{
		{"clone", lblClone},
		{"clone3", lblENOSYS},
		{"ioctl", lblIoctl},
		{"personality", lblPersonality},
		{"socket", lblSocket},
		{"socketpair", lblSocket},
	} {
		if err := add(special.name, special.to); err != nil {
			return nil, err
		}
	}
	for _, name := range denied {
		if a.absent[name] {
			continue
		}
		if err := add(name, lblEPERM); err != nil {
			return nil, err
		}
	}
	if err := p.dispatch(spans(targets, lblAllow)); err != nil {
		return nil, fmt.Errorf("unable to build seccomp filter for %s: %w", goarch, err)
	}

	// clone: refuse new namespaces, allow fork, vfork and threads. The flags
	// are args[0] on both amd64 and arm64 (CLONE_BACKWARDS on arm64 swaps
	// only the tls and child_tid arguments).
	p.mark(lblClone)
	p.load(argLow(0))
	p.jset(cloneNamespaceFlags, lblEPERM, lblAllow)

	// ioctl: TIOCSTI pushes bytes into a terminal's input queue and
	// TIOCLINUX can paste the console selection, so code that inherits a
	// terminal could type commands into the shell that started it once the
	// sandbox exits (CVE-2016-7545 and relatives). The kernel truncates the
	// request to 32 bits (an unsigned int in the VFS), so comparing the low
	// word is exact.
	p.mark(lblIoctl)
	p.load(argLow(1))
	p.jeq(a.tiocsti, lblEPERM, next)
	p.jeq(a.tioclinux, lblEPERM, lblAllow)

	// personality takes an unsigned int, so again only the low word counts.
	p.mark(lblPersonality)
	p.load(argLow(0))
	p.oneOf(allowedPersonalities, lblAllow, lblEPERM)

	// socket and socketpair: only the allowed address families. The family
	// is an int in the kernel, so only the low word counts (upper bits do
	// not turn a refused family into an allowed one, nor the reverse), and
	// it is args[0] of both calls on both architectures.
	p.mark(lblSocket)
	p.load(argLow(0))
	p.oneOf(allowedSocketFamilies, lblAllow, lblEAFNOSUPPORT)

	p.mark(lblAllow)
	p.ret(retAllow)
	p.mark(lblEPERM)
	p.ret(retEPERM)
	p.mark(lblENOSYS)
	p.ret(retENOSYS)
	p.mark(lblEAFNOSUPPORT)
	p.ret(retEAFNOSUPPORT)
	p.mark(lblKill)
	p.ret(retKillProcess)

	prog, err := p.assemble()
	if err != nil {
		return nil, fmt.Errorf("unable to build seccomp filter for %s: %w", goarch, err)
	}
	return prog, nil
}
