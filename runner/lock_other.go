//go:build !unix

package runner

import "os"

// Without flock the cache is shared by one process only; in-process
// holders are tracked by the cache itself.

func lockShared(*os.File) error { return nil }

func tryLockExclusive(*os.File) (bool, error) { return true, nil }

const noFollowDir = 0
