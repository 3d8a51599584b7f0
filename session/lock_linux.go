package session

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// tryLockSession opens (creating it) and locks the lock file at path
// without waiting. It returns nil and no error when another holder has it.
// A lock file removed or replaced while this process waited for it locks
// nothing, so the lock is taken only once it is held on the file the path
// names.
func tryLockSession(path string) (*os.File, error) {
	for range 100 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600) //nolint:forbidigo // a lock file in the sessions directory, O_NOFOLLOW
		if err != nil {
			return nil, err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			_ = f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, nil
			}
			return nil, err
		}
		var held, named unix.Stat_t
		if unix.Fstat(int(f.Fd()), &held) == nil && unix.Lstat(path, &named) == nil &&
			held.Dev == named.Dev && held.Ino == named.Ino {
			return f, nil
		}
		_ = f.Close()
	}
	return nil, errors.New("the lock file keeps being replaced")
}
