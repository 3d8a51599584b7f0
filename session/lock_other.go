//go:build !linux

package session

import (
	"errors"
	"os"
)

// tryLockSession is not supported where flock(2) is not used.
func tryLockSession(string) (*os.File, error) {
	return nil, errors.New("session locks are not supported here")
}
