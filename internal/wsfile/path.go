package wsfile

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/coderunner/coderunner/sandbox"
)

// Bounds on a path, the same as those of a request's files.
const (
	// MaxPathBytes bounds the length of a path.
	MaxPathBytes = 512
	// MaxNameBytes bounds one element of a path, as the kernel does.
	MaxNameBytes = 255
	// MaxDepth bounds how many elements a path has.
	MaxDepth = 16
)

// CheckPath accepts a path relative to the workspace: clean, within the
// bounds, staying beneath the workspace, valid UTF-8 free of control
// characters and backslashes (which other systems take for separators).
// An error wraps ErrInvalidPath.
func CheckPath(p string) error {
	if err := checkPath(p); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidPath, err)
	}
	return nil
}

func checkPath(p string) error {
	if len(p) > MaxPathBytes {
		return fmt.Errorf("a path of %d bytes, at most %d", len(p), MaxPathBytes)
	}
	if err := sandbox.ValidRelativePath(p); err != nil {
		return err
	}
	if !utf8.ValidString(p) {
		return fmt.Errorf("%q is not valid UTF-8", p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return fmt.Errorf("%q holds a control character or a backslash", p)
		}
	}
	parts := strings.Split(p, "/")
	if len(parts) > MaxDepth {
		return fmt.Errorf("%q is more than %d levels deep", p, MaxDepth)
	}
	for _, part := range parts {
		if len(part) > MaxNameBytes {
			return fmt.Errorf("a name of %d bytes, at most %d", len(part), MaxNameBytes)
		}
		if part == ".." {
			return fmt.Errorf("%q leaves the workspace", p)
		}
	}
	return nil
}
