package native

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/internal/hostws"
	"github.com/coderunner/coderunner/sandbox/native/nsinit"
)

// hostWorkspace binds the caller's workspace directory read-write and puts
// the spec's files in it. The directory may hold files from earlier runs of
// a session, so every path in it is treated as hostile: hostws writes
// beneath it with openat2 and never follows a link (the Judge0 escapes,
// CVE-2024-28185 and CVE-2024-28189, were the host following one).
//
// The workspace, a capped tmpfs (hostws.Capped), was mounted on the host
// after any sandbox started ahead of need took its copy of the host's
// mounts, so that copy does not hold it. Instead the backend clones the
// workspace's mount itself (attach) and sends it with the second phase:
// a warm sandbox can serve the run. Where the kernel cannot, the sandbox
// binds it out of its copy, and only a new one sees it.
func (r *run) hostWorkspace() error {
	s, b := r.spec, r.b
	if err := hostws.Prepare(s.Workspace, s.Files, b.hostUserID(), b.privileged); err != nil {
		return fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
	}
	if capws.Kept(s.Workspace) {
		// Without root the workspace is mounted in the keeper's
		// namespace, which no bind reaches: the keeper clones it, and
		// only that clone is attached. There is no other way in.
		tree, err := capws.CloneKept(s.Workspace)
		if err != nil {
			return fmt.Errorf("%w: workspace: %w", sandbox.ErrSetup, err)
		}
		r.tree, r.attach = tree, true
		return nil
	}
	src, err := filepath.EvalSymlinks(s.Workspace) //nolint:forbidigo // the caller's workspace path, resolved before the sandbox sees it
	if err != nil {
		return fmt.Errorf("%w: workspace: %w", sandbox.ErrSetup, err)
	}
	if !b.noAttach.Load() {
		tree, err := b.clone(src)
		switch {
		case err == nil:
			r.tree, r.attach = tree, true
			return nil
		case !errors.Is(err, errCannotClone):
			return fmt.Errorf("%w: workspace: %w", sandbox.ErrSetup, err)
		}
		b.log.Debug("the workspace's mount cannot be sent to the sandbox", "error", err)
	}
	// The workspace is this run's alone: it is not learned as a
	// toolchain source for later sandboxes to open ahead.
	r.workspace = src
	r.mounts.op(nsinit.OpBind, src, sandbox.WorkspaceDir, "rw")
	return nil
}

// errCannotClone is wrapped by cloneWorkspace's errors where the kernel
// (before Linux 5.12) or the process's privileges do not allow the clone:
// the run binds the workspace the old way.
var errCannotClone = errors.New("cannot clone the workspace's mount")

// cloneWorkspace returns a detached clone of the mount whose root is dir:
// that mount alone (not what may be mounted below it), nosuid, nodev and
// private, so that nothing mounted on either side propagates to the
// other. dir, a path of the host's that no sandbox controls, is not
// followed if it is a link, and must be the root of its mount (as
// hostws.Capped checked): the clone is then the capped tmpfs, all of it,
// and nothing else.
func cloneWorkspace(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("unable to open %s: %w", dir, err)
	}
	defer unix.Close(fd)
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS, &stx); err != nil {
		return nil, fmt.Errorf("unable to stat %s: %w", dir, err)
	}
	if stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		return nil, fmt.Errorf("%w: the kernel does not tell mount roots", errCannotClone)
	}
	if stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		return nil, fmt.Errorf("%s is not the root of its mount", dir)
	}
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return nil, fmt.Errorf("%w: open_tree: %w", errCannotClone, err)
	}
	attr := &unix.MountAttr{
		Attr_set:    unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
		Propagation: unix.MS_PRIVATE,
	}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, attr); err != nil {
		_ = unix.Close(tree)
		return nil, fmt.Errorf("%w: mount_setattr: %w", errCannotClone, err)
	}
	return os.NewFile(uintptr(tree), "workspace"), nil
}

// hostUserID is the host uid that user code runs as.
func (b *Backend) hostUserID() int {
	if b.privileged {
		return b.hostBase + sandboxUID
	}
	return os.Getuid()
}
