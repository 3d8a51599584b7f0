package bwrap

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/coderunner/coderunner/sandbox"
)

// plan is everything bwrap's argument vector is built from. Building it
// touches nothing on the host, so that the arguments can be tested alone.
type plan struct {
	// spec has its defaults applied and is valid.
	spec *sandbox.Spec
	// uid is the uid (and gid) of user code inside the sandbox.
	uid int
	// etcDir holds the synthetic /etc files.
	etcDir string
	// ldCache binds the host's loader cache at /etc/ld.so.cache.
	ldCache bool
	// alternatives, when not empty, is the host directory bound
	// read-only at /etc/alternatives (see sandbox.AlternativesDir).
	alternatives string
	// workspace, tmp and shm are host tmpfs the backend mounted with a
	// size and an inode cap; when empty, bwrap mounts a --size tmpfs of
	// its own.
	workspace, tmp, shm string
	// fileFDs are the descriptors holding spec.Files, one each, when
	// bwrap makes the private workspace itself; tmpFDs those holding
	// spec.TmpFiles when it makes /tmp.
	fileFDs, tmpFDs []int
	// seccompFD, statusFD and blockFD are bwrap's --seccomp,
	// --json-status-fd and --block-fd.
	seccompFD, statusFD, blockFD int
	// link reports whether a mount source is a symbolic link and where it
	// points; such a mount is recreated as the same link.
	link func(source string) (target string, ok bool, err error)
	// staged maps a mount source that bwrap's uid cannot reach to where
	// the backend bound it for bwrap (see run.stage).
	staged map[string]string
}

// args returns bwrap's arguments, without the program name.
func (p *plan) args() ([]string, error) {
	s, lim := p.spec, p.spec.Limits
	uid := strconv.Itoa(p.uid)
	a := []string{
		// Every namespace, no capability, killed with
		// its parent, no controlling terminal (TIOCSTI).
		"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--unshare-user", "--uid", uid, "--gid", uid,
		"--hostname", "sandbox",
	}
	// /etc first: toolchains may mount their configuration below it.
	a = append(a, "--perms", "0755", "--tmpfs", "/etc")
	for _, name := range etcNames {
		a = append(a, "--ro-bind", path.Join(p.etcDir, name), "/etc/"+name)
	}
	if p.ldCache {
		a = append(a, "--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache")
	}
	if p.alternatives != "" {
		// Links only, as the host's packages chose them: bwrap binds
		// read-only, nosuid and nodev, and they resolve inside the
		// sandbox.
		a = append(a, "--ro-bind", p.alternatives, sandbox.AlternativesDir)
	}
	for i, m := range s.Mounts {
		target := m.TargetPath()
		if p.link != nil {
			to, ok, err := p.link(m.Source)
			if err != nil {
				return nil, fmt.Errorf("%w: Mounts[%d]: %w", sandbox.ErrSetup, i, err)
			}
			if ok {
				a = append(a, "--symlink", to, target)
				continue
			}
		}
		op := "--ro-bind"
		if m.Writable {
			op = "--bind"
		}
		source := m.Source
		if st, ok := p.staged[source]; ok {
			source = st
		}
		a = append(a, op, source, target)
	}
	// /proc/1 is bwrap's init, which runs as the program's uid: hide it,
	// or the program could read its root, environment and descriptors.
	a = append(a, "--dev", "/dev", "--proc", "/proc", "--perms", "0555", "--size", "4096", "--tmpfs", "/proc/1")
	a = p.scratch(a, p.shm, "/dev/shm", lim.TmpSize, "1777")
	a = p.scratch(a, p.tmp, sandbox.TmpDir, lim.TmpSize, "1777")
	if p.tmp == "" {
		var err error
		if a, err = copyIn(a, sandbox.TmpDir, s.TmpFiles, p.tmpFDs); err != nil {
			return nil, err
		}
	}
	switch {
	case s.Workspace != "":
		a = append(a, "--bind", s.Workspace, sandbox.WorkspaceDir)
	case p.workspace != "":
		// The backend wrote the files into its own tmpfs.
		a = append(a, "--bind", p.workspace, sandbox.WorkspaceDir)
	default:
		a = append(a, "--perms", "0755", "--size", strconv.FormatInt(lim.WorkspaceSize, 10), "--tmpfs", sandbox.WorkspaceDir)
		var err error
		if a, err = copyIn(a, sandbox.WorkspaceDir, s.Files, p.fileFDs); err != nil {
			return nil, err
		}
	}
	// Nothing of the root, /etc or /dev is writable; /dev/shm, /tmp and
	// /workspace are mounts of their own and stay so.
	a = append(a, "--remount-ro", "/proc/1", "--remount-ro", "/etc", "--remount-ro", "/dev", "--remount-ro", "/")
	dir := s.Dir
	if dir == "" {
		dir = sandbox.WorkspaceDir
	}
	a = append(a, "--chdir", dir, "--clearenv")
	for _, kv := range s.Env {
		k, v, _ := strings.Cut(kv, "=")
		a = append(a, "--setenv", k, v)
	}
	a = append(a,
		"--seccomp", strconv.Itoa(p.seccompFD),
		"--json-status-fd", strconv.Itoa(p.statusFD),
		"--block-fd", strconv.Itoa(p.blockFD),
		"--")
	return append(a, s.Args...), nil
}

// scratch mounts a size-capped scratch directory at target: the host tmpfs
// the backend made, or bwrap's own.
func (p *plan) scratch(a []string, host, target string, size int64, perms string) []string {
	if host != "" {
		return append(a, "--bind", host, target)
	}
	return append(a, "--perms", perms, "--size", strconv.FormatInt(size, 10), "--tmpfs", target)
}

// copyIn has bwrap copy files beneath dir, a tmpfs it made, from the
// descriptors fds (one each), their directories first.
func copyIn(a []string, dir string, files []sandbox.File, fds []int) ([]string, error) {
	if len(fds) != len(files) {
		return nil, fmt.Errorf("%w: %d descriptors for %d files", sandbox.ErrSetup, len(fds), len(files))
	}
	for _, d := range parents(files) {
		a = append(a, "--perms", "0755", "--dir", path.Join(dir, d))
	}
	for i, f := range files {
		mode := f.Mode.Perm()
		if mode == 0 {
			mode = 0o644
		}
		a = append(a, "--perms", fmt.Sprintf("%04o", mode), "--file", strconv.Itoa(fds[i]), path.Join(dir, f.Path))
	}
	return a, nil
}

// parents lists the directories the files need, parents first.
func parents(files []sandbox.File) []string {
	seen := map[string]bool{}
	for _, f := range files {
		for dir := path.Dir(f.Path); dir != "."; dir = path.Dir(dir) {
			seen[dir] = true
		}
	}
	dirs := make([]string, 0, len(seen))
	for d := range seen {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	return dirs
}
