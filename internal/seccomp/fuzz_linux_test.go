package seccomp

import (
	"testing"

	"golang.org/x/net/bpf"
)

// FuzzFilter runs both filters on arbitrary seccomp_data. The VM must never
// fail, the action must be one of the four the policy uses, and it must
// agree with the policy written as plain Go.
func FuzzFilter(f *testing.F) {
	type seed struct {
		nr         uint32
		arch       uint32
		a0, a1, a2 uint64
		useNative  bool
	}
	for _, s := range []seed{
		{0, auditArchX86_64, 0, 0, 0, true},
		{56, auditArchX86_64, 0x10000000, 0, 0, true},
		{16, auditArchX86_64, 0, 0x5412, 0, true},
		{135, auditArchX86_64, 0xffffffff, 0, 0, true},
		{220, auditArchAARCH64, 0x3d0f00, 0, 0, true},
		{0x40000000, auditArchX86_64, 0, 0, 0, true},
		{0xffffffff, 0, ^uint64(0), ^uint64(0), ^uint64(0), false},
		{435, 0x40000003, 0, 0, 0, false},
		{41, auditArchX86_64, 40, 1, 0, true},
		{53, auditArchX86_64, 1<<32 | 10, 1, 0, true},
		{198, auditArchAARCH64, 16, 3, 0, true},
		{199, auditArchAARCH64, 1, 1, 0, true},
	} {
		f.Add(s.nr, s.arch, s.a0, s.a1, s.a2, uint64(0), s.useNative, uint8(0))
		f.Add(s.nr, s.arch, s.a0, s.a1, s.a2, uint64(0), s.useNative, uint8(1))
	}
	vms := make(map[string]*bpf.VM)
	for _, goarch := range goarchs {
		vms[goarch] = newVM(f, goarch)
	}
	f.Fuzz(func(t *testing.T, nr, arch uint32, a0, a1, a2, ip uint64, useNative bool, which uint8) {
		goarch := goarchs[int(which)%len(goarchs)]
		if useNative {
			// Random arch values are almost never native; this keeps most
			// inputs past the arch check.
			arch = archs[goarch].auditArch
		}
		d := seccompData{nr: int32(nr), arch: arch, ip: ip, args: [6]uint64{a0, a1, a2, a0 ^ a1, a1 ^ a2, a2 ^ a0}}
		got, err := vms[goarch].Run(vmInput(d.kernelBytes()))
		if err != nil {
			t.Fatalf("%s: VM error for %+v: %v", goarch, d, err)
		}
		switch uint32(got) {
		case retAllow, retEPERM, retENOSYS, retEAFNOSUPPORT, retKillProcess:
		default:
			t.Fatalf("%s: unexpected action %#x for %+v", goarch, got, d)
		}
		if want := reference(goarch, d); uint32(got) != want {
			t.Fatalf("%s: %+v: filter says %s, policy says %s", goarch, d, actionName(uint32(got)), actionName(want))
		}
	})
}
