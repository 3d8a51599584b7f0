package native

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/internal/hostws"
	"github.com/coderunner/coderunner/sandbox/native/nsinit"
)

// hostWorkspace binds the caller's workspace directory read-write and puts
// the spec's files in it. The directory may hold files from earlier runs of
// a session, so every path in it is treated as hostile: hostws writes
// beneath it with openat2 and never follows a link (the Judge0 escapes,
// CVE-2024-28185 and CVE-2024-28189, were the host following one).
func (r *run) hostWorkspace() error {
	s, b := r.spec, r.b
	if err := hostws.Prepare(s.Workspace, s.Files, b.hostUserID(), b.privileged); err != nil {
		return fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
	}
	src, err := filepath.EvalSymlinks(s.Workspace)
	if err != nil {
		return fmt.Errorf("%w: workspace: %w", sandbox.ErrSetup, err)
	}
	// The workspace is this run's alone: it is not learned as a
	// toolchain source for later sandboxes to open ahead.
	r.workspace = src
	r.mounts.op(nsinit.OpBind, src, sandbox.WorkspaceDir, "rw")
	return nil
}

// hostUserID is the host uid that user code runs as.
func (b *Backend) hostUserID() int {
	if b.privileged {
		return b.hostBase + sandboxUID
	}
	return os.Getuid()
}
