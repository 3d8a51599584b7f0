package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/coderunner/coderunner/execute"
)

// lockPoll is how often a call waiting for a session held by another
// process tries its lock again.
const lockPoll = 20 * time.Millisecond

// PersistentStore keeps session workspaces on disk across processes, for
// callers that live for one call, such as coderunner run --session. Each
// session is a directory named by its id under Options.Dir, with a lock
// file beside it: a call holds the lock (flock) while it runs, so calls of
// one session run one at a time whichever process makes them, and the lock
// file records when the session was last used and how much it held then.
//
// The caps are those of Store. Each workspace is a tmpfs of
// Options.MaxBytes and Options.MaxFiles, so that a call cannot fill the
// disk while it runs; the mount outlives the process that made it, which
// is what keeps the files for the next call, and goes when the session
// does (or when the machine restarts: a session's files do not survive a
// reboot). Mounting needs root: without it a session cannot start (the
// workspace keeper's mounts, which Store uses without root, end with the
// process, and these must outlive it). With
// Options.NoTmpfs (tests of the bookkeeping) the caps are checked by
// walking the workspace before and after each call. Sessions idle for
// Options.IdleTimeout are removed by the next call of any session, as are
// workspaces left without their lock file.
type PersistentStore struct {
	opts  Options
	tmpfs bool
}

// OpenPersistent checks (creating it if needed) the directory that holds
// the sessions and removes the sessions that expired.
func OpenPersistent(opts Options) (*PersistentStore, error) {
	opts = opts.withDefaults()
	if err := ensureDir(opts.Dir); err != nil {
		return nil, err
	}
	p := &PersistentStore{opts: opts, tmpfs: !opts.NoTmpfs}
	p.Sweep()
	return p, nil
}

// PersistentLease is the right to run one call in a session of a
// PersistentStore. Release it when the call is over.
type PersistentLease struct {
	p    *PersistentStore
	id   string
	lock *os.File
}

// Dir is the host directory of the session's workspace, for
// execute.Request.Workspace.
func (l *PersistentLease) Dir() string { return filepath.Join(l.p.opts.Dir, l.id) }

// Acquire waits until no other call, in this process or another, runs in
// session id, then starts the session if it is new. It fails when the id
// is invalid, a cap is reached (ErrTooManySessions, ErrSessionFull,
// ErrDiskFull), or ctx ends first.
func (p *PersistentStore) Acquire(ctx context.Context, id string) (_ *PersistentLease, retErr error) {
	if err := execute.ValidateSessionID(id); err != nil {
		return nil, err
	}
	lock, err := p.lock(ctx, id)
	if err != nil {
		return nil, err
	}
	l := &PersistentLease{p: p, id: id, lock: lock}
	defer func() {
		if retErr != nil {
			l.unlock()
		}
	}()
	dir := l.Dir()
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) { //nolint:forbidigo // a workspace's own name in the sessions directory
		if err := p.admitNew(id); err != nil {
			// The lock file of a session that never started goes too.
			_ = os.Remove(p.lockPath(id)) //nolint:forbidigo // a lock file in the sessions directory
			return nil, err
		}
		if err := os.Mkdir(dir, 0o700); err != nil { //nolint:forbidigo // a workspace's own name in the sessions directory
			return nil, fmt.Errorf("unable to create the workspace of session %q: %w", id, err)
		}
	}
	if p.tmpfs && !isMountPoint(dir) {
		// A new session, or one whose tmpfs went with a restart of the
		// machine (what is left below is removed with the session).
		if err := mountTmpfs(dir, p.opts.MaxBytes, p.opts.MaxFiles); err != nil {
			// The lock file of a session that never started goes too.
			_ = os.Remove(dir)            //nolint:forbidigo // the workspace's own name in the sessions directory
			_ = os.Remove(p.lockPath(id)) //nolint:forbidigo // a lock file in the sessions directory
			return nil, fmt.Errorf("session %q: %w", id, err)
		}
	}
	used, err := treeUsage(dir, p.opts.MaxFiles, maxDepth)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: session %q: %w; end the session to start again", ErrSessionFull, id, err)
	case used > p.opts.MaxBytes:
		return nil, fmt.Errorf("%w: session %q uses %s, more than its %s; end the session to start again",
			ErrSessionFull, id, mib(used), mib(p.opts.MaxBytes))
	}
	return l, nil
}

// admitNew checks the caps on the count and total size of sessions before
// session id starts.
func (p *PersistentStore) admitNew(id string) error {
	n, total := 0, int64(0)
	for _, other := range p.ids() {
		if other == id {
			continue
		}
		if _, err := os.Lstat(filepath.Join(p.opts.Dir, other)); err != nil { //nolint:forbidigo // a workspace's own name in the sessions directory
			continue
		}
		n++
		total += recordedUse(p.lockPath(other))
	}
	switch {
	case n >= p.opts.MaxSessions:
		return fmt.Errorf("%w: %d sessions are open, the most allowed; end one or wait until one has been idle for %s",
			ErrTooManySessions, n, p.opts.IdleTimeout)
	case total >= p.opts.MaxTotalBytes:
		return fmt.Errorf("%w: %s of %s used; end a session to free space",
			ErrDiskFull, mib(total), mib(p.opts.MaxTotalBytes))
	}
	return nil
}

// Release records the workspace's use and when it was used, and lets the
// next call of the session run. It is safe to call more than once.
func (l *PersistentLease) Release() {
	if l.lock == nil {
		return
	}
	used, err := treeUsage(l.Dir(), l.p.opts.MaxFiles, maxDepth)
	if err != nil {
		// Unmeasurable means over a cap: the next call refuses it.
		used = l.p.opts.MaxBytes + 1
	}
	// Writing the record also sets the lock file's modification time,
	// which is the session's last use.
	if err := l.lock.Truncate(0); err == nil {
		_, _ = l.lock.WriteAt([]byte(strconv.FormatInt(used, 10)), 0)
	}
	now := l.p.opts.now()
	_ = os.Chtimes(l.lock.Name(), now, now) //nolint:forbidigo // a lock file in the sessions directory
	l.unlock()
}

func (l *PersistentLease) unlock() {
	if l.lock != nil {
		_ = l.lock.Close() // closing releases the flock
		l.lock = nil
	}
}

// remove deletes the workspace and then the lock file of session id, whose
// lock the caller holds. A process waiting for the lock finds the file gone
// once it gets it, and starts over.
func (p *PersistentStore) remove(id string) error {
	dir := filepath.Join(p.opts.Dir, id)
	if isMountPoint(dir) {
		if err := unmount(dir); err != nil {
			return fmt.Errorf("session %q: %w", id, err)
		}
	}
	err := removeTree(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("unable to remove the workspace of session %q: %w", id, err)
	}
	if err := os.Remove(p.lockPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) { //nolint:forbidigo // a lock file in the sessions directory
		return fmt.Errorf("unable to remove the lock of session %q: %w", id, err)
	}
	return nil
}

// Sweep removes the sessions idle for Options.IdleTimeout or longer, and
// workspaces whose lock file is missing. Sessions in use are left alone.
func (p *PersistentStore) Sweep() {
	now := p.opts.now()
	for _, id := range p.ids() {
		if !p.expired(id, now) {
			continue
		}
		lock, err := tryLockSession(p.lockPath(id))
		if err != nil || lock == nil {
			continue // in use, or gone meanwhile
		}
		// Used between the listing and the lock?
		if p.expired(id, now) {
			if err := p.remove(id); err != nil {
				p.opts.Logger.Warn("unable to remove an expired session", "session_id", id, "error", err)
			}
		}
		_ = lock.Close()
	}
}

// expired reports whether session id was last used IdleTimeout before now,
// or has a workspace without a lock file.
func (p *PersistentStore) expired(id string, now time.Time) bool {
	fi, err := os.Lstat(p.lockPath(id)) //nolint:forbidigo // a lock file in the sessions directory
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	return now.Sub(fi.ModTime()) >= p.opts.IdleTimeout
}

// ids lists the sessions under the directory, by their lock files and
// workspaces; names that are not session ids are ignored.
func (p *PersistentStore) ids() []string {
	entries, err := os.ReadDir(p.opts.Dir) //nolint:forbidigo // the sessions directory, listed by name only
	if err != nil {
		p.opts.Logger.Warn("unable to list the sessions directory", "path", p.opts.Dir, "error", err)
		return nil
	}
	seen := make(map[string]bool, len(entries))
	var ids []string
	for _, e := range entries {
		id := strings.TrimSuffix(e.Name(), ".lock")
		if execute.ValidateSessionID(id) != nil || seen[id] {
			continue
		}
		seen[id] = true
		ids = append(ids, id)
	}
	return ids
}

func (p *PersistentStore) lockPath(id string) string {
	return filepath.Join(p.opts.Dir, id+".lock")
}

// lock takes the lock of session id, waiting for another holder until ctx
// ends.
func (p *PersistentStore) lock(ctx context.Context, id string) (*os.File, error) {
	path := p.lockPath(id)
	for {
		f, err := tryLockSession(path)
		if err != nil {
			return nil, fmt.Errorf("unable to lock session %q: %w", id, err)
		}
		if f != nil {
			return f, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for session %q: %w", id, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

// recordedUse is the use in bytes that the lock file at path records, 0 if
// none.
func recordedUse(path string) int64 {
	b, err := os.ReadFile(path) //nolint:forbidigo // a lock file in the sessions directory
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return max(n, 0)
}

// Execute runs req with ex. A request with a SessionID runs in that
// session's workspace, after the session's running call if any; one
// without runs as it is. A SessionTTL is refused (ErrInvalidTTL), and so
// is the interpreter mode (execute.ErrInvalidMode): a process that ends
// with its call keeps files between calls, not a live interpreter.
func (p *PersistentStore) Execute(ctx context.Context, ex Executor, req execute.Request) (*execute.Result, error) {
	if req.Mode != "" {
		return nil, fmt.Errorf("%w %q: sessions kept on disk between processes (coderunner run --session) keep files, not a live interpreter; "+
			"interpreter sessions are served by coderunner serve (HTTP) and coderunner mcp", execute.ErrInvalidMode, req.Mode)
	}
	if req.SessionTTL != 0 {
		// Its sessions share the store's idle timeout, recorded nowhere
		// per session: refuse rather than ignore what was asked.
		return nil, fmt.Errorf("%w: sessions kept on disk between processes all take sessions.idle_timeout", ErrInvalidTTL)
	}
	if req.SessionID == nil {
		return ex.Execute(ctx, req)
	}
	if req.Workspace != "" {
		return nil, fmt.Errorf("session %q: the request already names a workspace", *req.SessionID)
	}
	lease, err := p.Acquire(ctx, *req.SessionID)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	req.Workspace = lease.Dir()
	return ex.Execute(ctx, req)
}
