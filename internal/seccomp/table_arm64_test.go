package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestARM64TableMatchesUnix(t *testing.T) {
	checkBuildArchTable(t, "arm64", map[string]uint32{
		// Policy.
		"ioctl": unix.SYS_IOCTL, "clone": unix.SYS_CLONE, "clone3": unix.SYS_CLONE3,
		"personality": unix.SYS_PERSONALITY,
		"mount":       unix.SYS_MOUNT, "umount2": unix.SYS_UMOUNT2, "pivot_root": unix.SYS_PIVOT_ROOT,
		"chroot": unix.SYS_CHROOT, "open_tree": unix.SYS_OPEN_TREE, "open_tree_attr": unix.SYS_OPEN_TREE_ATTR,
		"move_mount": unix.SYS_MOVE_MOUNT, "mount_setattr": unix.SYS_MOUNT_SETATTR,
		"fsopen": unix.SYS_FSOPEN, "fsconfig": unix.SYS_FSCONFIG, "fsmount": unix.SYS_FSMOUNT,
		"fspick": unix.SYS_FSPICK, "ptrace": unix.SYS_PTRACE,
		"process_vm_readv": unix.SYS_PROCESS_VM_READV, "process_vm_writev": unix.SYS_PROCESS_VM_WRITEV,
		"kcmp": unix.SYS_KCMP, "pidfd_getfd": unix.SYS_PIDFD_GETFD,
		"kexec_load": unix.SYS_KEXEC_LOAD, "kexec_file_load": unix.SYS_KEXEC_FILE_LOAD,
		"init_module": unix.SYS_INIT_MODULE, "finit_module": unix.SYS_FINIT_MODULE,
		"delete_module": unix.SYS_DELETE_MODULE, "bpf": unix.SYS_BPF,
		"perf_event_open": unix.SYS_PERF_EVENT_OPEN, "keyctl": unix.SYS_KEYCTL,
		"add_key": unix.SYS_ADD_KEY, "request_key": unix.SYS_REQUEST_KEY,
		"userfaultfd": unix.SYS_USERFAULTFD, "io_uring_setup": unix.SYS_IO_URING_SETUP,
		"io_uring_enter": unix.SYS_IO_URING_ENTER, "io_uring_register": unix.SYS_IO_URING_REGISTER,
		"setns": unix.SYS_SETNS, "unshare": unix.SYS_UNSHARE, "swapon": unix.SYS_SWAPON,
		"swapoff": unix.SYS_SWAPOFF, "reboot": unix.SYS_REBOOT,
		"settimeofday": unix.SYS_SETTIMEOFDAY, "clock_settime": unix.SYS_CLOCK_SETTIME,
		"clock_adjtime": unix.SYS_CLOCK_ADJTIME, "adjtimex": unix.SYS_ADJTIMEX,
		"acct": unix.SYS_ACCT, "quotactl": unix.SYS_QUOTACTL, "quotactl_fd": unix.SYS_QUOTACTL_FD,
		"syslog": unix.SYS_SYSLOG, "vhangup": unix.SYS_VHANGUP, "nfsservctl": unix.SYS_NFSSERVCTL,
		"lookup_dcookie": unix.SYS_LOOKUP_DCOOKIE, "open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT,
		"name_to_handle_at": unix.SYS_NAME_TO_HANDLE_AT, "fanotify_init": unix.SYS_FANOTIFY_INIT,
		"socketpair": unix.SYS_SOCKETPAIR,
		"io_setup":   unix.SYS_IO_SETUP, "io_destroy": unix.SYS_IO_DESTROY, "io_submit": unix.SYS_IO_SUBMIT,
		"io_cancel": unix.SYS_IO_CANCEL, "io_getevents": unix.SYS_IO_GETEVENTS,
		"io_pgetevents": unix.SYS_IO_PGETEVENTS, "mbind": unix.SYS_MBIND,
		"get_mempolicy": unix.SYS_GET_MEMPOLICY, "set_mempolicy": unix.SYS_SET_MEMPOLICY,
		"set_mempolicy_home_node": unix.SYS_SET_MEMPOLICY_HOME_NODE,
		"migrate_pages":           unix.SYS_MIGRATE_PAGES, "move_pages": unix.SYS_MOVE_PAGES,
		"memfd_secret": unix.SYS_MEMFD_SECRET, "process_madvise": unix.SYS_PROCESS_MADVISE,
		"process_mrelease": unix.SYS_PROCESS_MRELEASE,

		// Ordinary calls used by the VM tests.
		"getcwd": unix.SYS_GETCWD, "epoll_pwait": unix.SYS_EPOLL_PWAIT, "dup3": unix.SYS_DUP3,
		"fcntl": unix.SYS_FCNTL, "mkdirat": unix.SYS_MKDIRAT, "unlinkat": unix.SYS_UNLINKAT,
		"faccessat": unix.SYS_FACCESSAT, "chdir": unix.SYS_CHDIR, "openat": unix.SYS_OPENAT,
		"close": unix.SYS_CLOSE, "pipe2": unix.SYS_PIPE2, "getdents64": unix.SYS_GETDENTS64,
		"lseek": unix.SYS_LSEEK, "read": unix.SYS_READ, "write": unix.SYS_WRITE,
		"pselect6": unix.SYS_PSELECT6, "ppoll": unix.SYS_PPOLL, "readlinkat": unix.SYS_READLINKAT,
		"newfstatat": unix.SYS_NEWFSTATAT, "fstat": unix.SYS_FSTAT, "exit": unix.SYS_EXIT,
		"exit_group": unix.SYS_EXIT_GROUP, "set_tid_address": unix.SYS_SET_TID_ADDRESS,
		"futex": unix.SYS_FUTEX, "set_robust_list": unix.SYS_SET_ROBUST_LIST,
		"nanosleep": unix.SYS_NANOSLEEP, "clock_gettime": unix.SYS_CLOCK_GETTIME,
		"sched_yield": unix.SYS_SCHED_YIELD, "kill": unix.SYS_KILL, "tgkill": unix.SYS_TGKILL,
		"sigaltstack": unix.SYS_SIGALTSTACK, "rt_sigaction": unix.SYS_RT_SIGACTION,
		"rt_sigprocmask": unix.SYS_RT_SIGPROCMASK, "rt_sigreturn": unix.SYS_RT_SIGRETURN,
		"uname": unix.SYS_UNAME, "prctl": unix.SYS_PRCTL, "getpid": unix.SYS_GETPID,
		"gettid": unix.SYS_GETTID, "socket": unix.SYS_SOCKET, "brk": unix.SYS_BRK,
		"munmap": unix.SYS_MUNMAP, "mremap": unix.SYS_MREMAP, "execve": unix.SYS_EXECVE,
		"mmap": unix.SYS_MMAP, "mprotect": unix.SYS_MPROTECT, "madvise": unix.SYS_MADVISE,
		"wait4": unix.SYS_WAIT4, "prlimit64": unix.SYS_PRLIMIT64, "renameat2": unix.SYS_RENAMEAT2,
		"seccomp": unix.SYS_SECCOMP, "getrandom": unix.SYS_GETRANDOM, "execveat": unix.SYS_EXECVEAT,
		"statx": unix.SYS_STATX, "rseq": unix.SYS_RSEQ,
		"landlock_create_ruleset": unix.SYS_LANDLOCK_CREATE_RULESET,
		"landlock_add_rule":       unix.SYS_LANDLOCK_ADD_RULE,
		"landlock_restrict_self":  unix.SYS_LANDLOCK_RESTRICT_SELF, "listmount": unix.SYS_LISTMOUNT,
	})
}
