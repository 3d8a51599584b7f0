//go:build !linux

package runner

import "errors"

// copyOut needs openat2 to copy out of a sandbox's workspace safely.
func copyOut(src, dst string, skip func(rel string) bool, lim copyLimits) error {
	return errors.New("copying a compiled program out of the sandbox needs Linux")
}
