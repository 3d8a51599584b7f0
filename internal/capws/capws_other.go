//go:build !linux

package capws

import (
	"errors"
	"fmt"
)

// MaxInodes is the inode cap of a workspace made with New.
const MaxInodes = 16384

// ErrUnsupported is wrapped by the errors of New and Mount.
var ErrUnsupported = errors.New("size-capped workspaces need Linux")

// ErrUncapped is wrapped by the errors of Check.
var ErrUncapped = errors.New("host workspace is not a size-capped tmpfs")

// Supported reports whether this process may try to mount workspaces.
func Supported() bool { return false }

// Dir is a size-capped workspace made by New.
type Dir struct{ Path string }

// New cannot cap a workspace outside Linux.
func New(string, string, int64, int) (*Dir, error) { return nil, ErrUnsupported }

// Mount cannot cap a workspace outside Linux.
func Mount(string, int64, int) error { return ErrUnsupported }

// Unmount has nothing to do outside Linux.
func Unmount(string) error { return nil }

// Remove cannot be reached outside Linux.
func (d *Dir) Remove() error { return ErrUnsupported }

// Check refuses every workspace outside Linux.
func Check(dir string, _ int64) error { return fmt.Errorf("%w: %s", ErrUncapped, dir) }

// Sweep has nothing to remove outside Linux.
func Sweep(string, string) int { return 0 }
