package wsfile

import (
	"fmt"

	"github.com/coderunner/coderunner/multifile"
)

// Bounds on a path: those of a request's files (multifile), so that a
// file a request may carry is one a session's file calls may reach.
const (
	// MaxPathBytes bounds the length of a path.
	MaxPathBytes = multifile.MaxPathBytes
	// MaxNameBytes bounds one element of a path, as the kernel does.
	MaxNameBytes = multifile.MaxNameBytes
	// MaxDepth bounds how many elements a path has.
	MaxDepth = multifile.MaxDepth
)

// CheckPath accepts a path relative to the workspace by the rules of a
// request's files (multifile.CheckPath): clean, within the bounds,
// staying beneath the workspace, valid UTF-8 free of control characters
// and backslashes (which other systems take for separators). An error
// wraps ErrInvalidPath.
func CheckPath(p string) error {
	if err := multifile.CheckPath(p); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidPath, err)
	}
	return nil
}
