package native

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/cgroup"
	"github.com/coderunner/coderunner/internal/seccomp"
	"github.com/coderunner/coderunner/internal/userns"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/internal/kquota"
	"github.com/coderunner/coderunner/sandbox/internal/uidpool"
	"github.com/coderunner/coderunner/sandbox/native/nsinit"
)

// Options configure the native backend. The zero value is ready to use.
type Options struct {
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// StateDir holds the directory on which each sandbox mounts its root
	// (inside its own mount namespace, so the host never sees it). Empty
	// means /run/coderunner as root, else a directory under
	// $XDG_RUNTIME_DIR or the temporary directory.
	StateDir string
	// HostUIDBase is the host uid (and gid) the sandbox init runs as when
	// coderunner runs as root; user code runs as HostUIDBase+1000, and
	// each sandbox's user namespace is created by (and so belongs to) one
	// of HostUIDBase+2000 to HostUIDBase+2999, so that what a sandbox
	// holds of the kernel's per-user counts is charged to that uid, not
	// to root nor to other sandboxes. Zero means DefaultHostUIDBase.
	HostUIDBase int
	// Cgroup configures cgroup discovery; zero values are the real system.
	Cgroup cgroup.Options
	// Warm is how many sandboxes to start ahead of need, so that a run
	// does not wait for its namespaces to be created. Each serves one run
	// and is never reused. Long-lived callers (the server) want 1 or 2;
	// a one-shot command wants 0. Call Close to stop them.
	Warm int
	// PerRequest gives every run a new sandbox, torn down after it, as
	// before sandboxes were kept between runs. Without it (the default)
	// a sandbox whose run ended by itself within its limits, left no
	// socket and little memory charged, is kept for a later run of the
	// same shape: that run gets new PID, IPC and mount namespaces of its
	// own, empty /tmp and /workspace, its own host workspace attached,
	// and the cgroup's counters measured from its start (see Series).
	PerRequest bool
	// AllowRlimitsOnly lets runs go ahead where no cgroup is usable (an
	// ordinary user without a delegated cgroup), with their memory,
	// process and CPU limits enforced per process by rlimits only, and a
	// warning on every result. Without it such runs are refused
	// (sandbox.ErrNoCgroup).
	AllowRlimitsOnly bool

	// noAttach makes runs bind a host workspace out of the sandbox's copy
	// of the host's tree, in a new sandbox, as on kernels that cannot
	// clone a mount or attach it in the sandbox's namespace, so that the
	// tests cover that path too.
	noAttach bool
	// clone, when set, replaces cloneWorkspace, so that the tests can
	// send what the init cannot attach.
	clone func(dir string) (*os.File, error)
	// alternatives, when set, is bound at /etc/alternatives in place of
	// the host's sandbox.AlternativesDir, so that the tests can attack
	// the bind with links and files of their own.
	alternatives string
	// keepHostAttached makes every sandbox keep the host's tree attached
	// until its second phase is done, as it must on kernels that cannot
	// clone mounts out of a detached tree (before Linux 6.15), so that
	// the tests cover that path on newer ones too.
	keepHostAttached bool
}

// DefaultHostUIDBase is the first host uid of the range the sandbox maps
// when running as root. It is far above the ids distributions hand out.
const DefaultHostUIDBase = 1_000_000

// maxWarm bounds Options.Warm.
const maxWarm = 64

// The host uids that own sandboxes' user namespaces, as root: owners of
// them from HostUIDBase+ownerOffset, apart from the two uids mapped in the
// sandboxes (HostUIDBase and HostUIDBase+sandboxUID).
const (
	ownerOffset = 2000
	owners      = 1000
)

// sandboxUID is the uid (and gid) of user code inside the sandbox when the
// backend runs as root.
const sandboxUID = 1000

// Backend is the native sandbox backend. It is safe for concurrent use.
type Backend struct {
	log        *slog.Logger
	rootDir    string
	privileged bool
	hostBase   int
	// owners, as root, hands out the host uids that start sandbox inits
	// and so own their user namespaces (mapped in none): one each, so
	// that the kernel's per-user counts of one sandbox are neither root's
	// nor another's.
	owners *uidpool.Pool
	// innerUID is the uid user code has inside the sandbox.
	innerUID int

	cgroups *cgroup.Manager
	// noCgroup refuses runs where cgroups is nil, unless rlimits alone
	// were allowed (Options.AllowRlimitsOnly).
	noCgroup *sandbox.NoCgroupPolicy
	filter   []byte
	warnings []string

	// shared are the mounts every sandbox gets in its first phase
	// (BaseMounts); firstOps encodes that phase but for the sources to
	// open ahead, which depend on what runs have needed (known).
	shared   map[sandbox.Mount]bool
	firstOps []byte
	knownMu  sync.Mutex
	known    []string
	// recent are the limits of the latest run: sandboxes started ahead
	// of need get its cgroup limits and /tmp and /workspace sizes, so
	// that a run like it skips setting them.
	recent atomic.Pointer[sandbox.Limits]
	// noAttach is set where a host workspace's mount cannot be sent to a
	// sandbox (hostWorkspace): runs bind it out of a new sandbox's copy
	// of the host's tree instead.
	noAttach atomic.Bool
	clone    func(dir string) (*os.File, error)
	// coldStarts counts the sandboxes started for a run that found none
	// ready.
	coldStarts atomic.Uint64

	pool *warmPool
	// background is set while sandboxes started ahead of need start at
	// the lowest priority until a run takes them: as root, where the
	// priority can be given back (priorityRestorable), until a refusal
	// says otherwise (foreground).
	background atomic.Bool
	closeOnce  sync.Once
	// open are the series not yet closed, whose kept sandboxes Close
	// releases.
	seriesMu sync.Mutex
	open     map[*series]struct{}
	// kept is the series every run goes through unless Options.PerRequest
	// is set (then nil): sandboxes kept from one run to a later one.
	// reusedRuns counts the runs it served in a kept sandbox.
	kept       *series
	reusedRuns atomic.Uint64
	// teardown counts runs whose sandbox is still being torn down after
	// their result was returned; teardownErrs are the errors of such
	// teardowns, which Close returns.
	teardown     sync.WaitGroup
	teardownMu   sync.Mutex
	teardownErrs []error
	runID        atomic.Uint64
}

// spawnID numbers the sandboxes of this process, whatever backend made
// them: it names their cgroups.
var spawnID atomic.Uint64

var _ sandbox.Backend = (*Backend)(nil)
var _ sandbox.Prober = (*Backend)(nil)

var _ sandbox.WorkspaceInspector = (*Backend)(nil)

// New prepares the native backend: it finds the cgroup hierarchy, builds the
// seccomp filter and the synthetic /etc, and checks that user namespaces
// can be created. It fails only when the backend cannot work at all here.
func New(opts Options) (*Backend, error) {
	b := &Backend{
		log:        opts.Logger,
		privileged: os.Geteuid() == 0,
		hostBase:   opts.HostUIDBase,
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.hostBase == 0 {
		b.hostBase = DefaultHostUIDBase
	}
	if b.privileged {
		b.innerUID = sandboxUID
		b.owners = uidpool.Shared(b.hostBase+ownerOffset, owners)
		// Root of a user namespace of its own may use only the ids it
		// maps; a sandbox's setresuid would fail with EINVAL, unexplained.
		if err := userns.Mapped(b.hostBase, ownerOffset+owners); err != nil {
			return nil, fmt.Errorf("%w: the sandboxes' uids: %w", sandbox.ErrUnavailable, err)
		}
	}
	b.noAttach.Store(opts.noAttach)
	b.clone = cloneWorkspace
	if opts.clone != nil {
		b.clone = opts.clone
	}
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("%w: native backend needs Linux", sandbox.ErrUnavailable)
	}
	prog, err := seccomp.Program()
	if err != nil {
		return nil, fmt.Errorf("%w: unable to build seccomp filter: %w", sandbox.ErrUnavailable, err)
	}
	b.filter = seccomp.Marshal(prog)

	dir, err := stateDir(opts.StateDir, b.privileged)
	if err != nil {
		return nil, err
	}
	b.rootDir = filepath.Join(dir, "root")
	// The init, running as an unprivileged host uid, must be able to
	// reach the mount point: it is an empty directory that only serves
	// as a mount point inside each sandbox's own mount namespace.
	if err := os.MkdirAll(b.rootDir, 0o755); err != nil { //nolint:gosec // see above
		return nil, fmt.Errorf("%w: unable to create %s: %w", sandbox.ErrUnavailable, b.rootDir, err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { //nolint:gosec // see above
		return nil, fmt.Errorf("%w: unable to open up %s: %w", sandbox.ErrUnavailable, dir, err)
	}
	if err := os.Chmod(b.rootDir, 0o755); err != nil { //nolint:gosec // see above
		return nil, fmt.Errorf("%w: unable to open up %s: %w", sandbox.ErrUnavailable, b.rootDir, err)
	}

	var cgroupErr error
	b.cgroups, cgroupErr = cgroup.DetectWritable(opts.Cgroup, fmt.Sprintf("probe-%d", os.Getpid()))
	if cgroupErr == nil {
		if n := b.cgroups.RemoveStale(staleCgroupAge, deadOwner); n > 0 {
			b.log.Info("removed the cgroups of runs whose process died", "event", "stale_cgroups_removed", "count", n)
		}
	}
	var warning string
	b.noCgroup, warning = sandbox.NewNoCgroupPolicy(cgroupErr, opts.AllowRlimitsOnly)
	if warning != "" {
		b.warnings = append(b.warnings, warning)
	}
	if !b.privileged {
		b.warnings = append(b.warnings,
			"running unprivileged: user code runs as uid 0 of its own user namespace, without capabilities")
	}
	b.shared = map[sandbox.Mount]bool{}
	for _, m := range BaseMounts() {
		b.shared[sharedKey(m)] = true
	}
	alternatives := opts.alternatives
	if alternatives == "" {
		alternatives = sandbox.AlternativesDir
	}
	b.firstOps = b.encodeFirstPhase(syntheticEtc(b.innerUID), sandbox.HostAlternatives(alternatives), opts.keepHostAttached)
	if !opts.PerRequest {
		b.kept = b.newSeries()
		b.kept.requests = true
	}
	if opts.Warm > 0 && b.noCgroup.Refusal() == nil {
		b.background.Store(b.privileged && priorityRestorable())
		if b.privileged && !b.background.Load() {
			b.log.Info("sandboxes started ahead of need keep the normal priority: this process could not give a lowered priority back (CAP_SYS_NICE counts only outside a user namespace)",
				"event", "warm_priority_normal")
		}
		b.startPool(min(opts.Warm, maxWarm))
	}
	return b, nil
}

// Name returns "native".
func (b *Backend) Name() string { return "native" }

// InspectsWorkspace reports that Run calls Spec.Inspect with the run's
// private workspace. See sandbox.WorkspaceInspector.
func (b *Backend) InspectsWorkspace() bool { return true }

// PlacesTmpFiles reports that Run places Spec.TmpFiles. See
// sandbox.TmpFiler.
func (b *Backend) PlacesTmpFiles() bool { return true }

var _ sandbox.TmpFiler = (*Backend)(nil)

func stateDir(dir string, privileged bool) (string, error) {
	if dir != "" {
		return dir, nil
	}
	if privileged {
		return "/run/coderunner", nil
	}
	if xdg := os.Getenv("XDG_RUNTIME_DIR"); xdg != "" {
		return filepath.Join(xdg, "coderunner"), nil
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("coderunner-%d", os.Geteuid())), nil
}

// syntheticEtc is the files of /etc inside the sandbox, where beside them
// only the host's /etc/alternatives is bound: no host account, host name,
// resolver or secret is visible. The loader cache is the host's, so that
// shared libraries resolve as they do on the host.
func syntheticEtc(uid int) map[string][]byte {
	etc := map[string][]byte{
		"/etc/passwd": fmt.Appendf(nil,
			"root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:%d:%d:sandbox:%s:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
			uid, uid, sandbox.WorkspaceDir),
		"/etc/group":            fmt.Appendf(nil, "root:x:0:\nsandbox:x:%d:\nnogroup:x:65534:\n", uid),
		"/etc/hosts":            []byte("127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n"),
		"/etc/hostname":         []byte("sandbox\n"),
		"/etc/nsswitch.conf":    []byte("passwd: files\ngroup: files\nhosts: files\n"),
		"/etc/resolv.conf":      nil,
		"/etc/fonts/fonts.conf": []byte(sandbox.FontsConf),
	}
	if cache, err := os.ReadFile("/etc/ld.so.cache"); err == nil && len(cache) < 16<<20 {
		etc["/etc/ld.so.cache"] = cache
	}
	return etc
}

// encodeFirstPhase is what every sandbox does before its run is known:
// the root with the shared mounts, /etc (with the host directory
// alternatives, when not empty, bound at /etc/alternatives), /dev, /proc,
// the host name, the loopback interface and the seccomp filter to install
// later.
func (b *Backend) encodeFirstPhase(etc map[string][]byte, alternatives string, keepHostAttached bool) []byte {
	var w setup
	if keepHostAttached {
		w.op(nsinit.OpRoot, b.rootDir, "attached")
	} else {
		w.op(nsinit.OpRoot, b.rootDir)
	}
	for _, m := range BaseMounts() {
		if fi, err := os.Lstat(m.Source); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if link, err := os.Readlink(m.Source); err == nil {
				w.op(nsinit.OpSymlink, link, m.TargetPath())
			}
			continue
		}
		w.op(nsinit.OpBind, m.Source, m.TargetPath(), "ro")
	}
	for _, name := range slices.Sorted(maps.Keys(etc)) {
		w.file(name, etc[name], 0o644, 0, 0)
	}
	if alternatives != "" {
		// Links only, as the host's packages chose them: read-only,
		// nosuid, nodev and noexec, they resolve inside the sandbox.
		w.op(nsinit.OpBind, alternatives, sandbox.AlternativesDir, "ro,noexec")
	}
	w.mkdir("/dev", 0o755, 0, 0)
	for _, dev := range []string{"null", "zero", "full", "random", "urandom"} {
		w.op(nsinit.OpDev, dev)
	}
	w.op(nsinit.OpSymlink, "/proc/self/fd", "/dev/fd")
	w.op(nsinit.OpSymlink, "/proc/self/fd/0", "/dev/stdin")
	w.op(nsinit.OpSymlink, "/proc/self/fd/1", "/dev/stdout")
	w.op(nsinit.OpSymlink, "/proc/self/fd/2", "/dev/stderr")
	// POSIX shared memory and semaphores live in /tmp, under its cap.
	w.op(nsinit.OpSymlink, sandbox.TmpDir, "/dev/shm")
	w.op(nsinit.OpProc, "/proc")
	w.op(nsinit.OpHostname, "sandbox")
	w.op(nsinit.OpLoopback)
	for _, m := range kquota.UserNamespaceMax {
		w.op(nsinit.OpUsernsMax, m.Name, strconv.Itoa(m.Value))
	}
	w.head(nsinit.OpSeccomp, 1)
	w.arg(b.filter)
	return w.buf
}

// firstPhase is the first frame for a new sandbox: it joins a new cgroup
// namespace (the init is in its cgroup by then) and opens, while it still
// can, the bind sources runs have needed and those in extra. With give
// set (as root), a source the init's host user cannot reach (below a
// directory not everyone may search) is opened by give instead and sent
// with the frame: given, in the order of the frame's OpGiven.
func (b *Backend) firstPhase(extra []string, give func(src string) (*os.File, error)) (frameBytes []byte, opened map[string]bool, given []*os.File, err error) {
	var w setup
	w.op(nsinit.OpCgroupNS)
	opened = map[string]bool{}
	b.knownMu.Lock()
	sources := slices.Concat(b.known, extra)
	b.knownMu.Unlock()
	for _, src := range sources {
		if opened[src] {
			continue
		}
		if give == nil || traversable(src) {
			opened[src] = true
			w.op(nsinit.OpPreopen, src)
			continue
		}
		f, err := give(src)
		if errors.Is(err, fs.ErrNotExist) {
			// Gone since it was learned: a run that needs it finds out
			// when it binds it, as with OpPreopen.
			continue
		}
		if err == nil && len(given) == nsinit.MaxGiven {
			_ = f.Close()
			err = fmt.Errorf("more than %d mount sources below directories the sandbox's owner may not search", nsinit.MaxGiven)
		}
		if err != nil {
			for _, f := range given {
				_ = f.Close()
			}
			return nil, nil, nil, fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
		}
		opened[src] = true
		given = append(given, f)
		w.op(nsinit.OpGiven, src)
	}
	w.buf = append(w.buf, b.firstOps...)
	// /tmp and /workspace are mount points only: each run mounts its own
	// at its sizes (run.phase).
	w.mkdir(sandbox.TmpDir, 0o755, 0, 0)
	w.mkdir(sandbox.WorkspaceDir, 0o755, 0, 0)
	return frame(w.buf), opened, given, nil
}

// maxKnown bounds the sources every new sandbox opens ahead.
const maxKnown = 32

// learn remembers toolchain sources that an unprivileged init could not
// open itself, so that sandboxes started ahead of need open them.
func (b *Backend) learn(sources []string) {
	b.knownMu.Lock()
	defer b.knownMu.Unlock()
	for _, src := range sources {
		if len(b.known) < maxKnown && !slices.Contains(b.known, src) && !traversable(src) {
			b.known = append(b.known, src)
		}
	}
}

// traversable reports whether every directory above path can be searched
// by anyone, that is whether the init can open path after it has given up
// the host identity it starts with.
func traversable(p string) bool {
	for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if dir == "/" {
			return true
		}
	}
}

// Probe reports what the native backend can use here.
func (b *Backend) Probe(ctx context.Context) sandbox.Report {
	r := sandbox.Report{Backend: b.Name(), Available: true, Warnings: append([]string(nil), b.warnings...)}
	if err := b.noCgroup.Refusal(); err != nil {
		r.Refused = err.Error()
	}
	uid := fmt.Sprintf("root: user code runs as host uid %d; each sandbox's user namespace belongs to a host uid of its own (%d to %d)", b.hostBase+sandboxUID, b.hostBase+ownerOffset, b.hostBase+ownerOffset+owners-1)
	if !b.privileged {
		uid = fmt.Sprintf("unprivileged (uid %d): user code maps to it", os.Geteuid())
	}
	r.Checks = append(r.Checks, sandbox.Check{Name: "privileges", OK: true, Detail: uid})

	// The probe's own trivial program runs even where runs are refused,
	// so that doctor tells everything else that works.
	res, err := b.run(ctx, &sandbox.Spec{
		Args:   []string{"/bin/true"},
		Mounts: BaseMounts(),
		Limits: sandbox.Limits{WallTime: 10e9},
	}, true)
	switch {
	case err != nil:
		r.Available = false
		r.Reason = err.Error()
		r.Checks = append(r.Checks, sandbox.Check{Name: "namespaces", OK: false, Detail: err.Error()})
	case res.Status != sandbox.StatusOK:
		r.Available = false
		r.Reason = fmt.Sprintf("a trivial program ended with %s", res.Status)
		r.Checks = append(r.Checks, sandbox.Check{Name: "namespaces", OK: false, Detail: r.Reason})
	default:
		r.Checks = append(r.Checks, sandbox.Check{Name: "namespaces", OK: true,
			Detail: "user, pid, mount, network, ipc, uts, cgroup"})
	}
	r.Checks = append(r.Checks, b.noCgroup.Check(func() string { return b.cgroups.Describe() }))
	r.Checks = append(r.Checks, sandbox.Check{Name: "seccomp", OK: true,
		Detail: fmt.Sprintf("%d-instruction filter for %s; denies %d syscalls and every foreign ABI",
			len(b.filter)/8, runtime.GOARCH, len(seccomp.DeniedSyscalls()))})
	if err := landlockAvailable(); err == nil {
		r.Checks = append(r.Checks, sandbox.Check{Name: "landlock", OK: true, Detail: "available (not needed: the sandbox root holds only what is mounted)"})
	}
	return r
}

func landlockAvailable() error {
	// LANDLOCK_CREATE_RULESET_VERSION: ask for the ABI version.
	_, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1)
	if errno != 0 {
		return errno
	}
	return nil
}

// BaseMounts are the read-only host paths every program needs: /usr and the
// merged-/usr links at the root.
func BaseMounts() []sandbox.Mount { return sandbox.SystemMounts() }

var errInitDied = errors.New("sandbox init died without a report")
