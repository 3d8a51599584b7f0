package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/coderunner/coderunner/execute"
	"github.com/coderunner/coderunner/internal/capws"
)

// Defaults of Options.
const (
	DefaultIdleTimeout   = 30 * time.Minute
	DefaultMaxSessions   = 100
	DefaultMaxBytes      = 256 << 20
	DefaultMaxTotalBytes = 4 << 30
	DefaultMaxFiles      = 100_000
	// DefaultMaxIdleTimeout is the longest idle timeout a request may
	// give its session (execute.Request.SessionTTL).
	DefaultMaxIdleTimeout = 24 * time.Hour
	// DefaultRememberExpired and DefaultRememberExpiredFor bound the
	// expired sessions the Store remembers, so that a call naming one is
	// told it expired rather than finding an empty workspace.
	DefaultRememberExpired    = 4096
	DefaultRememberExpiredFor = time.Hour
	// maxDepth bounds how deep the usage walk descends; a workspace
	// nested deeper counts as over its cap.
	maxDepth = 128
)

// Options configure a Store. Zero fields take their defaults.
type Options struct {
	// Dir holds the instance directories of every Store sharing it. Empty
	// means coderunner-sessions-<uid> in os.TempDir(). It is created with
	// mode 0711 and must be a directory owned by this user that no one
	// else can write to.
	Dir string
	// IdleTimeout ends a session not used for this long; default
	// DefaultIdleTimeout. A request may give its session another
	// (execute.Request.SessionTTL), up to MaxIdleTimeout.
	IdleTimeout time.Duration
	// MaxIdleTimeout is the longest idle timeout a request may ask for;
	// default DefaultMaxIdleTimeout, and never less than IdleTimeout.
	MaxIdleTimeout time.Duration
	// RememberExpired is how many expired sessions the Store remembers,
	// each for RememberExpiredFor (defaults DefaultRememberExpired and
	// DefaultRememberExpiredFor): a call, Info or Delete naming one
	// fails with an *ExpiredError rather than ErrNotFound, and the first
	// call naming it is refused so that its caller learns the files are
	// gone (the next one starts the session anew).
	RememberExpired    int
	RememberExpiredFor time.Duration
	// MaxSessions is the number of live sessions; default
	// DefaultMaxSessions.
	MaxSessions int
	// MaxBytes caps the disk use of one session's workspace; default
	// DefaultMaxBytes.
	MaxBytes int64
	// MaxTotalBytes caps the disk use of all sessions together; default
	// DefaultMaxTotalBytes. A call is refused while the sessions' last
	// measured use reaches it.
	MaxTotalBytes int64
	// MaxFiles caps the files and directories of one workspace (the inodes
	// of its tmpfs as root, the entries the usage walk visits otherwise);
	// default DefaultMaxFiles.
	MaxFiles int
	// MaxFileBytes caps a file written by WriteFile; default
	// DefaultMaxFileBytes, and never more than MaxBytes.
	MaxFileBytes int64
	// NoTmpfs makes the workspaces plain directories, measured by
	// walking them between calls. It is for tests of the Store's own
	// bookkeeping: no backend accepts such a workspace, since nothing
	// caps it while a program runs. Without it each workspace is a tmpfs
	// of MaxBytes and MaxFiles: as root among the host's mounts; without
	// root mounted by the workspace keeper in a user and mount namespace
	// of its own (capws.MountKept), which lives as long as this process;
	// where neither can mount, a session cannot start (ErrDisabled says
	// why).
	NoTmpfs bool
	// Logger receives what the Store could not clean up; nil discards.
	Logger *slog.Logger

	// now is the clock of idle times; tests replace it.
	now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Dir == "" {
		o.Dir = filepath.Join(os.TempDir(), fmt.Sprintf("coderunner-sessions-%d", os.Geteuid()))
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxIdleTimeout <= 0 {
		o.MaxIdleTimeout = DefaultMaxIdleTimeout
	}
	o.MaxIdleTimeout = max(o.MaxIdleTimeout, o.IdleTimeout)
	if o.RememberExpired <= 0 {
		o.RememberExpired = DefaultRememberExpired
	}
	if o.RememberExpiredFor <= 0 {
		o.RememberExpiredFor = DefaultRememberExpiredFor
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = DefaultMaxTotalBytes
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.now == nil {
		o.now = time.Now
	}
	return o
}

// Store keeps the workspaces of sessions. It is safe for concurrent use.
type Store struct {
	opts Options
	// dir is this Store's instance directory; lock holds its flock.
	dir      string
	lock     *os.File
	lockPath string
	log      *slog.Logger

	mu       sync.Mutex
	sessions map[string]*entry
	// owned counts the sessions of each owner (WithMaxSessions).
	owned map[string]int
	// expired remembers the sessions that expired, by key, oldest first
	// in expiredOrder; both bounded by Options.RememberExpired.
	expired      map[string]time.Time
	expiredOrder []expiredKey
	seq          int
	// live counts entries not yet destroyed, ended ones still in use
	// included; the instance directory goes when it falls to zero after
	// Close.
	live   int
	closed bool
	// tmpfs is true while mounting tmpfs works here.
	tmpfs bool
	// inKeeper has the keeper mount the workspaces (without root, or as
	// root in the tests).
	inKeeper bool

	// interp runs the cells of interpreter sessions (SetInterpreter).
	interp Interpreter

	stop     chan struct{}
	stopOnce sync.Once
	reaper   sync.WaitGroup
}

// entry is one session.
type entry struct {
	id string
	// key is the id scoped to the session's owner (see WithOwner): the
	// key of Store.sessions.
	key string
	// dir is the workspace: for one the keeper holds, the path that
	// reaches it (kept.Path), while host is the directory on the host
	// it is mounted on.
	dir  string
	host string
	kept *capws.Dir
	// sem admits one call at a time.
	sem chan struct{}
	// owner is the owner of key (see WithOwner).
	owner string
	// created is when the session started.
	created time.Time
	// The fields below are guarded by Store.mu.
	lastUsed time.Time
	// ttl is the session's idle timeout.
	ttl     time.Duration
	used    int64
	busy    int
	ended   bool
	mounted bool
	// attached is what runs on in the session between its calls (its
	// interpreter), closed when the session ends.
	attached io.Closer
}

// Open creates the Store's instance directory under opts.Dir, removes the
// instance directories no live process holds, and starts the reaper of
// idle sessions.
func Open(opts Options) (s *Store, retErr error) {
	opts = opts.withDefaults()
	if err := ensureDir(opts.Dir); err != nil {
		return nil, err
	}
	cleanStale(opts.Dir, opts.Logger)
	var suffix [8]byte
	_, _ = rand.Read(suffix[:])
	name := "i-" + hex.EncodeToString(suffix[:])
	lock, lockPath, err := lockInstance(opts.Dir, name)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			_ = os.Remove(lockPath) //nolint:forbidigo // this instance's lock file
			_ = lock.Close()
		}
	}()
	dir := filepath.Join(opts.Dir, name)
	if err := os.Mkdir(dir, 0o711); err != nil { //nolint:forbidigo // this instance's directory in the sessions directory
		return nil, fmt.Errorf("unable to create the sessions directory: %w", err)
	}
	s = &Store{
		opts:     opts,
		dir:      dir,
		lock:     lock,
		lockPath: lockPath,
		log:      opts.Logger,
		sessions: make(map[string]*entry),
		owned:    make(map[string]int),
		expired:  make(map[string]time.Time),
		tmpfs:    !opts.NoTmpfs,
		inKeeper: !capws.Supported(),
		stop:     make(chan struct{}),
	}
	s.reaper.Add(1)
	go s.reap()
	return s, nil
}

// Dir returns the Store's instance directory, under which each session's
// workspace is a subdirectory.
func (s *Store) Dir() string { return s.dir }

// Len returns the number of live sessions.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Lease is the right to run one call in a session's workspace. Release it
// when the call is over.
type Lease struct {
	s    *Store
	e    *entry
	once sync.Once
}

// Dir is the host directory of the session's workspace, for
// execute.Request.Workspace.
func (l *Lease) Dir() string { return l.e.dir }

// ID is the session's id.
func (l *Lease) ID() string { return l.e.id }

// Attached returns what Attach left with the session, or nil.
func (l *Lease) Attached() io.Closer {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	return l.e.attached
}

// Attach leaves c with the session until its next call: something that
// lives on between calls, such as its interpreter. The session closes it
// when it ends (deleted, expired, or the Store closed), before its
// workspace is removed. It replaces, without closing, what was attached.
func (l *Lease) Attach(c io.Closer) {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	l.e.attached = c
}

// Acquire starts the session id if it is new and waits until no other call
// runs in it. It fails when the id is invalid, a cap is reached
// (ErrTooManySessions, as a *LimitError; ErrSessionFull, ErrDiskFull), the
// session expired since its last call (an *ExpiredError, once: the next
// call starts it anew), the session ended while the call waited
// (ErrNotFound), or ctx ends first.
func (s *Store) Acquire(ctx context.Context, id string) (*Lease, error) {
	return s.AcquireTTL(ctx, id, 0)
}

// AcquireTTL is Acquire that also sets the session's idle timeout to ttl
// (from 1 s to Options.MaxIdleTimeout, else ErrInvalidTTL); zero keeps
// the session's, which is Options.IdleTimeout for a new one.
func (s *Store) AcquireTTL(ctx context.Context, id string, ttl time.Duration) (*Lease, error) {
	if err := execute.ValidateSessionID(id); err != nil {
		return nil, err
	}
	if err := s.checkTTL(ttl); err != nil {
		return nil, err
	}
	e, err := s.enter(ctx, id, ttl)
	if err != nil {
		return nil, err
	}
	l, err := s.wait(ctx, e)
	if err != nil {
		return nil, err
	}
	if err := s.admit(e); err != nil {
		l.Release()
		return nil, err
	}
	return l, nil
}

// wait waits until no other call runs in the session of e, which enter
// or find returned, and leases it; when ctx ends first the session is
// left as it was.
func (s *Store) wait(ctx context.Context, e *entry) (*Lease, error) {
	select {
	case e.sem <- struct{}{}:
		return &Lease{s: s, e: e}, nil
	case <-ctx.Done():
		s.leave(e)
		return nil, fmt.Errorf("waiting for session %q: %w", e.id, ctx.Err())
	}
}

// MaxIdleTimeout is the longest idle timeout a request may give its
// session.
func (s *Store) MaxIdleTimeout() time.Duration { return s.opts.MaxIdleTimeout }

// checkTTL refuses an idle timeout a request may not ask for.
func (s *Store) checkTTL(ttl time.Duration) error {
	switch {
	case ttl == 0:
		return nil
	case ttl < time.Second:
		return fmt.Errorf("%w: %s is less than 1 s", ErrInvalidTTL, ttl)
	case ttl > s.opts.MaxIdleTimeout:
		return fmt.Errorf("%w: %d s is more than the %d s this server allows (sessions.max_idle_timeout)",
			ErrInvalidTTL, int64(ttl/time.Second), int64(s.opts.MaxIdleTimeout/time.Second))
	}
	return nil
}

// enter finds or starts the session id of ctx's owner and counts the
// caller as one of its users, so that it cannot expire under it; ttl,
// when not zero, becomes its idle timeout.
func (s *Store) enter(ctx context.Context, id string, ttl time.Duration) (*entry, error) {
	k, owner := key(ctx, id), Owner(ctx)
	s.mu.Lock()
	e, gone, err := s.enterLocked(ctx, k, owner, id, ttl)
	s.mu.Unlock()
	for _, g := range gone {
		s.destroy(g)
	}
	return e, err
}

// enterLocked is enter with s.mu held; gone are the sessions it ended,
// for the caller to destroy once s.mu is released.
func (s *Store) enterLocked(ctx context.Context, k, owner, id string, ttl time.Duration) (e *entry, gone []*entry, err error) {
	if s.closed {
		return nil, nil, ErrClosed
	}
	now := s.opts.now()
	e = s.sessions[k]
	if e != nil && s.dueLocked(e, now) {
		// Expired, and the reaper has not come by yet: it is gone all
		// the same.
		s.expireLocked(e, now)
		gone = append(gone, e)
		e = nil
	}
	if e == nil {
		if at, ok := s.expiredLocked(k, now); ok {
			// Tell the caller once that the files are gone, rather than
			// run its program in an empty workspace; the next call
			// starts the session anew.
			delete(s.expired, k)
			return nil, gone, &ExpiredError{ID: id, At: at}
		}
		if e, err = s.startLocked(ctx, k, owner, id, now, &gone); err != nil {
			return nil, gone, err
		}
	}
	if ttl > 0 {
		e.ttl = ttl
	}
	e.busy++
	e.lastUsed = now
	return e, gone, nil
}

// startLocked starts the session id of owner, within the caps.
func (s *Store) startLocked(ctx context.Context, k, owner, id string, now time.Time, gone *[]*entry) (*entry, error) {
	ownerMax := maxSessions(ctx)
	if len(s.sessions) >= s.opts.MaxSessions || (ownerMax > 0 && s.owned[owner] >= ownerMax) {
		*gone = append(*gone, s.sweepLocked(now)...)
	}
	if n := s.owned[owner]; ownerMax > 0 && n >= ownerMax {
		return nil, &LimitError{Limit: LimitOwnerSessions, Max: ownerMax, RetryAfter: s.retryLocked(owner, now),
			msg: fmt.Sprintf("%v: %d sessions of this key are open, its max_sessions; end one (DELETE /v1/sessions/{id}) or wait until one has been idle for its idle timeout",
				ErrTooManySessions, n)}
	}
	if n := len(s.sessions); n >= s.opts.MaxSessions {
		return nil, &LimitError{Limit: LimitServerSessions, Max: s.opts.MaxSessions, RetryAfter: s.retryLocked("", now),
			msg: fmt.Sprintf("%v: %d sessions are open, the most allowed; end one (DELETE /v1/sessions/{id}) or wait until one has been idle for %s",
				ErrTooManySessions, n, s.opts.IdleTimeout)}
	}
	if total := s.totalLocked(); total >= s.opts.MaxTotalBytes {
		return nil, fmt.Errorf("%w: %s of %s used; end a session to free space",
			ErrDiskFull, mib(total), mib(s.opts.MaxTotalBytes))
	}
	e, err := s.create(id)
	if err != nil {
		return nil, err
	}
	e.key, e.owner, e.created, e.ttl = k, owner, now, s.opts.IdleTimeout
	s.sessions[k] = e
	s.owned[owner]++
	s.live++
	return e, nil
}

// retryLocked is the time until the first idle session of owner (of
// anyone when owner is empty) expires: when a session cap may let a new
// one in.
func (s *Store) retryLocked(owner string, now time.Time) time.Duration {
	best := time.Duration(-1)
	for _, e := range s.sessions {
		if (owner != "" && e.owner != owner) || e.busy > 0 {
			continue
		}
		if d := e.lastUsed.Add(e.ttl).Sub(now); best < 0 || d < best {
			best = d
		}
	}
	if best < 0 {
		// Every session is in use: its idle time starts when its call
		// ends.
		return s.opts.IdleTimeout
	}
	return max(best, time.Second)
}

// create makes the workspace of a new session. Called with s.mu held:
// mounting is quick and must not race a Close.
func (s *Store) create(id string) (*entry, error) {
	s.seq++
	// The sequence number keeps a session started again under the same id
	// apart from the old one, whose files may still be in use by its last
	// call. Ids hold no '.', so names never collide.
	e := &entry{id: id, dir: filepath.Join(s.dir, fmt.Sprintf("%s.%d", id, s.seq)), sem: make(chan struct{}, 1)}
	if err := os.Mkdir(e.dir, 0o700); err != nil { //nolint:forbidigo // a new workspace in this instance's directory
		return nil, fmt.Errorf("unable to create the workspace of session %q: %w", id, err)
	}
	e.host = e.dir
	if s.tmpfs && s.inKeeper {
		// Without root the keeper mounts it in its own namespace; the
		// session lives no longer than this process, nor does the mount.
		d, err := capws.MountKept(e.dir, s.opts.MaxBytes, s.opts.MaxFiles)
		if err != nil {
			_ = os.Remove(e.dir) //nolint:forbidigo // the empty directory just made
			return nil, fmt.Errorf("session %q: %w without root: a session keeps its files between runs in a workspace capped in size and files, a tmpfs that a user namespace of coderunner's own could not mount here; allow user namespaces or run coderunner as root to use sessions (%w)", id, ErrDisabled, err)
		}
		e.kept, e.dir, e.mounted = d, d.Path, true
	} else if s.tmpfs {
		// The cap must hold while a call runs: a workspace that is not
		// a capped tmpfs is refused (every backend refuses it too).
		if err := mountTmpfs(e.dir, s.opts.MaxBytes, s.opts.MaxFiles); err != nil {
			_ = os.Remove(e.dir) //nolint:forbidigo // the empty directory just made
			return nil, fmt.Errorf("session %q: %w", id, err)
		}
		e.mounted = true
	}
	return e, nil
}

// admit checks the caps before a call runs in e.
func (s *Store) admit(e *entry) error {
	s.mu.Lock()
	ended := e.ended
	s.mu.Unlock()
	if ended {
		return fmt.Errorf("%w: session %q ended while the call waited", ErrNotFound, e.id)
	}
	used, err := s.measure(e)
	s.mu.Lock()
	e.used = used
	total := s.totalLocked()
	s.mu.Unlock()
	switch {
	case err != nil:
		return fmt.Errorf("%w: session %q: %w; end the session to start again", ErrSessionFull, e.id, err)
	case !e.mounted && used > s.opts.MaxBytes:
		return fmt.Errorf("%w: session %q uses %s, more than its %s; end the session to start again",
			ErrSessionFull, e.id, mib(used), mib(s.opts.MaxBytes))
	case total > s.opts.MaxTotalBytes:
		return fmt.Errorf("%w: %s of %s used; end a session to free space",
			ErrDiskFull, mib(total), mib(s.opts.MaxTotalBytes))
	}
	return nil
}

// measure returns the bytes the workspace uses.
func (s *Store) measure(e *entry) (int64, error) {
	if e.mounted {
		return fsUsage(e.dir)
	}
	return treeUsage(e.dir, s.opts.MaxFiles, maxDepth)
}

// Release ends the call: it records the workspace's use and lets the next
// call of the session run. It is safe to call more than once.
func (l *Lease) Release() {
	l.once.Do(func() {
		s, e := l.s, l.e
		used, err := s.measure(e)
		s.mu.Lock()
		if err == nil {
			e.used = used
		} else {
			// Unmeasurable means over a cap: admit refuses the next call.
			e.used = s.opts.MaxBytes + 1
		}
		e.lastUsed = s.opts.now()
		s.mu.Unlock()
		<-e.sem
		s.leave(e)
	})
}

// leave uncounts a user of e and destroys e when it ended and was the last.
func (s *Store) leave(e *entry) {
	s.mu.Lock()
	e.busy--
	gone := e.ended && e.busy == 0
	s.mu.Unlock()
	if gone {
		s.destroy(e)
	}
}

// Delete ends the session id of the owner without a credential (see
// WithOwner) and removes its workspace. A call running in it finishes
// first; the workspace is removed when it does. Calls waiting for it fail
// with ErrNotFound.
func (s *Store) Delete(id string) error { return s.DeleteContext(context.Background(), id) }

// DeleteContext is Delete for the session id of ctx's owner.
func (s *Store) DeleteContext(ctx context.Context, id string) error {
	if err := execute.ValidateSessionID(id); err != nil {
		return err
	}
	k := key(ctx, id)
	s.mu.Lock()
	now := s.opts.now()
	e := s.sessions[k]
	if e != nil && s.dueLocked(e, now) {
		// Expired; the reaper has not come by yet.
		if s.expireLocked(e, now) {
			defer s.destroy(e)
		}
		e = nil
	}
	if e == nil {
		at, ok := s.expiredLocked(k, now)
		// Deleting an expired session acknowledges it: the next call
		// starts it anew without a word.
		delete(s.expired, k)
		s.mu.Unlock()
		if ok {
			return &ExpiredError{ID: id, At: at}
		}
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	gone := s.endLocked(e)
	s.mu.Unlock()
	if gone {
		s.destroy(e)
	}
	return nil
}

// endLocked takes e out of the map and reports whether it can be destroyed
// at once (no call uses it).
func (s *Store) endLocked(e *entry) bool {
	delete(s.sessions, e.key)
	if s.owned[e.owner]--; s.owned[e.owner] <= 0 {
		delete(s.owned, e.owner)
	}
	e.ended = true
	return e.busy == 0
}

// destroy removes e's workspace. e is out of the map and unused.
func (s *Store) destroy(e *entry) {
	s.mu.Lock()
	a := e.attached
	e.attached = nil
	s.mu.Unlock()
	if a != nil {
		// Its process ends before its workspace goes.
		if err := a.Close(); err != nil {
			s.log.Warn("unable to end what ran in a session", "session_id", e.id, "error", err)
		}
	}
	switch {
	case e.kept != nil:
		// Unmounted in the keeper's namespace; the directory beneath,
		// on the host, was never written to.
		if err := e.kept.Remove(); err != nil {
			s.log.Warn("unable to remove a session workspace", "session_id", e.id, "path", e.host, "error", err)
		}
	case e.mounted:
		if err := unmount(e.dir); err != nil {
			s.log.Warn("unable to unmount a session workspace", "session_id", e.id, "path", e.dir, "error", err)
		}
		fallthrough
	default:
		if err := removeTree(e.dir); err != nil {
			s.log.Warn("unable to remove a session workspace", "session_id", e.id, "path", e.dir, "error", err)
		}
	}
	s.mu.Lock()
	s.live--
	last := s.closed && s.live == 0
	s.mu.Unlock()
	if last {
		s.finish()
	}
}

// totalLocked is the last measured use of every session.
func (s *Store) totalLocked() int64 {
	var total int64
	for _, e := range s.sessions {
		total += e.used
	}
	return total
}

// reap ends idle sessions until the Store is closed.
func (s *Store) reap() {
	defer s.reaper.Done()
	t := time.NewTicker(min(max(s.opts.IdleTimeout/10, time.Second), time.Minute))
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.Sweep()
		}
	}
}

// Sweep ends every session idle for Options.IdleTimeout or longer and
// removes its workspace. The Store calls it periodically; calling it
// directly makes expiry immediate.
func (s *Store) Sweep() {
	s.mu.Lock()
	gone := s.sweepLocked(s.opts.now())
	s.mu.Unlock()
	for _, e := range gone {
		s.destroy(e)
	}
}

// sweepLocked ends idle sessions and returns those to destroy. Sessions in
// use never expire.
func (s *Store) sweepLocked(now time.Time) []*entry {
	var due []*entry
	for _, e := range s.sessions {
		if s.dueLocked(e, now) {
			due = append(due, e)
		}
	}
	// Remembered in the order they expired, so that the latest are the
	// ones kept.
	slices.SortFunc(due, func(a, b *entry) int { return a.lastUsed.Add(a.ttl).Compare(b.lastUsed.Add(b.ttl)) })
	var gone []*entry
	for _, e := range due {
		if s.expireLocked(e, now) {
			gone = append(gone, e)
		}
	}
	return gone
}

// dueLocked reports whether e has been idle for its idle timeout.
func (s *Store) dueLocked(e *entry, now time.Time) bool {
	return e.busy == 0 && now.Sub(e.lastUsed) >= e.ttl
}

// expireLocked ends e as expired, remembering it for a while, and
// reports whether it can be destroyed at once.
func (s *Store) expireLocked(e *entry, now time.Time) bool {
	s.rememberLocked(e.key, e.lastUsed.Add(e.ttl), now)
	return s.endLocked(e)
}

// expiredKey is one remembered expiry, in the order they happened.
type expiredKey struct {
	key string
	at  time.Time
}

// rememberLocked records that the session of key expired at at, and
// forgets the expiries older than Options.RememberExpiredFor or beyond
// Options.RememberExpired.
func (s *Store) rememberLocked(key string, at, now time.Time) {
	s.expired[key] = at
	s.expiredOrder = append(s.expiredOrder, expiredKey{key, at})
	drop := 0
	for _, x := range s.expiredOrder {
		if len(s.expiredOrder)-drop <= s.opts.RememberExpired && now.Sub(x.at) < s.opts.RememberExpiredFor {
			break
		}
		if s.expired[x.key].Equal(x.at) {
			delete(s.expired, x.key)
		}
		drop++
	}
	s.expiredOrder = append(s.expiredOrder[:0:0], s.expiredOrder[drop:]...)
}

// expiredLocked returns when the session of key expired, if that is
// remembered and recent.
func (s *Store) expiredLocked(key string, now time.Time) (time.Time, bool) {
	at, ok := s.expired[key]
	if !ok || now.Sub(at) >= s.opts.RememberExpiredFor {
		return time.Time{}, false
	}
	return at, true
}

// Close ends every session and removes its workspace; the workspaces of
// calls still running are removed when they finish, and the instance
// directory after the last. It is safe to call more than once.
func (s *Store) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	s.reaper.Wait()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	var gone []*entry
	for _, e := range s.sessions {
		if s.endLocked(e) {
			gone = append(gone, e)
		}
	}
	last := s.live == 0
	s.mu.Unlock()
	for _, e := range gone {
		s.destroy(e)
	}
	if last {
		s.finish()
	}
	return nil
}

// finish removes the instance directory and releases its lock, once.
func (s *Store) finish() {
	if err := removeTree(s.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log.Warn("unable to remove the sessions directory", "path", s.dir, "error", err)
	}
	_ = os.Remove(s.lockPath) //nolint:forbidigo // this instance's lock file
	_ = s.lock.Close()
}

// mib formats a size for messages.
func mib(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }
