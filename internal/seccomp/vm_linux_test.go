package seccomp

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// ordinary lists system calls every program needs, with their numbers per
// architecture; table_<arch>_test.go checks them against unix.SYS_*.
var ordinary = map[string]map[string]uint32{
	"amd64": {
		"read": 0, "write": 1, "open": 2, "close": 3, "stat": 4, "fstat": 5,
		"lseek": 8, "mmap": 9, "mprotect": 10, "munmap": 11, "brk": 12,
		"rt_sigaction": 13, "rt_sigprocmask": 14, "rt_sigreturn": 15,
		"access": 21, "pipe": 22, "sched_yield": 24, "mremap": 25, "madvise": 28,
		"dup2": 33, "nanosleep": 35, "getpid": 39, "socket": 41, "fork": 57,
		"vfork": 58, "execve": 59, "exit": 60, "wait4": 61, "kill": 62,
		"uname": 63, "fcntl": 72, "getcwd": 79, "chdir": 80, "readlink": 89,
		"sigaltstack": 131, "prctl": 157, "arch_prctl": 158, "gettid": 186,
		"futex": 202, "getdents64": 217, "set_tid_address": 218,
		"clock_gettime": 228, "exit_group": 231, "epoll_wait": 232,
		"tgkill": 234, "openat": 257, "newfstatat": 262, "set_robust_list": 273,
		"pipe2": 293, "prlimit64": 302, "seccomp": 317, "getrandom": 318,
		"execveat": 322, "statx": 332, "rseq": 334,
		"landlock_create_ruleset": 444, "landlock_add_rule": 445,
		"landlock_restrict_self": 446, "listmount": 458,
	},
	"arm64": {
		"getcwd": 17, "epoll_pwait": 22, "dup3": 24, "fcntl": 25,
		"mkdirat": 34, "unlinkat": 35, "faccessat": 48, "chdir": 49,
		"openat": 56, "close": 57, "pipe2": 59, "getdents64": 61, "lseek": 62,
		"read": 63, "write": 64, "pselect6": 72, "ppoll": 73, "readlinkat": 78,
		"newfstatat": 79, "fstat": 80, "exit": 93, "exit_group": 94,
		"set_tid_address": 96, "futex": 98, "set_robust_list": 99,
		"nanosleep": 101, "clock_gettime": 113, "sched_yield": 124, "kill": 129,
		"tgkill": 131, "sigaltstack": 132, "rt_sigaction": 134,
		"rt_sigprocmask": 135, "rt_sigreturn": 139, "uname": 160, "prctl": 167,
		"getpid": 172, "gettid": 178, "socket": 198, "brk": 214, "munmap": 215,
		"mremap": 216, "execve": 221, "mmap": 222, "mprotect": 226,
		"madvise": 233, "wait4": 260, "prlimit64": 261, "renameat2": 276,
		"seccomp": 277, "getrandom": 278, "execveat": 281, "statx": 291,
		"rseq": 293, "landlock_create_ruleset": 444, "landlock_add_rule": 445,
		"landlock_restrict_self": 446, "listmount": 458,
	},
}

// fionread is FIONREAD, which x/sys/unix does not carry.
const fionread = 0x541b

var goarchs = []string{"amd64", "arm64"}

type vmCase struct {
	name string
	d    seccompData
	want uint32
}

// policyCases spells out the policy for goarch, case by case.
func policyCases(goarch string) []vmCase {
	a := archs[goarch]
	native := a.auditArch
	call := func(name string, args ...uint64) seccompData {
		d := seccompData{nr: int32(a.nr[name]), arch: native, ip: 0x401000}
		copy(d.args[:], args)
		return d
	}
	var cases []vmCase
	add := func(name string, d seccompData, want uint32) {
		cases = append(cases, vmCase{name, d, want})
	}

	for _, name := range deniedSyscallsFor(goarch) {
		// Arguments must not matter for an outright denial.
		add(name, call(name), retEPERM)
		add(name+"/args", call(name, ^uint64(0), 1, 2, 3, 4, 5), retEPERM)
	}
	for name, nr := range ordinary[goarch] {
		d := seccompData{nr: int32(nr), arch: native, args: [6]uint64{1, 2, 3}}
		add(name, d, retAllow)
	}

	// clone: each namespace flag alone and with the usual exit signal.
	const sigchld = uint64(unix.SIGCHLD)
	for _, f := range []struct {
		name string
		flag uint64
	}{
		{"CLONE_NEWNS", unix.CLONE_NEWNS},
		{"CLONE_NEWUTS", unix.CLONE_NEWUTS},
		{"CLONE_NEWIPC", unix.CLONE_NEWIPC},
		{"CLONE_NEWUSER", unix.CLONE_NEWUSER},
		{"CLONE_NEWPID", unix.CLONE_NEWPID},
		{"CLONE_NEWNET", unix.CLONE_NEWNET},
		{"CLONE_NEWCGROUP", unix.CLONE_NEWCGROUP},
		{"CLONE_NEWTIME", unix.CLONE_NEWTIME},
	} {
		add("clone/"+f.name, call("clone", f.flag), retEPERM)
		add("clone/"+f.name+"|SIGCHLD", call("clone", f.flag|sigchld), retEPERM)
		// Upper bits are ignored by the kernel and must not hide the flag.
		add("clone/"+f.name+"|high", call("clone", f.flag|0xffffffff00000000), retEPERM)
	}
	const threadFlags = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND |
		unix.CLONE_THREAD | unix.CLONE_SYSVSEM | unix.CLONE_SETTLS |
		unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID
	add("clone/thread", call("clone", threadFlags, 0x7f0000000000), retAllow)
	add("clone/fork", call("clone", sigchld), retAllow)
	add("clone/vfork", call("clone", unix.CLONE_VM|unix.CLONE_VFORK|sigchld), retAllow)
	add("clone/pidfd", call("clone", unix.CLONE_PIDFD|sigchld), retAllow)
	// The kernel reads only the low 32 bits of clone's flags.
	add("clone/newuser-in-high-word", call("clone", uint64(unix.CLONE_NEWUSER)<<32|sigchld), retAllow)
	// A namespace flag in another argument is not a request for one.
	add("clone/flag-in-arg1", call("clone", sigchld, unix.CLONE_NEWUSER), retAllow)

	add("clone3", call("clone3", 0x7ffc0000, 88), retENOSYS)
	add("clone3/no-args", call("clone3"), retENOSYS)

	add("ioctl/TIOCSTI", call("ioctl", 0, unix.TIOCSTI, 0x7ffc0000), retEPERM)
	add("ioctl/TIOCLINUX", call("ioctl", 0, unix.TIOCLINUX), retEPERM)
	add("ioctl/TIOCSTI|high", call("ioctl", 0, 0xdead00000000|unix.TIOCSTI), retEPERM)
	add("ioctl/TCGETS", call("ioctl", 0, unix.TCGETS), retAllow)
	add("ioctl/TIOCGWINSZ", call("ioctl", 1, unix.TIOCGWINSZ), retAllow)
	add("ioctl/FIONREAD", call("ioctl", 3, fionread), retAllow)
	add("ioctl/TIOCSTI-as-fd", call("ioctl", unix.TIOCSTI, unix.TCGETS), retAllow)

	for _, v := range []uint64{0, 0x8, 0x20000, 0x20008, 0xffffffff, 0xffffffff00000000} {
		add(fmt.Sprintf("personality/%#x", v), call("personality", v), retAllow)
	}
	// From <linux/personality.h>, which x/sys/unix does not carry.
	const (
		addrNoRandomize  = 0x0040000
		mmapPageZero     = 0x0100000
		addrCompatLayout = 0x0200000
		readImpliesExec  = 0x0400000
		perBSD           = 0x6
	)
	for _, v := range []uint64{
		addrNoRandomize, readImpliesExec, addrCompatLayout, mmapPageZero,
		perBSD, 0x8 | addrNoRandomize, 0xfffffffe,
	} {
		add(fmt.Sprintf("personality/%#x", v), call("personality", v), retEPERM)
	}

	// socket and socketpair: the allowed families with any type and
	// protocol, and every other family, with types and protocols that
	// would reach it.
	for _, sc := range []string{"socket", "socketpair"} {
		for _, fam := range []uint64{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6} {
			add(fmt.Sprintf("%s/%d", sc, fam), call(sc, fam, unix.SOCK_STREAM, 0), retAllow)
			add(fmt.Sprintf("%s/%d/raw", sc, fam), call(sc, fam, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 255, 0x7ffc0000), retAllow)
			// The kernel reads the family as an int: high bits change nothing.
			add(fmt.Sprintf("%s/%d|high", sc, fam), call(sc, fam|0xffffffff00000000, unix.SOCK_DGRAM), retAllow)
		}
		for fam := uint64(0); fam < 64; fam++ {
			if fam == unix.AF_UNIX || fam == unix.AF_INET || fam == unix.AF_INET6 {
				continue
			}
			add(fmt.Sprintf("%s/%d", sc, fam), call(sc, fam, unix.SOCK_RAW, 0), retEAFNOSUPPORT)
		}
		for _, c := range []struct {
			name            string
			fam, typ, proto uint64
		}{
			{"AF_VSOCK", unix.AF_VSOCK, unix.SOCK_STREAM, 0},
			{"AF_NETLINK/ROUTE", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE},
			{"AF_NETLINK/AUDIT", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT},
			{"AF_NETLINK/KOBJECT_UEVENT", unix.AF_NETLINK, unix.SOCK_DGRAM, unix.NETLINK_KOBJECT_UEVENT},
			{"AF_PACKET", unix.AF_PACKET, unix.SOCK_RAW, 0x0300}, // htons(ETH_P_ALL)
			{"AF_KEY", unix.AF_KEY, unix.SOCK_RAW, 2},            // PF_KEY_V2
			{"AF_ALG", unix.AF_ALG, unix.SOCK_SEQPACKET, 0},
			{"AF_BLUETOOTH", unix.AF_BLUETOOTH, unix.SOCK_RAW, 1}, // BTPROTO_HCI
			{"AF_XDP", unix.AF_XDP, unix.SOCK_RAW, 0},
			{"AF_UNSPEC", unix.AF_UNSPEC, unix.SOCK_STREAM, 0},
			{"AF_MAX", unix.AF_MAX, unix.SOCK_STREAM, 0},
			{"255", 255, unix.SOCK_STREAM, 0},
			{"-1", ^uint64(0), unix.SOCK_STREAM, 0},
			{"int-min|AF_INET", 0x80000000 | unix.AF_INET, unix.SOCK_STREAM, 0},
			{"65536|AF_INET", 0x10000 | unix.AF_INET, unix.SOCK_STREAM, 0},
			{"AF_VSOCK|high", 0x200000000 | unix.AF_VSOCK, unix.SOCK_STREAM, 0},
			// An allowed family in another argument is not the family.
			{"AF_VSOCK/type-AF_UNIX", unix.AF_VSOCK, unix.AF_UNIX, unix.AF_INET},
		} {
			add(sc+"/"+c.name, call(sc, c.fam, c.typ, c.proto), retEAFNOSUPPORT)
		}
	}

	// Another ABI's numbers mean other calls: read under the 32-bit ABIs
	// is 3, which is close(2) here.
	for _, arch := range []struct {
		name string
		val  uint32
	}{
		{"i386", unix.AUDIT_ARCH_I386},
		{"arm", unix.AUDIT_ARCH_ARM},
		{"x86_64", unix.AUDIT_ARCH_X86_64},
		{"aarch64", unix.AUDIT_ARCH_AARCH64},
		{"zero", 0},
	} {
		if arch.val == native {
			continue
		}
		for _, nr := range []int32{3, 11, 0, -1} {
			d := seccompData{nr: nr, arch: arch.val}
			add(fmt.Sprintf("arch-%s/nr-%d", arch.name, nr), d, retKillProcess)
		}
	}

	if a.x32 {
		for name, nr := range map[string]uint32{"read": 0, "getpid": 39, "mount": 165, "execve": 520} {
			d := seccompData{nr: int32(nr | x32SyscallBit), arch: native}
			add("x32/"+name, d, retKillProcess)
		}
		add("x32/-1", seccompData{nr: -1, arch: native}, retKillProcess)
	} else {
		// Without x32 such numbers are unknown and the kernel answers
		// ENOSYS by itself.
		add("high-nr", seccompData{nr: x32SyscallBit | 39, arch: native}, retAllow)
		add("-1", seccompData{nr: -1, arch: native}, retAllow)
	}
	add("unknown-nr", seccompData{nr: 1000, arch: native}, retAllow)
	return cases
}

func TestFilterInVM(t *testing.T) {
	for _, goarch := range goarchs {
		t.Run(goarch, func(t *testing.T) {
			vm := newVM(t, goarch)
			for _, c := range policyCases(goarch) {
				if got := run(t, vm, c.d); got != c.want {
					t.Errorf("%s (nr %d, arch %#x, args %#x): got %s, want %s",
						c.name, c.d.nr, c.d.arch, c.d.args, actionName(got), actionName(c.want))
				}
			}
		})
	}
}

// TestReferenceAgreesWithCases keeps the fuzzer's reference model honest:
// it must give the spelled-out answer for every hand-written case.
func TestReferenceAgreesWithCases(t *testing.T) {
	for _, goarch := range goarchs {
		for _, c := range policyCases(goarch) {
			if got := reference(goarch, c.d); got != c.want {
				t.Errorf("%s/%s: reference says %s, want %s", goarch, c.name, actionName(got), actionName(c.want))
			}
		}
	}
}

// TestCrossArchNumbersDiffer guards the per-arch tables: if ProgramFor
// ignored goarch, the two filters would deny the same numbers.
func TestCrossArchNumbersDiffer(t *testing.T) {
	amd, arm := newVM(t, "amd64"), newVM(t, "arm64")
	// 165 is mount on amd64 and getrusage on arm64.
	d := seccompData{nr: 165}
	d.arch = auditArchX86_64
	if got := run(t, amd, d); got != retEPERM {
		t.Errorf("amd64 nr 165: got %s, want ERRNO(EPERM)", actionName(got))
	}
	d.arch = auditArchAARCH64
	if got := run(t, arm, d); got != retAllow {
		t.Errorf("arm64 nr 165: got %s, want ALLOW", actionName(got))
	}
}
