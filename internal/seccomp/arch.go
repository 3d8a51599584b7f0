package seccomp

// archTable holds what the filter needs to know about one architecture.
//
// The numbers are written out per architecture instead of taken from
// golang.org/x/sys/unix because unix.SYS_* only describes the architecture
// the binary is built for, while ProgramFor must build every filter on any
// host. table_<arch>_test.go checks each table against unix.SYS_* when the
// tests run on that architecture.
type archTable struct {
	// auditArch is the AUDIT_ARCH_* value the kernel puts in
	// seccomp_data.arch for the native system call ABI.
	auditArch uint32
	// x32 is set where the kernel also accepts system calls with
	// __X32_SYSCALL_BIT set under the same audit arch.
	x32 bool
	// tiocsti and tioclinux are the terminal ioctl requests the filter
	// refuses; their numbers differ between architecture families.
	tiocsti, tioclinux uint32
	// nr maps every system call the policy names to its number.
	nr map[string]uint32
	// absent lists the policy's system calls this architecture never had.
	// Building fails for a name in neither nr nor absent, so a forgotten
	// table entry cannot quietly turn into an allowed system call.
	absent map[string]bool
}

// Values of AUDIT_ARCH_* from <linux/audit.h>.
const (
	auditArchX86_64  = 0xc000003e // EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE
	auditArchAARCH64 = 0xc00000b7 // EM_AARCH64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE
)

// x32SyscallBit is __X32_SYSCALL_BIT from arch/x86/include/uapi/asm/unistd.h.
const x32SyscallBit = 0x40000000

// archs maps a GOARCH to its table. Numbers come from
// arch/x86/entry/syscalls/syscall_64.tbl and, for arm64, the generic table
// (scripts/syscall.tbl, formerly include/uapi/asm-generic/unistd.h).
var archs = map[string]*archTable{
	"amd64": {
		auditArch: auditArchX86_64,
		x32:       true,
		tiocsti:   0x5412,
		tioclinux: 0x541c,
		nr: withUnified(map[string]uint32{
			"ioctl":             16,
			"socket":            41,
			"socketpair":        53,
			"clone":             56,
			"ptrace":            101,
			"syslog":            103,
			"uselib":            134,
			"personality":       135,
			"ustat":             136,
			"sysfs":             139,
			"vhangup":           153,
			"modify_ldt":        154,
			"pivot_root":        155,
			"_sysctl":           156,
			"adjtimex":          159,
			"chroot":            161,
			"acct":              163,
			"settimeofday":      164,
			"mount":             165,
			"umount2":           166,
			"swapon":            167,
			"swapoff":           168,
			"reboot":            169,
			"iopl":              172,
			"ioperm":            173,
			"init_module":       175,
			"delete_module":     176,
			"quotactl":          179,
			"nfsservctl":        180,
			"io_setup":          206,
			"io_destroy":        207,
			"io_getevents":      208,
			"io_submit":         209,
			"io_cancel":         210,
			"lookup_dcookie":    212,
			"clock_settime":     227,
			"mbind":             237,
			"set_mempolicy":     238,
			"get_mempolicy":     239,
			"kexec_load":        246,
			"add_key":           248,
			"request_key":       249,
			"keyctl":            250,
			"migrate_pages":     256,
			"unshare":           272,
			"move_pages":        279,
			"perf_event_open":   298,
			"fanotify_init":     300,
			"name_to_handle_at": 303,
			"open_by_handle_at": 304,
			"clock_adjtime":     305,
			"setns":             308,
			"process_vm_readv":  310,
			"process_vm_writev": 311,
			"kcmp":              312,
			"finit_module":      313,
			"kexec_file_load":   320,
			"bpf":               321,
			"userfaultfd":       323,
			"io_pgetevents":     333,
		}),
		absent: map[string]bool{},
	},
	"arm64": {
		auditArch: auditArchAARCH64,
		tiocsti:   0x5412,
		tioclinux: 0x541c,
		nr: withUnified(map[string]uint32{
			"io_setup":          0,
			"io_destroy":        1,
			"io_submit":         2,
			"io_cancel":         3,
			"io_getevents":      4,
			"lookup_dcookie":    18,
			"ioctl":             29,
			"umount2":           39,
			"mount":             40,
			"pivot_root":        41,
			"nfsservctl":        42,
			"chroot":            51,
			"vhangup":           58,
			"quotactl":          60,
			"acct":              89,
			"personality":       92,
			"unshare":           97,
			"kexec_load":        104,
			"init_module":       105,
			"delete_module":     106,
			"clock_settime":     112,
			"syslog":            116,
			"ptrace":            117,
			"reboot":            142,
			"settimeofday":      170,
			"adjtimex":          171,
			"socket":            198,
			"socketpair":        199,
			"add_key":           217,
			"request_key":       218,
			"keyctl":            219,
			"clone":             220,
			"swapon":            224,
			"swapoff":           225,
			"mbind":             235,
			"get_mempolicy":     236,
			"set_mempolicy":     237,
			"migrate_pages":     238,
			"move_pages":        239,
			"perf_event_open":   241,
			"fanotify_init":     262,
			"name_to_handle_at": 264,
			"open_by_handle_at": 265,
			"clock_adjtime":     266,
			"setns":             268,
			"process_vm_readv":  270,
			"process_vm_writev": 271,
			"kcmp":              272,
			"finit_module":      273,
			"bpf":               280,
			"userfaultfd":       282,
			"io_pgetevents":     292,
			"kexec_file_load":   294,
		}),
		// The generic table never had the legacy x86 entries, and port I/O
		// and the LDT do not exist on arm64.
		absent: map[string]bool{
			"modify_ldt": true,
			"uselib":     true,
			"ustat":      true,
			"sysfs":      true,
			"_sysctl":    true,
			"iopl":       true,
			"ioperm":     true,
		},
	},
}

// unified are the system calls numbered from 424 on, where every
// architecture shares one numbering.
var unified = map[string]uint32{
	"io_uring_setup":          425,
	"io_uring_enter":          426,
	"io_uring_register":       427,
	"open_tree":               428,
	"move_mount":              429,
	"fsopen":                  430,
	"fsconfig":                431,
	"fsmount":                 432,
	"fspick":                  433,
	"clone3":                  435,
	"pidfd_getfd":             438,
	"process_madvise":         440,
	"mount_setattr":           442,
	"quotactl_fd":             443,
	"memfd_secret":            447,
	"process_mrelease":        448,
	"set_mempolicy_home_node": 450,
	"open_tree_attr":          467,
}

// withUnified adds the unified system calls to an architecture's own.
func withUnified(own map[string]uint32) map[string]uint32 {
	for name, nr := range unified {
		own[name] = nr
	}
	return own
}
