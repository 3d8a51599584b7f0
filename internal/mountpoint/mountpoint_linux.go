// Package mountpoint tells whether a path is the root of a mount, and
// decodes the paths /proc/self/mountinfo lists.
package mountpoint

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Is reports whether path is the root of a mount. path itself is never
// followed if it is a symbolic link. Where statx cannot say (before Linux
// 5.8), a path on another device than its parent directory is one; the
// parent is followed, as statx followed it on the way to path.
func Is(path string) (bool, error) {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS, &stx); err != nil {
		return false, err
	}
	if stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		return stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, nil
	}
	var parent unix.Stat_t
	if err := unix.Stat(filepath.Dir(path), &parent); err != nil {
		return false, err
	}
	return parent.Dev != unix.Mkdev(stx.Dev_major, stx.Dev_minor), nil
}
