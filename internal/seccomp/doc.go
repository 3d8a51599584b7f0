// Package seccomp builds the seccomp-BPF filter that the native sandbox
// backend installs just before it executes untrusted code.
//
// The filter is the last layer of the sandbox. Namespaces, cgroups, rlimits
// and dropped capabilities decide what the program may touch; the filter
// shrinks the kernel interface the program can reach, so that a kernel bug
// in a rarely used system call is not an escape route. It is built in Go
// (Program, ProgramFor), encoded with Marshal as the kernel's struct
// sock_filter array, and handed to the backend's small C init, which sets
// no_new_privs, loads it with seccomp(SECCOMP_SET_MODE_FILTER) and calls
// execve. The kernel tests load it the same way from Go.
//
// # Policy
//
// The filter is a denylist of system calls, with allow-lists for the
// arguments of a few (socket address families, personality values), on top
// of strict ABI checks. In order:
//
//   - A system call from any ABI but the native one (seccomp_data.arch other
//     than AUDIT_ARCH_X86_64 or AUDIT_ARCH_AARCH64) kills the process. The
//     same number names different calls in each ABI: a 64-bit program can
//     still enter the kernel through the 32-bit int 0x80 gate on amd64,
//     where 11 is execve and 3 is read, so a denylist written in 64-bit
//     numbers would be bypassed through the 32-bit ABI unless that ABI is
//     refused outright.
//   - On amd64, a number with the x32 bit (__X32_SYSCALL_BIT, 0x40000000)
//     kills the process, for the same reason: x32 calls carry the native
//     audit arch but reach other entry points.
//   - clone3 fails with ENOSYS. Its flags live in memory the filter cannot
//     read, so it cannot be checked; ENOSYS makes libc fall back to clone.
//   - clone fails with EPERM when its flags ask for a new namespace
//     (CLONE_NEWNS, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWCGROUP,
//     NEWTIME); fork, vfork and threads are allowed.
//   - ioctl fails with EPERM for TIOCSTI and TIOCLINUX. TIOCSTI pushes
//     characters into a terminal's input queue: a sandboxed program sharing
//     the caller's terminal could queue commands that the caller's shell
//     runs after the sandbox exits (CVE-2016-7545 and its relatives).
//   - personality fails with EPERM except for PER_LINUX, PER_LINUX32, each
//     with UNAME26, and the 0xffffffff query; the other flags, such as
//     READ_IMPLIES_EXEC and ADDR_NO_RANDOMIZE, weaken exploit mitigations.
//   - socket and socketpair fail with EAFNOSUPPORT unless the address
//     family (args[0], an int, so its low 32 bits) is AF_UNIX, AF_INET or
//     AF_INET6 (SocketFamilies): an allow-list, so a family added to the
//     kernel tomorrow is refused too. AF_VSOCK is not namespaced and
//     reaches the hypervisor on a VM host; netlink, packet, key, alg,
//     bluetooth, XDP and the other families are large kernel surfaces with
//     no use in a judge, and asking for one the kernel has not loaded makes
//     it load the module. EAFNOSUPPORT rather than EPERM because it is what
//     a kernel built without the family answers, which libraries already
//     handle (glibc's getaddrinfo, for one, falls back when its netlink
//     socket fails). socketcall(2), which multiplexes the socket calls on
//     32-bit ABIs, exists on neither amd64 nor arm64, and those ABIs are
//     killed by the arch check above.
//   - The system calls listed by DeniedSyscalls fail with EPERM whatever
//     their arguments: mounting and the new mount API, ptrace and
//     cross-process memory access (process_vm_*, kcmp, pidfd_getfd,
//     process_madvise, process_mrelease), kernel modules and kexec, bpf,
//     perf_event_open, the key store, userfaultfd, io_uring and the legacy
//     AIO calls (io_setup and the rest, whose contexts count against a
//     host-wide limit), NUMA memory policy and page migration (mbind,
//     get_mempolicy, set_mempolicy, set_mempolicy_home_node,
//     migrate_pages, move_pages), memfd_secret, modify_ldt (amd64), setns
//     and unshare, clocks, swap, reboot, accounting, quotas, the kernel log,
//     port I/O, file handles (open_by_handle_at, the "shocker" escape),
//     fanotify, and obsolete calls.
//   - Everything else is allowed. Landlock is allowed on purpose: it can
//     only restrict the caller further.
//
// Denied calls fail with EPERM instead of killing the process so that
// ordinary programs and language runtimes that probe for features (and
// fall back) keep working; only ABI confusion, which no honest program
// produces, kills.
//
// # Threats
//
// The 32-bit ABI bypass is described above. io_uring performs reads,
// writes, opens and network operations from kernel workers that seccomp
// never sees, so allowing it would let a program step around any filter,
// and it has been one of the kernel's most exploited subsystems; it is
// refused entirely. User namespaces make a process root inside a new
// namespace and thereby expose kernel code written for privileged callers
// (netfilter, mount and filesystem code) to anyone: many recent local
// privilege escalations start with unshare(CLONE_NEWUSER). The backend
// builds every namespace the program needs before the filter is loaded;
// the program itself may neither create nor join one, whether through
// clone, clone3, unshare or setns.
//
// A few facts the filter relies on: the clone flags are args[0] on both
// amd64 and arm64 (arm64's CLONE_BACKWARDS swaps only tls and child_tid),
// and the kernel uses only their low 32 bits. CLONE_NEWTIME shares its bit
// with the exit-signal byte of clone(2), so a time namespace can only be
// asked for through clone3 or unshare; the bit is masked in clone too,
// which refuses only exit signals of 128 or more, which no valid program
// passes. ioctl requests and personality values are 32-bit in the kernel,
// so only the low word of those arguments is compared.
//
// # Shape of the program
//
// The program is short: check the arch, load the number, then find the
// number with a binary search over the runs of numbers that share a
// verdict (JGE to halve the range, a JEQ where one number sits alone in a
// run of allowed ones), and jump to one of five shared return instructions
// at the end or to the argument checks for clone, ioctl, personality,
// socket and socketpair.
// Arguments are loaded only in those blocks. That keeps every other call's
// verdict a function of its number alone, which lets the kernel (5.11 and
// later) precompute "always allowed" per number and skip running the
// filter for those calls. The kernel computes that cache when the filter is
// attached, by running the filter for every system call number, so each
// number's path must stay short: with the search it is about a dozen
// instructions, where a chain of one comparison per listed call took about
// seventy, and attaching, which the native backend does for every run,
// costs less than half as much. Attaching also costs in proportion to the
// program's length (the kernel converts and JIT-compiles it): about a
// fifth of a microsecond per instruction on a 2-core VM, over a fixed ten
// microseconds, so the policy favours neighbouring numbers, which share a
// span, and short argument blocks. Jumps are written with labels and resolved
// by a small assembler that refuses backward or out-of-range jumps and
// labels marked twice.
//
// System call numbers are written out per architecture, since
// golang.org/x/sys/unix only describes the architecture being built; the
// tests check each table against unix.SYS_* on its own architecture.
package seccomp
