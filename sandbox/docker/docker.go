package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/coderunner/coderunner/lang"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/internal/uidpool"
)

// Labels put on every container the backend creates.
const (
	labelBackend  = "coderunner.backend"
	labelInstance = "coderunner.instance"
	labelPID      = "coderunner.pid"
	// labelWarm marks a container made for the warm pool.
	labelWarm = "coderunner.warm"
)

// Defaults of Options.
const (
	// DefaultUIDBase and DefaultUsers are the host uids (gids alike) user
	// code runs as when Options.User is empty: one per container, from
	// DefaultUIDBase on (see uidpool).
	DefaultUIDBase     = 1_100_000
	DefaultUsers       = 1000
	DefaultIdleTimeout = 10 * time.Second
	DefaultMaxIdle     = 16
)

// Options configure the docker backend. The zero value talks to the local
// engine with the default language table.
type Options struct {
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Host is the engine's address (unix:///var/run/docker.sock,
	// tcp://...); empty means DOCKER_HOST or the local socket. Bind mounts
	// (workspaces, compiled programs) need an engine on this machine.
	Host string
	// Languages maps programs to images (each recipe's image); nil means
	// lang.Default().
	Languages *lang.Table
	// DefaultImage runs programs no language claims; empty means the bash
	// language's image.
	DefaultImage string
	// PullPolicy is always, if_not_present (the default) or never.
	PullPolicy string
	// User is the numeric "uid:gid" user code runs as in every
	// container; never root. Empty (the default) gives each container a
	// host uid of its own, from DefaultUIDBase: the kernel keeps some of
	// its counts per user (inotify instances, queued signals, POSIX
	// message queue bytes), and containers sharing a user share them, so
	// one program at those limits leaves the others none.
	User string
	// Reuse keeps a container per program between its runs (each run a
	// fresh process in it, after a reset of its scratch directories, its
	// POSIX message queues and, where the image has ipcrm, its SysV IPC
	// objects), several times faster than a container per run. A
	// container has one PID namespace, so a run can still tell from its
	// process ids how many processes the runs before it started (an
	// earlier test's hidden input, another caller's run of the same
	// code): only for callers and tests that trust each other. Off by
	// default: every run creates and removes a container of its own.
	Reuse bool
	// IdleTimeout is how long a container waits for another run of the
	// same program before it is removed; zero means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxIdle bounds the idle containers kept; zero means DefaultMaxIdle.
	MaxIdle int
	// Warm is how many containers to keep created and started ahead of
	// need for each kind of run seen (an image and its fixed settings),
	// from 0 (the default: none) to MaxWarm. A run that finds one costs
	// neither a container's creation nor an exec (a launcher in it
	// starts the program); the container still serves that run only. It needs root (the run's workspace is mounted
	// into the container from the host) and an engine on this machine;
	// elsewhere it is ignored, with a warning.
	Warm int
	// TempDir holds the warm containers' mount points; empty means the
	// system's temporary directory.
	TempDir string
	// WarmExec runs the program of a warm container with docker exec, as
	// the backend did before warm containers had a launcher: one exec
	// per run, 45 to 80 ms, where the launcher needs none. For
	// measurements; off by default.
	WarmExec bool
}

// Backend runs programs in containers of the Docker Engine. It is safe for
// concurrent use; Close removes every container it made.
type Backend struct {
	log    *slog.Logger
	cli    *client.Client
	images *images
	pull   string
	// uid and gid are the fixed user's (Options.User), when users is nil.
	uid, gid int
	user     string
	// users hands out a uid per container when no user is fixed.
	users *uidpool.Pool
	// keeper is the "uid:gid" of the process that keeps a container alive
	// between runs: another user than the program's, so that the program
	// cannot kill it and the cleanup's kill(-1) spares it.
	keeper   string
	profile  string
	instance string
	reuse    bool
	idleTTL  time.Duration
	maxIdle  int
	// warm is the number of warm containers per pool (0: no pool), and
	// warmOff why the pool is off when one was asked for.
	warm    int
	warmOff string
	// warmExec runs warm containers' programs with docker exec
	// (Options.WarmExec); noShell holds the images without /bin/sh, whose
	// runs get no warm container.
	warmExec bool
	noShell  sync.Map // image ref -> true
	// poolDir is the warm pool's shared tmpfs on the host; warmSeq
	// numbers the containers' directories in it.
	poolDir string
	warmSeq int
	// warmTaken and warmMade count runs served warm and containers made.
	warmTaken, warmMade int64
	pools               map[string]*pool
	fillWake            chan struct{}
	fillDone            chan struct{}
	stopFill            context.CancelFunc

	pullMu sync.Mutex
	ready  sync.Map // image ref -> true

	mu    sync.Mutex
	idle  map[string][]*box
	nIdle int
	busy  map[string]*box
	// gone are the containers being removed.
	gone    map[string]bool
	closing bool
	// removing counts containers being removed in the background.
	removing sync.WaitGroup
	// orphans are containers the backend failed to remove (the engine
	// did not answer); the janitor tries again.
	orphans map[string]bool
	// owner is the owner label of this process (see labelOwner).
	owner   string
	janitor chan struct{}
	// stopStale ends the search for stale containers at Close.
	stopStale context.CancelFunc
	closed    sync.Once
	// tookWarm, when set (by tests), is called with each warm container
	// a run took, before the run is sent to it.
	tookWarm func(*box)
}

var (
	_ sandbox.Backend = (*Backend)(nil)
	_ sandbox.Prober  = (*Backend)(nil)
)

// New connects to the engine (without calling it: CheckAvailable and Probe
// do) and prepares the seccomp profile and the image map.
func New(opts Options) (*Backend, error) {
	b := &Backend{
		log:      opts.Logger,
		pull:     opts.PullPolicy,
		user:     opts.User,
		reuse:    opts.Reuse,
		idleTTL:  opts.IdleTimeout,
		maxIdle:  opts.MaxIdle,
		warmExec: opts.WarmExec,
		idle:     map[string][]*box{},
		busy:     map[string]*box{},
		gone:     map[string]bool{},
		pools:    map[string]*pool{},
		orphans:  map[string]bool{},
		owner:    processOwner(os.Getpid()),
		janitor:  make(chan struct{}),
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.pull == "" {
		b.pull = PullIfNotPresent
	}
	if !slices.Contains([]string{PullAlways, PullIfNotPresent, PullNever}, b.pull) {
		return nil, fmt.Errorf("%w: docker pull policy %q is not always, if_not_present or never", sandbox.ErrUnavailable, b.pull)
	}
	var err error
	if b.user == "" {
		b.users = uidpool.Shared(DefaultUIDBase, DefaultUsers)
	} else if b.uid, b.gid, err = parseUser(b.user); err != nil {
		return nil, fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
	}
	keeper := 65533
	if b.uid == keeper {
		keeper = 65532
	}
	b.keeper = fmt.Sprintf("%d:%d", keeper, keeper)
	if b.idleTTL <= 0 {
		b.idleTTL = DefaultIdleTimeout
	}
	if b.maxIdle <= 0 {
		b.maxIdle = DefaultMaxIdle
	}
	if opts.Warm < 0 || opts.Warm > MaxWarm {
		return nil, fmt.Errorf("%w: docker warm containers %d must be between 0 and %d", sandbox.ErrUnavailable, opts.Warm, MaxWarm)
	}
	t := opts.Languages
	if t == nil {
		t = lang.Default()
	}
	b.images = newImages(t, opts.DefaultImage)
	if b.profile, err = profileJSON(); err != nil {
		return nil, fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	b.instance = hex.EncodeToString(id[:])
	copts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if opts.Host != "" {
		copts = append(copts, client.WithHost(opts.Host))
	}
	if b.cli, err = client.NewClientWithOpts(copts...); err != nil {
		return nil, fmt.Errorf("%w: docker client: %w", sandbox.ErrUnavailable, err)
	}
	go b.sweep()
	if opts.Warm > 0 {
		b.startPool(opts.Warm, opts.TempDir)
	}
	var staleCtx context.Context
	staleCtx, b.stopStale = context.WithCancel(context.Background())
	b.removing.Add(1)
	go b.removeStaleAtStart(staleCtx, copts)
	return b, nil
}

// parseUser reads a numeric, non-root "uid:gid" (or "uid").
func parseUser(u string) (uid, gid int, err error) {
	us, gs, found := strings.Cut(u, ":")
	if !found {
		gs = us
	}
	uid, err1 := strconv.Atoi(us)
	gid, err2 := strconv.Atoi(gs)
	if err1 != nil || err2 != nil || uid <= 0 || gid <= 0 || uid > 1<<31 || gid > 1<<31 {
		return 0, 0, fmt.Errorf("docker user %q must be a numeric, non-root uid:gid (the workspace tmpfs is owned by it)", u)
	}
	return uid, gid, nil
}

// Name returns "docker".
func (b *Backend) Name() string { return "docker" }

// ImageFor names the image that runs the language id's programs and
// compiler, by reference and, when the engine answers, by the ID of the
// image the reference now points to. A compile cache keys on it: the
// image's compiler need not be the host's, and an image rebuilt under the
// same tag may hold another.
func (b *Backend) ImageFor(id string) string {
	ref := b.images.forLanguage(id)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if img, err := b.cli.ImageInspect(ctx, ref); err == nil && img.ID != "" {
		return ref + "@" + img.ID
	}
	return ref
}

// CheckAvailable reports whether the engine answers: nil when it does.
func (b *Backend) CheckAvailable(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := b.cli.Ping(ctx); err != nil {
		return fmt.Errorf("%w: the Docker engine does not answer at %s: %w", sandbox.ErrUnavailable, b.cli.DaemonHost(), err)
	}
	return nil
}

// CheckAvailable reports whether a Docker engine answers at host (empty:
// DOCKER_HOST or the local socket), as the Go API's CheckDockerAvailable
// reports.
func CheckAvailable(ctx context.Context, host string) bool {
	b, err := New(Options{Host: host})
	if err != nil {
		return false
	}
	defer b.Close()
	return b.CheckAvailable(ctx) == nil
}

// Probe reports whether the engine answers, its version, and which of the
// language table's images are present. When the engine does not answer,
// the configured images are still listed, as not checked.
func (b *Backend) Probe(ctx context.Context) sandbox.Report {
	r := sandbox.Report{Backend: b.Name(), Available: true}
	refs := b.images.refs()
	names := slices.Sorted(maps.Keys(refs))
	if err := b.CheckAvailable(ctx); err != nil {
		r.Available, r.Reason = false, err.Error()
		r.Checks = append(r.Checks, sandbox.Check{Name: "engine", OK: false, Detail: err.Error()})
		for _, ref := range names {
			r.Checks = append(r.Checks, sandbox.Check{Name: "image " + ref, OK: false,
				Detail: "not checked (no engine), for " + strings.Join(refs[ref], ", ")})
		}
		return r
	}
	v, err := b.cli.ServerVersion(ctx)
	if err == nil {
		r.Checks = append(r.Checks, sandbox.Check{Name: "engine", OK: true,
			Detail: fmt.Sprintf("Docker %s (API %s) at %s", v.Version, v.APIVersion, b.cli.DaemonHost())})
	}
	missing := 0
	for _, ref := range names {
		_, err := b.cli.ImageInspect(ctx, ref)
		detail := "present, for " + strings.Join(refs[ref], ", ")
		if err != nil {
			missing++
			detail = fmt.Sprintf("missing (pull policy %s), for %s", b.pull, strings.Join(refs[ref], ", "))
		}
		r.Checks = append(r.Checks, sandbox.Check{Name: "image " + ref, OK: err == nil, Detail: detail})
	}
	if missing > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d image(s) missing: build local ones with scripts/build-images.sh, or pull them", missing))
	}
	mode := "a container per run"
	if b.reuse {
		mode = "a container per program, reused for its runs (fresh process, workspace and limits per run; process ids carry on)"
	}
	warm := "possible here: serve, mcp and judge keep docker.warm of them for each kind of run"
	switch err := b.warmPossible(); {
	case b.warm > 0:
		warm = fmt.Sprintf("%d started ahead for each kind of run seen, each for one run, its program started by a launcher (no docker exec)", b.warm)
		if b.warmExec {
			warm = fmt.Sprintf("%d started ahead for each kind of run seen, each for one run, its program started with docker exec", b.warm)
		}
	case b.warmOff != "":
		warm = "off: " + b.warmOff
	case err != nil:
		warm = "not possible here: " + err.Error()
	}
	r.Checks = append(r.Checks,
		sandbox.Check{Name: "seccomp", OK: true, Detail: "custom profile from the native policy; native ABI only"},
		sandbox.Check{Name: "user", OK: true, Detail: b.userDetail()},
		sandbox.Check{Name: "containers", OK: true, Detail: mode},
		sandbox.Check{Name: "warm containers", OK: true, Detail: warm})
	probe, err := b.Run(ctx, &sandbox.Spec{Args: []string{"/bin/true"}, Limits: sandbox.Limits{WallTime: 30 * time.Second}})
	switch {
	case err != nil:
		r.Available, r.Reason = false, err.Error()
	case probe.Status != sandbox.StatusOK:
		r.Available, r.Reason = false, fmt.Sprintf("a trivial program ended with %s: %s", probe.Status, strings.TrimSpace(string(probe.Stderr)))
	}
	return r
}

// Close removes every container of the backend; it is safe to call more
// than once.
func (b *Backend) Close() error {
	var err error
	b.closed.Do(func() {
		b.stopStale()
		close(b.janitor)
		b.mu.Lock()
		b.closing = true
		for _, p := range b.pools {
			// Runs waiting for a warm container make their own.
			p.done()
		}
		b.mu.Unlock()
		if b.stopFill != nil {
			// The filler puts nothing in the pools once closing is set.
			b.stopFill()
			<-b.fillDone
		}
		b.mu.Lock()
		var all []*box
		for _, bs := range b.idle {
			all = append(all, bs...)
		}
		all = append(all, b.warmIdle()...)
		b.idle, b.nIdle, b.pools = map[string][]*box{}, 0, map[string]*pool{}
		b.mu.Unlock()
		for _, bx := range all {
			b.discard(bx)
		}
		b.removing.Wait()
		// Anything left with our label (a run cancelled mid-creation, a
		// container the engine did not let us remove).
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = b.removeLabelled(ctx, filters.Arg("label", labelInstance+"="+b.instance))
		if perr := closePool(b.poolDir); perr != nil {
			err = errors.Join(err, perr)
		}
		_ = b.cli.Close()
	})
	return err
}

// removeLabelled removes the containers matching f.
func (b *Backend) removeLabelled(ctx context.Context, f filters.KeyValuePair) error {
	list, err := b.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(f)})
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range list {
		if err := b.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil && !isGone(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Leftovers reports anything of a finished run the backend still holds:
// a container being removed, one that is neither idle nor running a
// program, or an idle one with a process other than its keeper. Tests
// call it after every run.
func (b *Backend) Leftovers(ctx context.Context) error {
	b.mu.Lock()
	idle := map[string]bool{}
	for _, bs := range b.idle {
		for _, bx := range bs {
			idle[bx.id] = true
		}
	}
	for _, bx := range b.warmIdle() {
		idle[bx.id] = true
	}
	gone := maps.Clone(b.gone)
	busy := len(b.busy)
	b.mu.Unlock()
	list, err := b.cli.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", labelInstance+"="+b.instance))})
	if err != nil {
		return err
	}
	var found []string
	if busy > 0 {
		found = append(found, fmt.Sprintf("%d container(s) still running a program", busy))
	}
	for _, c := range list {
		if !idle[c.ID] && c.Labels[labelWarm] != "" && !gone[c.ID] {
			// Being made for the warm pool: no run's.
			continue
		}
		if !idle[c.ID] {
			found = append(found, "container "+c.ID[:12]+" ("+c.State+")")
			continue
		}
		top, err := b.cli.ContainerTop(ctx, c.ID, []string{"-o", "pid,user,args"})
		if err != nil {
			found = append(found, "container "+c.ID[:12]+": "+err.Error())
			continue
		}
		// docker-init and the keeper's sleep.
		if len(top.Processes) > 2 {
			found = append(found, fmt.Sprintf("container %s runs %v", c.ID[:12], top.Processes))
		}
	}
	if len(found) > 0 {
		return errors.New(strings.Join(found, "; "))
	}
	return nil
}

// sweep removes containers idle for longer than the idle timeout.
func (b *Backend) sweep() {
	t := time.NewTicker(max(b.idleTTL/4, 250*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-b.janitor:
			return
		case <-t.C:
		}
		b.removeOrphans()
		var old []*box
		b.mu.Lock()
		for key, bs := range b.idle {
			keep := bs[:0]
			for _, bx := range bs {
				if time.Since(bx.idleSince) > b.idleTTL {
					old = append(old, bx)
					b.nIdle--
				} else {
					keep = append(keep, bx)
				}
			}
			if len(keep) == 0 {
				delete(b.idle, key)
			} else {
				b.idle[key] = keep
			}
		}
		b.mu.Unlock()
		for _, bx := range old {
			b.discard(bx)
		}
	}
}

// userDetail says who user code runs as.
func (b *Backend) userDetail() string {
	if b.users == nil {
		return "user code runs as " + b.user
	}
	return fmt.Sprintf("user code runs as a host uid (and gid) of its container's own, from %d to %d", DefaultUIDBase, DefaultUIDBase+DefaultUsers-1)
}

// takeUser gives bx its user: the fixed one, else a uid of its own (or a
// kept workspace's, see uidpool.TakeFor).
func (b *Backend) takeUser(bx *box, workspace string) {
	if b.users == nil {
		bx.uid, bx.gid = b.uid, b.gid
		return
	}
	bx.uid = b.users.TakeFor(workspace)
	bx.gid = bx.uid
	bx.pooled = true
}

// freeUser gives bx's uid back to the pool, once its container is gone
// (or was never made).
func (b *Backend) freeUser(bx *box) {
	if bx.pooled {
		bx.pooled = false
		b.users.Put(bx.uid)
	}
}

// user is the "uid:gid" bx's programs run as.
func (bx *box) user() string { return fmt.Sprintf("%d:%d", bx.uid, bx.gid) }

// warmPossible says why warm containers cannot be kept here, or nil.
func (b *Backend) warmPossible() error {
	if h := b.cli.DaemonHost(); !strings.HasPrefix(h, "unix://") {
		return fmt.Errorf("the engine at %s may not be on this machine: its containers cannot mount this machine's workspaces", h)
	}
	if os.Geteuid() != 0 {
		return errors.New("mounting workspaces into warm containers needs root")
	}
	return nil
}

// startPool turns the warm pool on, with n containers per pool, its
// mount points in dir; where it cannot be, the pool stays off, with a
// warning.
func (b *Backend) startPool(n int, dir string) {
	p, err := "", b.warmPossible()
	if err == nil {
		p, err = openPool(dir)
	}
	if err != nil {
		b.warmOff = err.Error()
		b.log.Info("docker warm containers off", "reason", b.warmOff)
		return
	}
	b.warm, b.poolDir = n, p
	b.fillWake = make(chan struct{}, 1)
	b.fillDone = make(chan struct{})
	var ctx context.Context
	ctx, b.stopFill = context.WithCancel(context.Background())
	go b.fill(ctx)
}
