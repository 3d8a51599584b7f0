package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/docker/docker/api/types/mount"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/internal/hostws"
)

// The warm pool keeps containers created and started ahead of need, so
// that a run of a new program costs neither a container's creation nor
// an exec: a launcher in the container starts it (launch.go). A pooled
// container serves one run and is then removed, like a container made
// for the run: no process, file, IPC object or counter of one run is
// ever seen by another. Only what cannot be known before the run moves
// to the moment it is taken:
//
//   - its /workspace is bound at creation from a directory of its own,
//     cN, in a tmpfs of the backend's on the host (poolDir) that is a
//     shared mount, with slave propagation: what the backend later mounts
//     on cN on the host appears at /workspace in the container, and
//     nothing the container mounts comes back. At take time the run's
//     host workspace is bound on cN, or, for a run without one, a fresh
//     tmpfs capped at the run's workspace size is mounted there; the
//     spec's files are written into it from the host (hostws.Prepare,
//     which never follows a link);
//   - its memory, CPU and process limits are set then (docker update)
//     when they differ from the pooled container's.
//
// The program's user is the container's, taken from the uid pool when
// the container is made: a host workspace an earlier run left to another
// uid (a session's) is handed to it, as any workspace is handed to the
// run's user (hostws.Prepare). With Options.WarmExec the program is an
// exec instead, its user chosen at take time.
//
// What is fixed at creation (the image, the /tmp and /dev/shm caps, the
// rlimits) makes the pool's key: a pool is kept per key that runs used,
// at most maxPools of them, the least recently used dropped first. A run
// whose spec needs a bind mount the image lacks (a compiled program from
// the host), or that the launcher cannot be sent (a newline in its argv,
// environment or directory), or whose image has no /bin/sh, gets a
// container of its own, as without the pool.
//
// Mounting on the host needs root and an engine on this machine; without
// them the pool stays off and every run gets a container of its own.

// MaxWarm bounds Options.Warm.
const MaxWarm = 8

// maxPools bounds the pool keys kept at once.
const maxPools = 4

// poolPrefix starts the name of the pool's directory on the host; the
// pid of the process that made it follows (capws.Sweep).
const poolPrefix = "coderunner-docker-pool-"

// pool holds the idle containers of one key.
type pool struct {
	key   string
	image string
	// lim are the limits of the run that last used the pool: new
	// containers are made with them, so that the next such run needs no
	// update.
	lim      sandbox.Limits
	idle     []*box
	creating int
	used     time.Time
	// waiting counts the runs waiting for a container being made;
	// ready is closed (and replaced) when one is done or failed.
	waiting int
	ready   chan struct{}
}

// done tells the runs waiting on p that a container was made, or not;
// b.mu is held.
func (p *pool) done() {
	close(p.ready)
	p.ready = make(chan struct{})
}

// poolKey identifies the container settings a warm container cannot
// change: the image, /tmp's and /dev/shm's cap and the rlimits. ok is
// false when s needs a bind mount the image lacks.
func (b *Backend) poolKey(s *sandbox.Spec, image string) (key string, ok bool) {
	for _, m := range s.Mounts {
		if !b.images.provides(m.TargetPath()) {
			return "", false
		}
	}
	lim := s.Limits
	data, _ := json.Marshal([]any{image, lim.TmpSize, lim.FileSize, lim.OpenFiles, stackLimit(lim)})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), true
}

// openPool makes the pool's directory on the host: a small tmpfs, a
// shared mount, in dir (empty: the system's temporary directory). Pool
// directories of processes that are gone are removed first.
func openPool(dir string) (string, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	capws.Sweep(dir, poolPrefix)
	p, err := os.MkdirTemp(dir, poolPrefix+strconv.Itoa(os.Getpid())+"-") //nolint:forbidigo // the host's work directory, no sandbox's
	if err != nil {
		return "", err
	}
	// Room for the mount points only: one directory per warm container
	// made and not yet removed, idle or running a program (as many as
	// the runs at once).
	if err := capws.Mount(p, 1<<20, 1<<16); err != nil {
		_ = os.Remove(p) //nolint:forbidigo // just made, nothing mounted
		return "", err
	}
	if err := unix.Mount("", p, "", unix.MS_SHARED, ""); err != nil {
		_ = (&capws.Dir{Path: p}).Remove()
		return "", fmt.Errorf("unable to make %s a shared mount: %w", p, err)
	}
	return p, nil
}

// closePool unmounts the pool's directory, with whatever is still
// mounted beneath it, and removes it.
func closePool(dir string) error {
	if dir == "" {
		return nil
	}
	return (&capws.Dir{Path: dir}).Remove()
}

// takeWarm returns a warm container readied for s (its workspace mounted,
// its user chosen, counted busy), or nil when there is none: the run then
// makes a container of its own. Either way the pool learns s's key and
// is refilled in the background.
//
// When the pool is empty but is making more containers than runs are
// waiting for, the run waits for one: it was started earlier than a
// container the run would make itself, and a second creation would only
// slow both down.
func (b *Backend) takeWarm(ctx context.Context, s *sandbox.Spec, image, key string) *box {
	if b.warm == 0 || !b.launchable(s, image) {
		return nil
	}
	pk, ok := b.poolKey(s, image)
	if !ok {
		return nil
	}
	var bx *box
	var evicted []*box
	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		return nil
	}
	p := b.pools[pk]
	if p == nil {
		if len(b.pools) >= maxPools {
			evicted = b.dropOldestPool()
		}
		p = &pool{key: pk, image: image, ready: make(chan struct{})}
		b.pools[pk] = p
	}
	p.lim, p.used = s.Limits, time.Now()
	empty := len(p.idle) == 0
	b.mu.Unlock()
	for _, old := range evicted {
		b.discard(old)
	}
	if empty {
		b.refill()
	}
	b.mu.Lock()
	for !b.closing && b.pools[pk] == p {
		if n := len(p.idle); n > 0 {
			bx = p.idle[n-1]
			p.idle = p.idle[:n-1]
			b.busy[bx.id] = bx
			b.warmTaken++
			break
		}
		if p.creating <= p.waiting || ctx.Err() != nil {
			break
		}
		p.waiting++
		ready := p.ready
		b.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
		}
		b.mu.Lock()
		p.waiting--
	}
	b.mu.Unlock()
	if bx == nil {
		// None to take, or the one the filler was making for this run
		// failed.
		b.refill()
		return nil
	}
	if b.launcherGone(bx) {
		return nil
	}
	bx.key = key
	if err := b.mountWorkspace(bx, s); err != nil {
		b.log.Warn("unable to ready a warm container; making one for the run", "container", bx.id, "error", err)
		b.release(bx, false)
		return nil
	}
	return bx
}

// launchable reports whether a warm container's launcher can run s in
// image: the image has /bin/sh, and the request line can carry s.
func (b *Backend) launchable(s *sandbox.Spec, image string) bool {
	if b.warmExec {
		return true
	}
	if _, none := b.noShell.Load(image); none {
		return false
	}
	return sendable(s)
}

// launcherGone reports whether the launcher of bx, just taken, died while
// it waited (killed, out of memory): bx is then replaced, uncounted, and
// the run makes a container of its own.
func (b *Backend) launcherGone(bx *box) bool {
	if bx.launch == nil || bx.launch.alive() {
		return false
	}
	b.log.Warn("a warm container's launcher is gone; making one for the run", "container", bx.id)
	b.mu.Lock()
	b.warmTaken--
	b.mu.Unlock()
	b.release(bx, false)
	return true
}

// dropOldestPool forgets the least recently used pool and returns its
// idle containers; b.mu is held. Containers it is making are removed when
// done.
func (b *Backend) dropOldestPool() []*box {
	var oldest *pool
	for _, p := range b.pools {
		if oldest == nil || p.used.Before(oldest.used) {
			oldest = p
		}
	}
	if oldest == nil {
		return nil
	}
	delete(b.pools, oldest.key)
	oldest.done()
	return oldest.idle
}

// mountWorkspace gives bx's program its user and its workspace: the
// spec's host workspace, or a fresh tmpfs capped at the workspace size,
// either holding the spec's files, mounted on bx's directory in the pool
// and so at /workspace in the container.
func (b *Backend) mountWorkspace(bx *box, s *sandbox.Spec) error {
	if bx.launch == nil {
		b.takeUser(bx, s.Workspace)
	}
	bx.files = nil
	if s.Workspace == "" {
		if err := capws.Mount(bx.mountDir, s.Limits.WorkspaceSize, maxInodes); err != nil {
			return err
		}
		bx.mounted = true
		return hostws.Prepare(bx.mountDir, s.Files, bx.uid, true)
	}
	if err := hostws.Prepare(s.Workspace, s.Files, bx.uid, os.Geteuid() == 0); err != nil {
		return err
	}
	src, err := unix.Open(s.Workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("unable to open the workspace %s: %w", s.Workspace, err)
	}
	defer unix.Close(src)
	dst, err := unix.Open(bx.mountDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("unable to open %s: %w", bx.mountDir, err)
	}
	defer unix.Close(dst)
	// Through the descriptors: no link is followed at either end.
	if err := unix.Mount("/proc/self/fd/"+strconv.Itoa(src), "/proc/self/fd/"+strconv.Itoa(dst), "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("unable to mount the workspace %s into a warm container: %w", s.Workspace, err)
	}
	bx.mounted = true
	return nil
}

// unmountWorkspace detaches what mountWorkspace mounted, on the host and
// so in the container.
func (b *Backend) unmountWorkspace(bx *box) error {
	if !bx.mounted {
		return nil
	}
	if err := capws.Unmount(bx.mountDir); err != nil {
		return err
	}
	bx.mounted = false
	return nil
}

// refill wakes the filler.
func (b *Backend) refill() {
	select {
	case b.fillWake <- struct{}{}:
	default:
	}
}

// fillBackoff is the pause after a warm container could not be made.
const fillBackoff = time.Second

// fill makes warm containers, one at a time, while a pool has fewer than
// b.warm idle; it ends at Close.
func (b *Backend) fill(ctx context.Context) {
	defer close(b.fillDone)
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.fillWake:
		}
		for {
			p, lim := b.needy()
			if p == nil {
				break
			}
			bx, err := b.createWarm(ctx, p.image, lim)
			b.mu.Lock()
			p.creating--
			keep := err == nil && !b.closing && b.pools[p.key] == p
			if err == nil {
				b.warmMade++
			}
			if keep {
				bx.idleSince = time.Now()
				p.idle = append(p.idle, bx)
			}
			_, noShell := b.noShell.Load(p.image)
			if err != nil && noShell && b.pools[p.key] == p {
				// No launcher can run in the image: no pool for it.
				delete(b.pools, p.key)
			}
			p.done()
			b.mu.Unlock()
			if err != nil && noShell {
				b.log.Info("no warm containers for an image without /bin/sh", "image", p.image)
				continue
			}
			if err != nil {
				if ctx.Err() == nil {
					b.log.Warn("unable to make a warm container", "image", p.image, "error", err)
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(fillBackoff):
				}
				continue
			}
			if !keep {
				b.discard(bx)
			}
		}
	}
}

// needy returns a pool short of warm containers, counting the one its
// caller is about to make, and the limits to make it with.
func (b *Backend) needy() (*pool, sandbox.Limits) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing {
		return nil, sandbox.Limits{}
	}
	for _, p := range b.pools {
		if len(p.idle)+p.creating < b.warm {
			p.creating++
			return p, p.lim
		}
	}
	return nil, sandbox.Limits{}
}

// createWarm makes and starts a warm container of image for runs with
// limits lim, its /workspace bound from a new directory in the pool.
func (b *Backend) createWarm(ctx context.Context, image string, lim sandbox.Limits) (*box, error) {
	b.mu.Lock()
	b.warmSeq++
	dir := filepath.Join(b.poolDir, "c"+strconv.Itoa(b.warmSeq))
	b.mu.Unlock()
	if err := os.Mkdir(dir, 0o755); err != nil { //nolint:forbidigo // in the backend's own tmpfs, which no sandbox writes
		return nil, err
	}
	bx := &box{image: image, res: resourcesOf(lim), warm: true, mountDir: dir}
	withLauncher := !b.warmExec
	if withLauncher {
		// The program's user, fixed from the start.
		b.takeUser(bx, "")
	}
	tmpfs := map[string]string{
		sandbox.TmpDir: fmt.Sprintf("rw,exec,nosuid,nodev,size=%d,nr_inodes=%d,mode=1777", lim.TmpSize, maxInodes),
		"/sys":         "ro,nosuid,nodev,noexec,size=4k",
	}
	mounts := []mount.Mount{{Type: mount.TypeBind, Source: dir, Target: sandbox.WorkspaceDir,
		BindOptions: &mount.BindOptions{Propagation: mount.PropagationRSlave}}}
	if err := b.launch(ctx, bx, image, lim, tmpfs, mounts, map[string]string{labelWarm: "1"}, withLauncher); err != nil {
		if bx.id == "" {
			b.freeUser(bx)
			b.removeMountDir(bx)
		}
		return nil, err
	}
	return bx, nil
}

// removeMountDir unmounts and removes bx's directory in the pool, once
// its container is gone.
func (b *Backend) removeMountDir(bx *box) {
	if bx.mountDir == "" {
		return
	}
	if err := b.unmountWorkspace(bx); err != nil {
		b.log.Warn("unable to unmount a warm container's workspace", "dir", bx.mountDir, "error", err)
		return
	}
	if err := os.Remove(bx.mountDir); err != nil && !errors.Is(err, os.ErrNotExist) { //nolint:forbidigo // our mount point, nothing mounted on it any more
		b.log.Warn("unable to remove a warm container's directory", "dir", bx.mountDir, "error", err)
	}
	bx.mountDir = ""
}

// flushWarm removes every idle warm container, and makes new ones.
func (b *Backend) flushWarm() {
	b.mu.Lock()
	var all []*box
	for _, p := range b.pools {
		all = append(all, p.idle...)
		p.idle = nil
	}
	b.mu.Unlock()
	for _, bx := range all {
		b.discard(bx)
	}
	b.refill()
}

// warmIdle lists the idle warm containers; b.mu is held.
func (b *Backend) warmIdle() []*box {
	var all []*box
	for _, p := range b.pools {
		all = append(all, p.idle...)
	}
	return all
}

// WarmStats are counts of the warm pool.
type WarmStats struct {
	// Idle are the warm containers waiting for a run now.
	Idle int
	// Taken counts the runs that found a warm container, Made the warm
	// containers made.
	Taken, Made int64
}

// Warm reports the warm pool's counts.
func (b *Backend) Warm() WarmStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return WarmStats{Idle: len(b.warmIdle()), Taken: b.warmTaken, Made: b.warmMade}
}
