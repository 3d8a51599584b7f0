//go:build unix

package runner

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockShared takes a shared lock on f, waiting for an exclusive holder
// (an eviction under way) to let go.
func lockShared(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_SH)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// tryLockExclusive takes an exclusive lock on f unless another holder has
// any lock on it.
func tryLockExclusive(f *os.File) (bool, error) {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// noFollowDir opens a directory of the cache and nothing else.
const noFollowDir = unix.O_NOFOLLOW | unix.O_DIRECTORY
