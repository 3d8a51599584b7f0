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

// Bindable refuses, with sandbox.ErrUnavailable, a spec whose workspace is
// one the workspace keeper holds (capws.Kept: a process without root got
// it mounted in a user and mount namespace of its own): no bind mount
// reaches it, and only the native backend attaches the keeper's clone of
// it. backend names the backend that refuses.
func Bindable(s *sandbox.Spec, backend string) error {
	if s.Workspace != "" && capws.Kept(s.Workspace) {
		return fmt.Errorf("%w: the %s backend cannot mount a workspace made without root (it lives in a mount namespace of its own, which only the native backend attaches); use the native backend or run as root", sandbox.ErrUnavailable, backend)
	}
	return nil
}
