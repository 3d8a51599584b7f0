// Command containerseccomp writes deploy/seccomp.json, the seccomp profile
// the coderunner/executor image runs under: Docker's default profile
// (github.com/moby/profiles/seccomp, the one the engine itself embeds) with
// the namespace and mount system calls the sandbox backends make allowed
// to every process of the container, where the default allows them only
// with CAP_SYS_ADMIN. The container then needs no capability at all: its
// non-root user creates the sandboxes in user namespaces of its own, and
// each sandbox puts its own, stricter filter on the code it runs.
//
// Usage: go run ./tools/containerseccomp > deploy/seccomp.json
// (its test fails while the file differs from what it writes).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// sandboxCalls are the system calls that make a sandbox, each found
// necessary by taking it away but open_tree, without which the native
// init falls back from its detached clones (scripts/test-image.sh runs
// with exactly these):
// new namespaces (clone and clone3 with namespace flags, unshare), its root
// (mount, umount2, pivot_root; open_tree, move_mount and mount_setattr,
// with which the native init clones the host's tree and the workspace
// detached) and its host name. chroot, setns, setdomainname and the
// fsopen family are not needed, and stay as the default has them.
var sandboxCalls = []string{
	"clone", "clone3", "mount", "mount_setattr", "move_mount", "open_tree",
	"pivot_root", "sethostname", "umount2", "unshare",
}

// comment is the allowing rule's comment in the profile.
const comment = "coderunner: the sandboxes' namespaces and mounts, for a container without CAP_SYS_ADMIN"

// profile is Docker's default profile with sandboxCalls taken out of every
// rule (with their conditions and errno answers) and allowed by one rule
// without conditions.
func profile() *seccomp.Seccomp {
	p := seccomp.DefaultProfile()
	rules := p.Syscalls[:0]
	for _, r := range p.Syscalls {
		r.Names = slices.DeleteFunc(r.Names, func(n string) bool { return slices.Contains(sandboxCalls, n) })
		if len(r.Names) > 0 {
			rules = append(rules, r)
		}
	}
	p.Syscalls = append(rules, &seccomp.Syscall{
		LinuxSyscall: specs.LinuxSyscall{Names: sandboxCalls, Action: specs.ActAllow},
		Comment:      comment,
	})
	return p
}

// render is the profile as deploy/seccomp.json holds it.
func render() ([]byte, error) {
	b, err := json.MarshalIndent(profile(), "", "\t")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func main() {
	b, err := render()
	if err != nil {
		fmt.Fprintln(os.Stderr, "containerseccomp:", err)
		os.Exit(1)
	}
	if _, err := os.Stdout.Write(b); err != nil {
		fmt.Fprintln(os.Stderr, "containerseccomp:", err)
		os.Exit(1)
	}
}
