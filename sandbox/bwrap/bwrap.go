package bwrap

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/cgroup"
	"github.com/coderunner/coderunner/internal/seccomp"
	"github.com/coderunner/coderunner/internal/userns"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/internal/uidpool"
)

// ErrNotFound means the bwrap binary is not installed. It wraps
// sandbox.ErrUnavailable.
var ErrNotFound = fmt.Errorf("%w: bwrap (Bubblewrap) is not installed; install it with `apt-get install bubblewrap` (Debian, Ubuntu), `dnf install bubblewrap` (Fedora) or `apk add bubblewrap` (Alpine)", sandbox.ErrUnavailable)

// DefaultHostUIDBase is the first host uid of the range the backend uses
// as root: bwrap runs as one of DefaultHostUIDBase+1000 to +1999, a uid
// per sandbox (see uidpool). It lies apart from the native backend's
// range so that the two never share a uid.
const DefaultHostUIDBase = 1_200_000

// users is how many host uids bwrap runs as, from HostUIDBase+sandboxUID.
const users = 1000

// sandboxUID is the uid (and gid) of user code inside the sandbox.
const sandboxUID = 1000

// Options configure the bwrap backend. The zero value is ready to use.
type Options struct {
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Path is the bwrap binary; empty means "bwrap" looked up in PATH,
	// then /usr/bin/bwrap.
	Path string
	// StateDir holds the synthetic /etc and, as root, the mount points of
	// the runs' tmpfs. Empty means /run/coderunner-bwrap as root, else a
	// directory under the temporary directory.
	StateDir string
	// HostUIDBase is the host uid range used as root; bwrap runs as one
	// of HostUIDBase+1000 to +1999, a uid per sandbox, so that the
	// kernel's per-user counts one sandbox holds (inotify instances above
	// all) are not another's. Zero means DefaultHostUIDBase.
	HostUIDBase int
	// Cgroup configures cgroup discovery; zero values are the real system.
	Cgroup cgroup.Options
	// AllowRlimitsOnly lets runs go ahead where no cgroup is usable (an
	// ordinary user without a delegated cgroup), with their memory,
	// process and CPU limits enforced per process by rlimits only, and a
	// warning on every result. Without it such runs are refused
	// (sandbox.ErrNoCgroup).
	AllowRlimitsOnly bool

	// alternatives, when set, is bound at /etc/alternatives in place of
	// the host's sandbox.AlternativesDir, so that the tests can attack
	// the bind with links and files of their own.
	alternatives string
}

// Backend runs programs under Bubblewrap. It is safe for concurrent use.
type Backend struct {
	log        *slog.Logger
	path       string
	version    string
	privileged bool
	// users, as root, hands out the host uid each bwrap runs as; nil
	// keeps ours.
	users    *uidpool.Pool
	stateDir string
	etcDir   string
	ldCache  bool
	// alternatives is the host directory bound at /etc/alternatives, or
	// empty.
	alternatives string

	cgroups *cgroup.Manager
	// noCgroup refuses runs where cgroups is nil, unless rlimits alone
	// were allowed (Options.AllowRlimitsOnly).
	noCgroup *sandbox.NoCgroupPolicy
	filter   []byte
	warnings []string
	runID    atomic.Uint64
}

var (
	_ sandbox.Backend = (*Backend)(nil)
	_ sandbox.Prober  = (*Backend)(nil)
)

// New finds bwrap and prepares the backend: the seccomp filter, the
// synthetic /etc and the cgroup hierarchy. A missing bwrap is ErrNotFound.
func New(opts Options) (*Backend, error) {
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("%w: bwrap needs Linux", sandbox.ErrUnavailable)
	}
	b := &Backend{log: opts.Logger, privileged: os.Geteuid() == 0}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	p, err := findBwrap(opts.Path)
	if err != nil {
		return nil, err
	}
	b.path = p
	if out, err := exec.Command(p, "--version").Output(); err == nil {
		b.version = strings.TrimSpace(string(out))
	}
	if tooOld(b.version) {
		return nil, fmt.Errorf("%w: %s is too old: the bwrap backend needs bubblewrap %s or later (--json-status-fd)", sandbox.ErrUnavailable, b.version, minVersion)
	}
	prog, err := seccomp.Program()
	if err != nil {
		return nil, fmt.Errorf("%w: unable to build seccomp filter: %w", sandbox.ErrUnavailable, err)
	}
	b.filter = seccomp.Marshal(prog)
	if b.privileged {
		base := opts.HostUIDBase
		if base == 0 {
			base = DefaultHostUIDBase
		}
		b.users = uidpool.Shared(base+sandboxUID, users)
		// Root of a user namespace of its own may use only the ids it
		// maps; bwrap's setresuid would fail with EINVAL, unexplained.
		if err := userns.Mapped(base+sandboxUID, users); err != nil {
			return nil, fmt.Errorf("%w: the sandboxes' uids: %w", sandbox.ErrUnavailable, err)
		}
	}
	b.stateDir = opts.StateDir
	if b.stateDir == "" {
		b.stateDir = "/run/coderunner-bwrap"
		if !b.privileged {
			b.stateDir = filepath.Join(os.TempDir(), fmt.Sprintf("coderunner-bwrap-%d", os.Geteuid()))
		}
	}
	b.etcDir = filepath.Join(b.stateDir, "etc")
	if err := writeEtc(b.etcDir, sandboxUID); err != nil {
		return nil, fmt.Errorf("%w: unable to write the sandbox /etc: %w", sandbox.ErrUnavailable, err)
	}
	// bwrap, running as another uid, must reach the /etc files and the
	// mount points.
	if err := os.Chmod(b.stateDir, 0o755); err != nil { //nolint:gosec // see above
		return nil, fmt.Errorf("%w: unable to open up %s: %w", sandbox.ErrUnavailable, b.stateDir, err)
	}
	if b.privileged {
		if n := sweepRuns(b.stateDir, b.log); n > 0 {
			b.log.Info("removed the run directories of processes that died", "count", n)
		}
	}
	if _, err := os.Stat("/etc/ld.so.cache"); err == nil {
		b.ldCache = true
	}
	alternatives := opts.alternatives
	if alternatives == "" {
		alternatives = sandbox.AlternativesDir
	}
	b.alternatives = sandbox.HostAlternatives(alternatives)
	// bwrap's monitor exits without reaping its sandbox child; as a
	// subreaper we collect it instead of leaving a zombie to the machine's
	// init, which may never reap.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		b.log.Warn("unable to become a child subreaper; bwrap's sandbox children are left to init", "error", err)
	}
	var cgroupErr error
	b.cgroups, cgroupErr = cgroup.DetectWritable(opts.Cgroup, fmt.Sprintf("bwrap-probe-%d", os.Getpid()))
	var warning string
	b.noCgroup, warning = sandbox.NewNoCgroupPolicy(cgroupErr, opts.AllowRlimitsOnly)
	if warning != "" {
		b.warnings = append(b.warnings, warning)
	}
	if !b.privileged {
		b.warnings = append(b.warnings,
			"running unprivileged: /workspace and /tmp are capped in size but not in number of files")
	}
	return b, nil
}

// findBwrap resolves the bwrap binary.
func findBwrap(p string) (string, error) {
	if p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w (backend.bwrap_path %s: %w)", ErrNotFound, p, err)
		}
		return p, nil
	}
	if found, err := exec.LookPath("bwrap"); err == nil {
		return filepath.Abs(found)
	}
	if _, err := os.Stat("/usr/bin/bwrap"); err == nil {
		return "/usr/bin/bwrap", nil
	}
	return "", ErrNotFound
}

// Name returns "bwrap".
func (b *Backend) Name() string { return "bwrap" }

// PlacesTmpFiles reports that Run places Spec.TmpFiles. See
// sandbox.TmpFiler.
func (b *Backend) PlacesTmpFiles() bool { return true }

var _ sandbox.TmpFiler = (*Backend)(nil)

// Probe runs a trivial program and reports what the backend uses here.
func (b *Backend) Probe(ctx context.Context) sandbox.Report {
	r := sandbox.Report{Backend: b.Name(), Available: true, Warnings: append([]string(nil), b.warnings...)}
	if err := b.noCgroup.Refusal(); err != nil {
		r.Refused = err.Error()
	}
	r.Checks = append(r.Checks, sandbox.Check{Name: "bwrap", OK: true, Detail: strings.TrimSpace(b.path + " " + b.version)})
	uid := fmt.Sprintf("root: bwrap runs as a host uid of its sandbox's own (from a range of %d), user code as uid %d in its user namespace", users, sandboxUID)
	if !b.privileged {
		uid = fmt.Sprintf("unprivileged (uid %d): user code maps to it", os.Geteuid())
	}
	r.Checks = append(r.Checks, sandbox.Check{Name: "privileges", OK: true, Detail: uid})
	res, err := b.run(ctx, &sandbox.Spec{Args: []string{"/bin/true"}, Mounts: sandbox.SystemMounts(), Limits: sandbox.Limits{WallTime: 10e9}})
	switch {
	case err != nil:
		r.Available, r.Reason = false, err.Error()
	case res.Status != sandbox.StatusOK:
		r.Available, r.Reason = false, fmt.Sprintf("a trivial program ended with %s: %s", res.Status, strings.TrimSpace(string(res.Stderr)))
	}
	r.Checks = append(r.Checks, sandbox.Check{Name: "namespaces", OK: r.Available, Detail: orElse(r.Reason, "user, pid, mount, network, ipc, uts, cgroup (--unshare-all)")})
	r.Checks = append(r.Checks, b.noCgroup.Check(func() string { return b.cgroups.Describe() }))
	r.Checks = append(r.Checks, sandbox.Check{Name: "seccomp", OK: true,
		Detail: fmt.Sprintf("--seccomp with the native filter (%d instructions)", len(b.filter)/8)})
	return r
}

func orElse(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

var errNoInfo = errors.New("bwrap exited before its sandbox was set up")

// minVersion is the first bubblewrap with --json-status-fd, whose
// {"exit-code"} tells that the program was executed.
const minVersion = "0.5.0"

// tooOld reports whether bwrap --version ("bubblewrap 0.8.0") names a
// version before minVersion. A version it cannot read is not judged: the
// first run says what is wrong.
func tooOld(version string) bool {
	_, v, ok := strings.Cut(version, " ")
	if !ok {
		return false
	}
	parse := func(v string) (major, minor int, ok bool) {
		parts := strings.SplitN(v, ".", 3)
		if len(parts) < 2 {
			return 0, 0, false
		}
		major, err1 := strconv.Atoi(parts[0])
		minor, err2 := strconv.Atoi(parts[1])
		return major, minor, err1 == nil && err2 == nil
	}
	major, minor, ok := parse(strings.TrimSpace(v))
	if !ok {
		return false
	}
	wantMajor, wantMinor, _ := parse(minVersion)
	return major < wantMajor || major == wantMajor && minor < wantMinor
}
