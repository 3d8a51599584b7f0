package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// userNamespaceHostBase is the first host id InUserNamespace maps.
const userNamespaceHostBase = 100_000

// InUserNamespace runs the test name of this test binary again as root
// of a user namespace of its own that maps ids 0 to size-1 to
// unprivileged host ids, as a Kubernetes pod with hostUsers: false runs
// its containers, with env added to the environment; it returns the
// child's output and how it ended. Root can do this anywhere; the child
// has every capability within its namespace and none outside it.
func InUserNamespace(t testing.TB, name string, size int, env ...string) (string, error) {
	t.Helper()
	RequireRoot(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	// A copy the namespace's root, an unprivileged host uid, may run:
	// the test binary's own directory is private to the host's root.
	bin := filepath.Join(ReachableDir(t, "coderunner-userns-"), filepath.Base(self))
	if err := os.WriteFile(bin, data, 0o755); err != nil { //nolint:gosec // run by the namespace's root
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Dir = filepath.Dir(bin)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: userNamespaceHostBase, Size: size}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: userNamespaceHostBase, Size: size}},
		Credential:  &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true},
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}
