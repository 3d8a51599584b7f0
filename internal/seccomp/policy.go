package seccomp

import (
	"runtime"
	"slices"
)

// denied lists the system calls refused with EPERM whatever their
// arguments. Names follow the kernel's syscall tables. A name missing on an
// architecture must be listed in that architecture's absent set.
var denied = []string{
	// Mounts and the new mount API: the sandbox's filesystem view is fixed
	// before user code runs and must stay so.
	"mount", "umount2", "pivot_root", "chroot",
	"open_tree", "open_tree_attr", "move_mount", "mount_setattr",
	"fsopen", "fsconfig", "fsmount", "fspick",
	// Reading or writing other processes' memory, or acting on it through
	// a pidfd (advice, reaping a dying process's memory).
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"process_madvise", "process_mrelease",
	// Loading code into the kernel or replacing it.
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	// Large kernel attack surface with a long CVE record and no use in a
	// judge: eBPF, perf, the key store, userfaultfd (used to win kernel
	// races) and io_uring, whose operations never pass through seccomp.
	"bpf", "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	// The legacy AIO interface: an old, seldom used subsystem with its own
	// CVE record, whose contexts are charged to a host-wide limit
	// (fs.aio-max-nr) that one sandbox could exhaust for every other
	// process. No runtime we ship needs it: glibc's POSIX aio uses threads
	// and libuv falls back from io_uring to its thread pool.
	"io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents", "io_pgetevents",
	// NUMA memory policy and page migration: placement on the host's
	// memory nodes is the host's business, and this code has had its share
	// of kernel bugs. get_mempolicy goes too, as in Docker's default
	// profile, so that libnuma's numa_available() reports no NUMA (it
	// treats EPERM like ENOSYS) instead of failing later.
	"mbind", "get_mempolicy", "set_mempolicy", "set_mempolicy_home_node",
	"migrate_pages", "move_pages",
	// Memory the kernel removes from its own direct map, fragmenting it
	// for the whole host; no use to a program here.
	"memfd_secret",
	// The x86 local descriptor table: 16-bit segments for old code and
	// emulators, and the entry point of several kernel exploits.
	"modify_ldt",
	// New namespaces, and user namespaces above all, expose kernel code
	// written for privileged callers.
	"setns", "unshare",
	// Host-wide state: swap, power, clocks, accounting, quotas, the
	// kernel log, the controlling terminal and port I/O.
	"swapon", "swapoff", "reboot",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"acct", "quotactl", "quotactl_fd", "syslog", "vhangup", "iopl", "ioperm",
	// Obsolete interfaces kept only for old binaries.
	"uselib", "ustat", "sysfs", "_sysctl", "nfsservctl", "lookup_dcookie",
	// File handles bypass path lookup and so the sandbox's mount view
	// (the "shocker" container escape).
	"open_by_handle_at", "name_to_handle_at",
	// Filesystem-wide event monitoring.
	"fanotify_init",
}

// allowedSocketFamilies are the address families socket(2) and
// socketpair(2) may create: local sockets and IPv4/IPv6, which the
// sandbox's empty network namespace confines to loopback. Every other
// family fails with EAFNOSUPPORT, the kernel's own answer for a family it
// was built without, which libraries already handle (glibc's getaddrinfo
// falls back when its netlink socket fails, for one). The others are not
// needed by any toolchain the project runs, and several are dangerous:
// AF_VSOCK is not namespaced and reaches the hypervisor's services on a
// VM host, AF_NETLINK, AF_PACKET, AF_KEY, AF_ALG, AF_BLUETOOTH, AF_XDP
// and the rest are large kernel surfaces with long CVE records, and
// asking for a family the kernel has not loaded makes it load the module.
//
// The values are AF_UNIX, AF_INET and AF_INET6, the same on every Linux
// architecture.
var allowedSocketFamilies = []uint32{1, 2, 10}

// Only these personality(2) values are accepted: PER_LINUX, PER_LINUX32,
// each with UNAME26, and the query 0xffffffff. Other flags such as
// READ_IMPLIES_EXEC or ADDR_NO_RANDOMIZE weaken exploit mitigations.
var allowedPersonalities = []uint32{0x0, 0x8, 0x20000, 0x20008, 0xffffffff}

// DeniedSyscalls lists the names of the syscalls the policy refuses outright
// (with EPERM, whatever their arguments) on the architecture this binary
// runs on, sorted. It returns nil on an unsupported architecture. clone3,
// answered with ENOSYS, and the argument checks on clone, ioctl,
// personality, socket and socketpair are not included.
func DeniedSyscalls() []string {
	return deniedSyscallsFor(runtime.GOARCH)
}

func deniedSyscallsFor(goarch string) []string {
	a, ok := archs[goarch]
	if !ok {
		return nil
	}
	var names []string
	for _, name := range denied {
		if _, ok := a.nr[name]; ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// socketFamilyCalls names the system calls whose first argument is an
// address family checked against allowedSocketFamilies. socketcall(2),
// which multiplexes the socket calls on 32-bit x86 and other older ABIs,
// exists on neither amd64 nor arm64, and the 32-bit ABIs are refused
// outright, so no other path creates a socket.
var socketFamilyCalls = []string{"socket", "socketpair"}

// SocketFamilyCalls names the system calls whose first argument, an address
// family, must be one of SocketFamilies.
func SocketFamilyCalls() []string { return slices.Clone(socketFamilyCalls) }

// SocketFamilies returns the address families socket(2) and socketpair(2)
// may create, sorted; every other family fails with EAFNOSUPPORT.
func SocketFamilies() []uint32 {
	return slices.Sorted(slices.Values(allowedSocketFamilies))
}
