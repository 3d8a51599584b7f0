package seccomp

import (
	"maps"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// checkBuildArchTable compares goarch's table, and the ordinary calls the VM
// tests use, with golang.org/x/sys/unix, which only knows the architecture
// the tests are built for.
func checkBuildArchTable(t *testing.T, goarch string, sys map[string]uint32) {
	t.Helper()
	a := archs[goarch]
	for name, nr := range a.nr {
		want, ok := sys[name]
		if !ok {
			t.Errorf("%s: no unix.SYS_* given to check %s against", goarch, name)
			continue
		}
		if nr != want {
			t.Errorf("%s: table has %s = %d, unix.SYS_* has %d", goarch, name, nr, want)
		}
	}
	for name, nr := range ordinary[goarch] {
		want, ok := sys[name]
		if !ok {
			t.Errorf("%s: no unix.SYS_* given to check ordinary %s against", goarch, name)
			continue
		}
		if nr != want {
			t.Errorf("%s: ordinary has %s = %d, unix.SYS_* has %d", goarch, name, nr, want)
		}
	}
	if a.tiocsti != unix.TIOCSTI || a.tioclinux != unix.TIOCLINUX {
		t.Errorf("%s: TIOCSTI/TIOCLINUX = %#x/%#x, unix has %#x/%#x",
			goarch, a.tiocsti, a.tioclinux, unix.TIOCSTI, unix.TIOCLINUX)
	}
}

func TestAuditArchConstants(t *testing.T) {
	if auditArchX86_64 != unix.AUDIT_ARCH_X86_64 {
		t.Errorf("auditArchX86_64 = %#x, want %#x", auditArchX86_64, unix.AUDIT_ARCH_X86_64)
	}
	if auditArchAARCH64 != unix.AUDIT_ARCH_AARCH64 {
		t.Errorf("auditArchAARCH64 = %#x, want %#x", auditArchAARCH64, unix.AUDIT_ARCH_AARCH64)
	}
}

// TestTablesCoverPolicy checks that every system call the policy names is
// either numbered or declared absent on every architecture, never both, and
// that the tables hold nothing the policy does not use.
func TestTablesCoverPolicy(t *testing.T) {
	special := []string{"clone", "clone3", "ioctl", "personality", "socket", "socketpair"}
	used := append(slices.Clone(denied), special...)
	for goarch, a := range archs {
		for _, name := range used {
			_, numbered := a.nr[name]
			switch {
			case numbered && a.absent[name]:
				t.Errorf("%s: %s is both numbered and absent", goarch, name)
			case !numbered && !a.absent[name]:
				t.Errorf("%s: %s is neither numbered nor absent", goarch, name)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(a.nr)) {
			if !slices.Contains(used, name) {
				t.Errorf("%s: table numbers %s, which the policy does not use", goarch, name)
			}
		}
		for _, name := range special {
			if a.absent[name] {
				t.Errorf("%s: %s cannot be absent", goarch, name)
			}
		}
		seen := make(map[uint32]string)
		for name, nr := range a.nr {
			if other, dup := seen[nr]; dup {
				t.Errorf("%s: %s and %s share number %d", goarch, name, other, nr)
			}
			seen[nr] = name
		}
	}
}
