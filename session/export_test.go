package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/coderunner/coderunner/execute"
)

// The tests reach a PersistentStore's directory and end its sessions;
// the command line does neither (a session ends when idle).

// Dir returns the directory that holds the sessions.
func (p *PersistentStore) Dir() string { return p.opts.Dir }

// Delete ends session id and removes its workspace, after the call running
// in it, if any.
func (p *PersistentStore) Delete(ctx context.Context, id string) error {
	if err := execute.ValidateSessionID(id); err != nil {
		return err
	}
	if _, err := os.Lstat(p.lockPath(id)); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Lstat(filepath.Join(p.opts.Dir, id)); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %q", ErrNotFound, id)
		}
	}
	lock, err := p.lock(ctx, id)
	if err != nil {
		return err
	}
	defer lock.Close()
	return p.remove(id)
}
