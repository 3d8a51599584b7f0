package docker

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/seccomp"
)

// Profile is a seccomp profile in the format of the container engine
// (moby's types.Seccomp), reduced to what the backend writes.
type Profile struct {
	DefaultAction string        `json:"defaultAction"`
	Architectures []string      `json:"architectures"`
	Syscalls      []SyscallRule `json:"syscalls"`
}

// SyscallRule gives an action to the named system calls, when every
// argument condition holds.
type SyscallRule struct {
	Names    []string  `json:"names"`
	Action   string    `json:"action"`
	ErrnoRet *uint     `json:"errnoRet,omitempty"`
	Args     []ArgRule `json:"args,omitempty"`
	Comment  string    `json:"comment,omitempty"`
}

// ArgRule is one condition on a system call argument.
type ArgRule struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo"`
	Op       string `json:"op"`
}

// auditArchs maps a GOARCH to the engine's name for its native ABI.
var auditArchs = map[string]string{
	"amd64": "SCMP_ARCH_X86_64",
	"arm64": "SCMP_ARCH_AARCH64",
}

// cloneNamespaceFlags are the clone(2) flags that create namespaces, as
// the native filter refuses them.
var cloneNamespaceFlags = []uint64{
	unix.CLONE_NEWNS, unix.CLONE_NEWUTS, unix.CLONE_NEWIPC, unix.CLONE_NEWUSER,
	unix.CLONE_NEWPID, unix.CLONE_NEWNET, unix.CLONE_NEWCGROUP, unix.CLONE_NEWTIME,
}

// NewProfile builds the container seccomp profile of the project's policy
// (internal/seccomp) for the architecture this binary runs on:
//
//   - Only the native architecture is listed. The engine's runtime kills a
//     system call of any other ABI (the 32-bit int 0x80 gate, x32), where
//     the default Docker profile admits the 32-bit ABI.
//   - Every call of seccomp.DeniedSyscalls fails with EPERM (io_uring,
//     bpf, perf_event_open, namespaces, mounts, ptrace, keyctl, the kernel
//     log, ...).
//   - clone3 fails with ENOSYS, so that libc falls back to clone, whose
//     namespace flags are refused with EPERM one rule per flag: rules on the
//     same argument within one entry are ORed by some runtimes and ANDed
//     by others, separate entries mean the same everywhere.
//   - ioctl TIOCSTI and TIOCLINUX fail with EPERM.
//   - personality fails with EPERM for any flag but PER_LINUX32 (0x8) and
//     UNAME26 (0x20000). The native filter also admits the 0xffffffff
//     query, which a rule per argument cannot single out here: the profile
//     is the stricter one.
//   - socket and socketpair fail with EAFNOSUPPORT for any address family
//     but seccomp.SocketFamilies (AF_UNIX, AF_INET, AF_INET6). The profile
//     cannot say "none of these", so it refuses every value above the
//     largest allowed family (SCMP_CMP_GT) and, one rule each, every value
//     below it that is not allowed (SCMP_CMP_EQ). The engine compares all
//     64 bits where the native filter reads the family's low 32 bits as
//     the kernel does: an allowed family with high bits set, which no libc
//     produces, is refused here; every family the native filter refuses is
//     refused here too.
//
// Everything else is allowed, as in the native filter.
func NewProfile() (*Profile, error) {
	arch, ok := auditArchs[runtime.GOARCH]
	if !ok {
		return nil, fmt.Errorf("no seccomp profile for %s", runtime.GOARCH)
	}
	eperm, enosys := uint(unix.EPERM), uint(unix.ENOSYS)
	p := &Profile{
		DefaultAction: "SCMP_ACT_ALLOW",
		Architectures: []string{arch},
	}
	denied := seccomp.DeniedSyscalls()
	if len(denied) == 0 {
		return nil, fmt.Errorf("the seccomp policy names no syscall for %s", runtime.GOARCH)
	}
	p.Syscalls = append(p.Syscalls,
		SyscallRule{Names: denied, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eperm, Comment: "internal/seccomp policy"},
		SyscallRule{Names: []string{"clone3"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &enosys, Comment: "flags out of reach: libc falls back to clone"},
	)
	for _, f := range cloneNamespaceFlags {
		p.Syscalls = append(p.Syscalls, SyscallRule{
			Names: []string{"clone"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eperm,
			Args: []ArgRule{{Index: 0, Value: f, ValueTwo: f, Op: "SCMP_CMP_MASKED_EQ"}},
		})
	}
	for _, req := range []uint64{unix.TIOCSTI, unix.TIOCLINUX} {
		p.Syscalls = append(p.Syscalls, SyscallRule{
			Names: []string{"ioctl"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eperm,
			Args: []ArgRule{{Index: 1, Value: 0xffffffff, ValueTwo: req, Op: "SCMP_CMP_MASKED_EQ"}},
		})
	}
	p.Syscalls = append(p.Syscalls, socketFamilyRules()...)
	// Any bit of the personality word but PER_LINUX32 and UNAME26.
	const allowedBits = 0x8 | 0x20000
	for bit := uint64(1); bit <= 1<<31; bit <<= 1 {
		if bit&allowedBits != 0 {
			continue
		}
		p.Syscalls = append(p.Syscalls, SyscallRule{
			Names: []string{"personality"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eperm,
			Args: []ArgRule{{Index: 0, Value: bit, ValueTwo: bit, Op: "SCMP_CMP_MASKED_EQ"}},
		})
	}
	return p, nil
}

// socketFamilyRules refuses socket and socketpair for every address family
// seccomp.SocketFamilies does not list. Rules are ORed, so the refused
// values are listed, not the allowed ones: each value from 0 to the largest
// allowed family that is not allowed, and everything above it.
func socketFamilyRules() []SyscallRule {
	eafnosupport := uint(unix.EAFNOSUPPORT)
	names := seccomp.SocketFamilyCalls()
	allowed := seccomp.SocketFamilies()
	if len(allowed) == 0 {
		return []SyscallRule{{Names: names, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eafnosupport}}
	}
	top := uint64(allowed[len(allowed)-1])
	var rules []SyscallRule
	for v := uint64(0); v < top; v++ {
		if slices.Contains(allowed, uint32(v)) {
			continue
		}
		rules = append(rules, SyscallRule{
			Names: names, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eafnosupport,
			Args: []ArgRule{{Index: 0, Value: v, Op: "SCMP_CMP_EQ"}},
		})
	}
	return append(rules, SyscallRule{
		Names: names, Action: "SCMP_ACT_ERRNO", ErrnoRet: &eafnosupport,
		Args:    []ArgRule{{Index: 0, Value: top, Op: "SCMP_CMP_GT"}},
		Comment: "address families other than internal/seccomp's SocketFamilies",
	})
}

// profileJSON is the profile of this machine's architecture, as the
// engine's security option takes it.
func profileJSON() (string, error) {
	p, err := NewProfile()
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
