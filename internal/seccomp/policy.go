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
	// Reading or writing other processes' memory.
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	// Loading code into the kernel or replacing it.
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	// Large kernel attack surface with a long CVE record and no use in a
	// judge: eBPF, perf, the key store, userfaultfd (used to win kernel
	// races) and io_uring, whose operations never pass through seccomp.
	"bpf", "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
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

// Only these personality(2) values are accepted: PER_LINUX, PER_LINUX32,
// each with UNAME26, and the query 0xffffffff. Other flags such as
// READ_IMPLIES_EXEC or ADDR_NO_RANDOMIZE weaken exploit mitigations.
var allowedPersonalities = []uint32{0x0, 0x8, 0x20000, 0x20008, 0xffffffff}

// DeniedSyscalls lists the names of the syscalls the policy refuses outright
// (with EPERM, whatever their arguments) on the architecture this binary
// runs on, sorted. It returns nil on an unsupported architecture. clone3,
// answered with ENOSYS, and the argument checks on clone, ioctl and
// personality are not included.
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
