package executor

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// capWorkspace mounts a tmpfs of size bytes on dir, so that a run cannot
// fill the host's disk through its workspace, and returns the function
// that unmounts it. It needs CAP_SYS_ADMIN in the mount namespace (root).
func capWorkspace(dir string, size int64) (func() error, error) {
	opts := fmt.Sprintf("size=%d,mode=0755", size)
	if err := unix.Mount("coderunner-workspace", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return nil, fmt.Errorf("unable to mount a tmpfs on the workspace: %w", err)
	}
	return func() error {
		// MNT_DETACH: a file the host still holds open must not keep the
		// mount, and so the memory of the tmpfs, alive.
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("unable to unmount the workspace: %w", err)
		}
		return nil
	}, nil
}
