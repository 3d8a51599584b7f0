package hostws

import (
	"fmt"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/sandbox"
)

// Capped refuses, with sandbox.ErrInvalidSpec, a spec that lends the
// program a host directory it could fill the host's disk through: its
// Workspace and its writable mounts must each be the root of a tmpfs
// capped at Limits.WorkspaceSize (capws.Check). Every backend calls it
// before it mounts anything, so that a caller that forgets to cap a
// directory is refused rather than trusted. s has its limits' defaults.
func Capped(s *sandbox.Spec) error {
	if s.Workspace != "" {
		if err := capws.Check(s.Workspace, s.Limits.WorkspaceSize); err != nil {
			return fmt.Errorf("%w: %w", sandbox.ErrInvalidSpec, err)
		}
	}
	for _, m := range s.Mounts {
		if m.Writable {
			if err := capws.Check(m.Source, s.Limits.WorkspaceSize); err != nil {
				return fmt.Errorf("%w: writable mount: %w", sandbox.ErrInvalidSpec, err)
			}
		}
	}
	return nil
}
