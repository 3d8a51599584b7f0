package seccomp

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompData mirrors struct seccomp_data, the input the kernel gives the
// filter.
type seccompData struct {
	nr   int32
	arch uint32
	ip   uint64
	args [6]uint64
}

// kernelBytes lays d out as the kernel does on a little-endian machine.
func (d seccompData) kernelBytes() []byte {
	b := make([]byte, 0, 64)
	b = binary.LittleEndian.AppendUint32(b, uint32(d.nr))
	b = binary.LittleEndian.AppendUint32(b, d.arch)
	b = binary.LittleEndian.AppendUint64(b, d.ip)
	for _, a := range d.args {
		b = binary.LittleEndian.AppendUint64(b, a)
	}
	return b
}

// vmInput converts the kernel's bytes for x/net/bpf's VM. The kernel's
// seccomp loads read 32-bit words in native (here little-endian) order, but
// the VM, written for packets, reads them big-endian; swapping each aligned
// word makes the VM see the values the kernel would. Seccomp only allows
// aligned 32-bit loads, so this is exact.
func vmInput(kernel []byte) []byte {
	b := slices.Clone(kernel)
	for i := 0; i+4 <= len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	return b
}

// newVM builds goarch's filter and loads it into the VM.
func newVM(t testing.TB, goarch string) *bpf.VM {
	t.Helper()
	prog, err := ProgramFor(goarch)
	if err != nil {
		t.Fatalf("ProgramFor(%q): %v", goarch, err)
	}
	return loadVM(t, prog)
}

func loadVM(t testing.TB, prog []unix.SockFilter) *bpf.VM {
	t.Helper()
	raw := make([]bpf.RawInstruction, len(prog))
	for i, f := range prog {
		raw[i] = bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}
	}
	insns, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatalf("program has instructions the VM cannot decode: %v", insns)
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		t.Fatalf("bpf.NewVM: %v", err)
	}
	return vm
}

// run returns the action the filter takes for d.
func run(t testing.TB, vm *bpf.VM, d seccompData) uint32 {
	t.Helper()
	ret, err := vm.Run(vmInput(d.kernelBytes()))
	if err != nil {
		t.Fatalf("VM error for %+v: %v", d, err)
	}
	return uint32(ret)
}

// actionName makes failures readable.
func actionName(a uint32) string {
	switch a {
	case retAllow:
		return "ALLOW"
	case retEPERM:
		return "ERRNO(EPERM)"
	case retENOSYS:
		return "ERRNO(ENOSYS)"
	case retEAFNOSUPPORT:
		return "ERRNO(EAFNOSUPPORT)"
	case retKillProcess:
		return "KILL_PROCESS"
	}
	return fmt.Sprintf("unexpected action %#x", a)
}

// reference is the policy written as plain Go, independent of the
// assembler, to compare the filter against.
func reference(goarch string, d seccompData) uint32 {
	a := archs[goarch]
	if d.arch != a.auditArch {
		return retKillProcess
	}
	nr := uint32(d.nr)
	if a.x32 && nr >= x32SyscallBit {
		return retKillProcess
	}
	switch nr {
	case a.nr["clone"]:
		if uint32(d.args[0])&cloneNamespaceFlags != 0 {
			return retEPERM
		}
		return retAllow
	case a.nr["clone3"]:
		return retENOSYS
	case a.nr["ioctl"]:
		if req := uint32(d.args[1]); req == a.tiocsti || req == a.tioclinux {
			return retEPERM
		}
		return retAllow
	case a.nr["personality"]:
		if slices.Contains(allowedPersonalities, uint32(d.args[0])) {
			return retAllow
		}
		return retEPERM
	case a.nr["socket"], a.nr["socketpair"]:
		// The family is an int in the kernel.
		switch uint32(d.args[0]) {
		case unix.AF_UNIX, unix.AF_INET, unix.AF_INET6:
			return retAllow
		}
		return retEAFNOSUPPORT
	}
	for _, name := range denied {
		if n, ok := a.nr[name]; ok && n == nr {
			return retEPERM
		}
	}
	return retAllow
}
