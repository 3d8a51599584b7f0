package bwrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/cgroup"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/internal/hostws"
	"github.com/coderunner/coderunner/sandbox/internal/kquota"
	"github.com/coderunner/coderunner/sandbox/internal/threadid"
	"github.com/coderunner/coderunner/sandbox/internal/watch"
)

// Bounds on waits that only a broken bwrap or kernel could exceed.
const (
	// setupTimeout bounds the wait for bwrap to report its sandbox child.
	setupTimeout = 10 * time.Second
	// drainTimeout bounds how long output is read after the run ended.
	drainTimeout = 2 * time.Second
	// exitTimeout bounds the wait for bwrap's exit once it was killed.
	exitTimeout = 10 * time.Second
)

// maxInodes caps the files of each tmpfs: without it a run could pin
// kernel memory with millions of empty files.
const maxInodes = 16384

// Run executes spec in a fresh bwrap sandbox. See sandbox.Backend.
func (b *Backend) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	if err := b.noCgroup.Admit(b.log, b.Name()); err != nil {
		return nil, err
	}
	return b.run(ctx, spec)
}

// run is Run without the refusal: the probe's trivial program runs even
// where runs are refused, so that doctor tells everything else.
func (b *Backend) run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	s, err := sandbox.PreparedToRun(ctx, spec)
	if err != nil {
		return nil, err
	}
	if err := hostws.Capped(s); err != nil {
		return nil, err
	}
	if err := hostws.Bindable(s, "bwrap"); err != nil {
		return nil, err
	}
	r := &run{b: b, spec: s, id: b.runID.Add(1), uid: -1}
	if b.users != nil {
		r.uid = b.users.TakeFor(s.Workspace)
	}
	defer r.close()
	return r.execute(ctx)
}

// run is the state of one execution; close releases all of it on every
// path.
type run struct {
	b    *Backend
	spec *sandbox.Spec
	id   uint64

	// child holds the descriptors handed to bwrap, closed once it started;
	// own holds the parent's ends, closed by close.
	child, own []*os.File
	dir        string   // per-run state directory (as root)
	mounts     []string // host tmpfs to unmount
	group      *cgroup.Group
	cmd        *exec.Cmd
	waited     chan struct{}
	// childPID is bwrap's sandbox child once reported, 0 before.
	childPID int
	// uid is the host uid bwrap runs as (one of b.users), or -1 to
	// keep ours.
	uid int
}

func (r *run) close() {
	// The child first: it waits on the block pipe, which closing would
	// release, and it is not yet bound to die with bwrap.
	if r.childPID > 0 {
		if err := r.asBwrap(func() error { return unix.Kill(r.childPID, unix.SIGKILL) }); err != nil {
			r.b.log.Warn("unable to kill bwrap's sandbox child", "run", r.id, "error", err)
		}
	}
	if r.cmd != nil && r.cmd.Process != nil {
		if err := r.stop(); err != nil {
			r.b.log.Error("unable to stop bwrap", "run", r.id, "error", err)
		}
	} else if r.group != nil {
		if err := r.group.Kill(); err != nil {
			r.b.log.Warn("unable to kill the run's cgroup", "run", r.id, "error", err)
		}
	}
	if r.childPID > 0 {
		reap(r.childPID)
	}
	if r.group != nil {
		if err := r.group.Destroy(); err != nil {
			r.b.log.Warn("unable to remove run cgroup", "run", r.id, "error", err)
		}
	}
	for _, f := range append(r.child, r.own...) {
		_ = f.Close()
	}
	mounted := false
	for _, m := range r.mounts {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil {
			r.b.log.Warn("unable to unmount a run mount", "run", r.id, "path", m, "error", err)
			mounted = true
		}
	}
	if r.uid >= 0 {
		// Nothing of the run is left: its processes were killed above.
		r.b.users.Put(r.uid)
	}
	switch {
	case r.dir == "":
	case mounted:
		// A staged source still mounted there is a host directory (a
		// toolchain): removing the run's directory would empty it.
		r.b.log.Warn("run directory left in place: a mount in it is still there", "run", r.id, "path", r.dir)
	default:
		if err := os.RemoveAll(r.dir); err != nil { //nolint:forbidigo // the run's own directory, root's 0755: only emptied mount points remain
			r.b.log.Warn("unable to remove run directory", "run", r.id, "error", err)
		}
	}
}

// pipe makes a pipe whose end give goes to bwrap.
func (r *run) pipe(childReads bool) (parent, child *os.File, err error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
	}
	if childReads {
		parent, child = pw, pr
	} else {
		parent, child = pr, pw
	}
	r.own = append(r.own, parent)
	r.child = append(r.child, child)
	return parent, child, nil
}

func (r *run) execute(ctx context.Context) (*sandbox.Result, error) {
	b, s := r.b, r.spec
	p := &plan{spec: s, uid: sandboxUID, etcDir: b.etcDir, ldCache: b.ldCache, alternatives: b.alternatives, link: hostLink}
	if err := r.prepare(p); err != nil {
		return nil, err
	}
	fds, err := r.descriptors(p)
	if err != nil {
		return nil, err
	}
	args, err := p.args()
	if err != nil {
		return nil, err
	}
	// The filter fits in the pipe's buffer: bwrap reads it to EOF.
	if _, err := fds.filterW.Write(b.filter); err != nil {
		return nil, fmt.Errorf("%w: unable to pass the seccomp filter: %w", sandbox.ErrSetup, err)
	}
	_ = fds.filterW.Close()
	st, err := r.streams()
	if err != nil {
		return nil, err
	}
	cmd, err := r.command(args, st, fds.extra)
	if err != nil {
		return nil, err
	}
	sup := watch.NewSupervisor(r.supervision())
	stderr := sup.Stderr()

	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: unable to start bwrap: %w", sandbox.ErrSetup, err)
	}
	r.cmd = cmd
	r.waited = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(r.waited)
	}()
	for _, f := range r.child {
		_ = f.Close()
	}
	r.child = nil
	sup.Drain(st.outR, st.errR)
	status := readStatus(fds.statusR)

	child, err := r.awaitChild(ctx, status)
	if err != nil {
		if errors.Is(err, errNoInfo) {
			return nil, r.bwrapFailed(err, stderr)
		}
		return nil, err
	}
	r.childPID = child
	if err := r.confine(child); err != nil {
		// Most likely bwrap's child could not build the sandbox (a mount
		// failed) and is gone, and bwrap with it: say why.
		return nil, r.bwrapFailed(err, stderr)
	}
	// Let bwrap go: its child execs the program only now, inside the
	// cgroup and under its rlimits.
	if _, err := fds.blockW.Write([]byte{'g'}); err != nil {
		return nil, r.bwrapFailed(fmt.Errorf("%w: unable to start the sandbox: %w", sandbox.ErrSetup, err), stderr)
	}
	_ = fds.blockW.Close()
	if st.stdinW != nil {
		go watch.Feed(st.stdinW, s.Stdin)
	}
	res, err := sup.Run(ctx, &program{r: r, status: status, stderr: stderr})
	if err != nil {
		return nil, err
	}
	res.Warnings = append([]string(nil), b.warnings...)
	return res, nil
}

// bwrapFDs are the descriptors bwrap gets beyond its standard streams, and
// the parent's ends of their pipes.
type bwrapFDs struct {
	// extra are bwrap's descriptors 3 and up: the filter, the status
	// pipe, the block pipe, then the files of a private workspace and
	// those of /tmp.
	extra           []*os.File
	filterW, blockW *os.File
	statusR         *os.File
}

// descriptors makes bwrap's descriptors and records their numbers in p.
func (r *run) descriptors(p *plan) (*bwrapFDs, error) {
	s := r.spec
	fds := &bwrapFDs{}
	filterW, filterR, err := r.pipe(true)
	if err != nil {
		return nil, err
	}
	statusR, statusW, err := r.pipe(false)
	if err != nil {
		return nil, err
	}
	blockW, blockR, err := r.pipe(true)
	if err != nil {
		return nil, err
	}
	fds.filterW, fds.statusR, fds.blockW = filterW, statusR, blockW
	fds.extra = []*os.File{filterR, statusW, blockR}
	p.seccompFD, p.statusFD, p.blockFD = 3, 4, 5
	// Files of a scratch mount bwrap makes itself: it copies them in.
	give := func(files []sandbox.File, to *[]int) error {
		for _, f := range files {
			mf, err := memfd(f.Path, f.Content)
			if err != nil {
				return err
			}
			r.child = append(r.child, mf)
			*to = append(*to, 3+len(fds.extra))
			fds.extra = append(fds.extra, mf)
		}
		return nil
	}
	if s.Workspace == "" && p.workspace == "" {
		if err := give(s.Files, &p.fileFDs); err != nil {
			return nil, err
		}
	}
	if p.tmp == "" {
		if err := give(s.TmpFiles, &p.tmpFDs); err != nil {
			return nil, err
		}
	}
	return fds, nil
}

// runStreams are the program's standard streams: bwrap's ends and the
// parent's.
type runStreams struct {
	stdin, outW, errW  *os.File
	stdinW, outR, errR *os.File
}

// streams makes the program's standard streams; without stdin it reads
// /dev/null.
func (r *run) streams() (*runStreams, error) {
	st := &runStreams{}
	var err error
	if st.outR, st.outW, err = r.pipe(false); err != nil {
		return nil, err
	}
	if st.errR, st.errW, err = r.pipe(false); err != nil {
		return nil, err
	}
	if r.spec.Stdin != nil {
		if st.stdinW, st.stdin, err = r.pipe(true); err != nil {
			return nil, err
		}
		return st, nil
	}
	// Opened here, the descriptor still reads as /dev/null inside: the
	// sandbox's /dev/null is the same device node.
	if st.stdin, err = os.Open(os.DevNull); err != nil { //nolint:forbidigo // the host's /dev/null
		return nil, fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
	}
	r.child = append(r.child, st.stdin)
	return st, nil
}

// command makes the run's cgroup and bwrap's command: as the run's host
// uid, started in the cgroup on v2.
func (r *run) command(args []string, st *runStreams, extra []*os.File) (*exec.Cmd, error) {
	b, lim := r.b, r.spec.Limits
	if b.cgroups != nil {
		var err error
		r.group, err = b.cgroups.Create(fmt.Sprintf("bwrap-%d-%d", os.Getpid(), r.id), cgroup.Limits{
			Memory: lim.Memory,
			// bwrap's monitor and the namespace's init run beside the
			// program.
			Processes: lim.Processes + 2,
			CPUs:      lim.CPUs,
		})
		if err != nil {
			return nil, fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
		}
	}
	cmd := &exec.Cmd{
		Path:        b.path,
		Args:        append([]string{"bwrap"}, args...),
		Env:         []string{},
		Stdin:       st.stdin,
		Stdout:      st.outW,
		Stderr:      st.errW,
		ExtraFiles:  extra,
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	}
	if r.uid >= 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(r.uid), Gid: uint32(r.uid), Groups: []uint32{}}
	}
	if r.group != nil {
		if fd, ok := r.group.FD(); ok {
			// cgroup v2: bwrap starts inside the group.
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
		}
	}
	return cmd, nil
}

// supervision is what the supervisor needs of this run besides bwrap:
// the spec, the counters of the run's cgroup, the drain bound.
func (r *run) supervision() watch.Config {
	cfg := watch.Config{
		Spec:  r.spec,
		Drain: drainTimeout,
		Stuck: func() { r.b.log.Warn("output still open after the sandbox ended", "run", r.id) },
	}
	if g := r.group; g != nil {
		cfg.Source = func() (watch.Usage, error) {
			st, err := g.Stats()
			return watch.Usage{CPU: st.CPU, Memory: st.Memory}, err
		}
	}
	return cfg
}

// program is the bwrap side of a run's supervision: the run ends when
// bwrap exits.
type program struct {
	r      *run
	status *status
	stderr *watch.Capture
}

func (p *program) Wait(quit <-chan struct{}) error {
	select {
	case <-p.r.waited:
	case <-quit:
	}
	return nil
}

// Stop kills the run's cgroup and bwrap, whatever happened: nothing of the
// run may outlive it. If bwrap ended by itself, whether the program ran is
// bwrap's word on its status pipe, never what came on stderr, which the
// program shares.
func (p *program) Stop(reason watch.Reason) error {
	r := p.r
	if err := r.stop(); err != nil {
		return fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
	}
	if reason == watch.ReasonNone && !p.waitStatus().Signaled() {
		if err := r.programRan(p.status); err != nil {
			return r.bwrapFailed(err, p.stderr)
		}
	}
	return nil
}

// stop kills the run's cgroup and bwrap, and waits, for up to
// exitTimeout, for bwrap's exit. Where the cgroup cannot be killed
// (cgroup v1 without CAP_KILL: its processes are another host user's),
// bwrap's death kills the sandbox (it dies with bwrap), which the
// cgroup, killed again, then shows.
func (r *run) stop() error {
	var groupErr error
	if r.group != nil {
		groupErr = r.group.Kill()
	}
	var errs []error
	if err := r.asBwrap(r.cmd.Process.Kill); err != nil {
		errs = append(errs, fmt.Errorf("unable to kill bwrap: %w", err))
	}
	timer := time.NewTimer(exitTimeout)
	defer timer.Stop()
	select {
	case <-r.waited:
	case <-timer.C:
		errs = append(errs, fmt.Errorf("bwrap (process %d) still running %v after SIGKILL", r.cmd.Process.Pid, exitTimeout))
	}
	if groupErr != nil {
		if err := r.group.Kill(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// asBwrap sends a signal with send as root and, refused (root without
// CAP_KILL: bwrap and its sandbox are another host user's), again from a
// thread with bwrap's uid, which owns the sandbox's user namespace. A
// process already gone needs nothing.
func (r *run) asBwrap(send func() error) error {
	err := send()
	if errors.Is(err, unix.EPERM) && r.uid > 0 {
		err = threadid.As(r.uid, send)
	}
	if errors.Is(err, unix.ESRCH) || errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

func (p *program) waitStatus() syscall.WaitStatus {
	ws, _ := p.r.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ws
}

func (p *program) Totals(int64) (watch.Totals, error) {
	r := p.r
	if r.group != nil {
		st, err := r.group.Stats()
		if err != nil {
			return watch.Totals{}, fmt.Errorf("%w: unable to read cgroup: %w", sandbox.ErrSetup, err)
		}
		return watch.Totals{CPU: st.CPU, PeakMemory: st.PeakMemory, MemoryExceeded: st.OOMKills > 0}, nil
	}
	var tot watch.Totals
	if ru, ok := r.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		// Without a cgroup only bwrap's own children are counted.
		tot.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		tot.PeakMemory = ru.Maxrss * 1024
	}
	return tot, nil
}

// Exit is bwrap's exit status, which is the program's (128+N for a signal),
// unless bwrap itself was killed: by us, or by the OOM killer.
func (p *program) Exit(_ *sandbox.Result, reason watch.Reason) (watch.Exit, error) {
	ws := p.waitStatus()
	if reason != watch.ReasonNone || ws.Signaled() {
		return watch.Exit{Code: -1, Signal: syscall.SIGKILL}, nil
	}
	code, sig := watch.DecodeExit(ws.ExitStatus())
	return watch.Exit{Code: code, Signal: sig}, nil
}

// prepare makes the run's scratch file systems. As root they are host tmpfs
// with an inode cap, bound into the sandbox; the spec's files are written
// into the workspace from the host, beneath it.
func (r *run) prepare(p *plan) error {
	b, s, lim := r.b, r.spec, r.spec.Limits
	if s.Workspace != "" {
		uid := r.uid
		if uid < 0 {
			uid = os.Getuid()
		}
		if err := hostws.Prepare(s.Workspace, s.Files, uid, b.privileged); err != nil {
			return fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
		}
	}
	if !b.privileged {
		return nil
	}
	dir, err := os.MkdirTemp(b.stateDir, fmt.Sprintf("%s%d-", runPrefix, os.Getpid())) //nolint:forbidigo // the backend's state directory, root's
	if err != nil {
		return fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
	}
	r.dir = dir
	if err := os.Chmod(dir, 0o755); err != nil { //nolint:gosec,forbidigo // run directory just made; bwrap's uid binds the mounts below
		return fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
	}
	mk := func(name string, size int64, mode string) (string, error) {
		m := filepath.Join(dir, name)
		if err := os.Mkdir(m, 0o700); err != nil { //nolint:forbidigo // a mount point in the run's new directory
			return "", fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
		}
		opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=%s,uid=%d,gid=%d", size, maxInodes, mode, r.uid, r.uid)
		if err := unix.Mount("tmpfs", m, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return "", fmt.Errorf("%w: unable to mount a tmpfs for %s: %w", sandbox.ErrSetup, name, err)
		}
		r.mounts = append(r.mounts, m)
		return m, nil
	}
	if err := r.stage(p); err != nil {
		return err
	}
	if p.tmp, err = mk("tmp", lim.TmpSize, "1777"); err != nil {
		return err
	}
	if err := hostws.Prepare(p.tmp, s.TmpFiles, r.uid, true); err != nil {
		return fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
	}
	if p.shm, err = mk("shm", lim.TmpSize, "1777"); err != nil {
		return err
	}
	if s.Workspace == "" {
		if p.workspace, err = mk("workspace", lim.WorkspaceSize, "0755"); err != nil {
			return err
		}
		if err := hostws.Prepare(p.workspace, s.Files, r.uid, true); err != nil {
			return fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
		}
	}
	return nil
}

// bwrapFailed is err, the failure of a run whose program has not started,
// with the reason bwrap gave when it exited. Until the program is
// executed, whatever comes on the sandbox's stderr is bwrap's own
// ("bwrap: Can't find source path ..."): before the block pipe lets it go,
// or when bwrap's status says it never ran (see programRan). A bwrap still running after
// drainTimeout did not fail by itself: err alone, and close kills it.
func (r *run) bwrapFailed(err error, stderr *watch.Capture) error {
	timer := time.NewTimer(drainTimeout)
	defer timer.Stop()
	select {
	case <-r.waited:
	case <-timer.C:
		return err
	}
	select {
	case <-stderr.Done():
	case <-timer.C:
	}
	msg, _ := stderr.Result()
	said := strings.TrimSpace(string(msg))
	if said == "" {
		said = "no message"
	}
	r.b.log.Debug("bwrap exited before the program started", "run", r.id, "error", err)
	return fmt.Errorf("%w: bwrap exited before the program started (%s): %s", sandbox.ErrSetup, r.cmd.ProcessState, said)
}

// stage makes the mount sources that bwrap's uid cannot reach reachable
// to it: a rustup toolchain under root's 0700 home, whose bind would make
// bwrap's child fail and exit before the program starts. Each such source
// is bound (as root) at a mount point under the run's directory, in a
// directory only bwrap's group may search, and bwrap binds it from there:
// the sandbox sees the same files, and no other host user gains a way in.
// Only sources bwrap's uid actually cannot reach are staged (faccessat as
// that uid), so most runs mount nothing more.
func (r *run) stage(p *plan) error {
	s := r.spec
	if r.uid < 0 || len(s.Mounts) == 0 {
		return nil
	}
	sources := make([]string, 0, len(s.Mounts))
	for _, m := range s.Mounts {
		// A link is recreated as a link, never bound.
		if _, link, err := hostLink(m.Source); err == nil && !link && !slices.Contains(sources, m.Source) {
			sources = append(sources, m.Source)
		}
	}
	blocked, err := unreachable(r.uid, sources)
	if err != nil || len(blocked) == 0 {
		return err
	}
	dir := filepath.Join(r.dir, "src")
	if err := os.Mkdir(dir, 0o700); err != nil { //nolint:forbidigo // the staging directory, new, in the run's directory
		return fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
	}
	if err := os.Chown(dir, 0, r.uid); err != nil { //nolint:forbidigo // the staging directory just made
		return fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
	}
	if err := os.Chmod(dir, 0o710); err != nil { //nolint:forbidigo // the staging directory just made
		return fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
	}
	p.staged = make(map[string]string, len(blocked))
	for i, src := range blocked {
		fi, err := os.Stat(src) //nolint:forbidigo // a toolchain source from the configuration, not the sandbox's
		if err != nil {
			return fmt.Errorf("%w: mount source: %w", sandbox.ErrSetup, err)
		}
		point := filepath.Join(dir, strconv.Itoa(i))
		if fi.IsDir() {
			err = os.Mkdir(point, 0o700) //nolint:forbidigo // a mount point in the new staging directory
		} else {
			var f *os.File
			if f, err = os.OpenFile(point, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil { //nolint:forbidigo // a mount point in the new staging directory
				err = f.Close()
			}
		}
		if err != nil {
			return fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
		}
		if err := unix.Mount(src, point, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("%w: unable to bind %s for bwrap: %w", sandbox.ErrSetup, src, err)
		}
		r.mounts = append(r.mounts, point)
		p.staged[src] = point
	}
	return nil
}

// unreachable returns the paths uid (with gid uid and no other group, as
// bwrap runs) cannot reach: a directory on the way it may not search.
func unreachable(uid int, paths []string) ([]string, error) {
	var blocked []string
	err := threadid.As(uid, func() error {
		for _, p := range paths {
			// F_OK checks the lookup only, with the thread's real ids.
			if err := unix.Faccessat(unix.AT_FDCWD, p, unix.F_OK, 0); errors.Is(err, unix.EACCES) {
				blocked = append(blocked, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
	}
	return blocked, nil
}

// status follows bwrap's --json-status-fd. bwrap's monitor writes a first
// document naming the sandbox child ({"child-pid": N, ...}) before that
// child goes on, and {"exit-code": N} when the child ends only if the
// program was executed: bwrap learns it from a close-on-exec pipe the child
// writes one byte to just before execvp (and a second one if execvp
// fails). Neither descriptor is open in the sandbox, so nothing the program
// does can write to this stream or forge what it says.
type status struct {
	// child receives the first document's child pid, or why there is
	// none.
	child chan childReport
	// ran receives, once the stream ended, whether bwrap reported the
	// program's exit.
	ran chan bool
}

type childReport struct {
	pid int
	err error
}

// maxStatus bounds what is read of bwrap's status stream.
const maxStatus = 64 << 10

// readStatus reads bwrap's status stream until it ends, which is when
// bwrap's monitor exits (or close closes f).
func readStatus(f io.Reader) *status {
	st := &status{child: make(chan childReport, 1), ran: make(chan bool, 1)}
	go func() {
		dec := json.NewDecoder(io.LimitReader(f, maxStatus))
		var first json.RawMessage
		if err := dec.Decode(&first); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = errNoInfo
			} else {
				err = fmt.Errorf("%w: reading bwrap's status: %w", sandbox.ErrSetup, err)
			}
			st.child <- childReport{err: err}
			st.ran <- false
			return
		}
		pid, err := parseInfo(first)
		st.child <- childReport{pid: pid, err: err}
		ran := false
		for err == nil {
			var doc struct {
				ExitCode *int `json:"exit-code"`
			}
			if err = dec.Decode(&doc); err == nil && doc.ExitCode != nil {
				ran = true
			}
		}
		st.ran <- ran
	}()
	return st
}

// awaitChild waits for bwrap's first status document and returns the host
// pid of its sandbox child, which now waits on the block pipe.
func (r *run) awaitChild(ctx context.Context, st *status) (int, error) {
	timer := time.NewTimer(setupTimeout)
	defer timer.Stop()
	select {
	case rep := <-st.child:
		return rep.pid, rep.err
	case <-timer.C:
		return 0, fmt.Errorf("%w: bwrap did not report its sandbox within %v", sandbox.ErrSetup, setupTimeout)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// programRan reports, once bwrap exited by itself, whether it had executed
// the program: nil if so, else why the run is a setup error. bwrap's
// monitor has exited, so the stream ends at once; drainTimeout only bounds
// a stream something else would still hold open.
func (r *run) programRan(st *status) error {
	timer := time.NewTimer(drainTimeout)
	defer timer.Stop()
	select {
	case ran := <-st.ran:
		if !ran {
			return fmt.Errorf("%w: bwrap did not report the program's exit", sandbox.ErrSetup)
		}
		return nil
	case <-timer.C:
		return fmt.Errorf("%w: bwrap's status still open after it exited", sandbox.ErrSetup)
	}
}

// parseInfo extracts the sandbox child's pid from bwrap's first status
// document.
func parseInfo(data []byte) (int, error) {
	var info struct {
		ChildPID *int `json:"child-pid"`
	}
	if err := json.Unmarshal(data, &info); err != nil {
		return 0, fmt.Errorf("%w: malformed bwrap status: %w", sandbox.ErrSetup, err)
	}
	if info.ChildPID == nil || *info.ChildPID <= 1 {
		return 0, fmt.Errorf("%w: bwrap status has no child pid: %.200q", sandbox.ErrSetup, data)
	}
	return *info.ChildPID, nil
}

// confine puts bwrap and its sandbox child in the run's cgroup (on v1; v2
// cloned bwrap into it) and sets the child's rlimits, which the program
// inherits.
func (r *run) confine(child int) error {
	lim := r.spec.Limits
	if r.group != nil {
		if _, ok := r.group.FD(); !ok {
			for _, pid := range []int{r.cmd.Process.Pid, child} {
				if err := r.group.Add(pid); err != nil {
					return fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
				}
			}
		}
	}
	cpu := uint64((lim.CPUTime + time.Second - 1) / time.Second)
	stack := uint64(min(lim.Memory, 256*sandbox.MiB))
	limits := []struct {
		res       int
		cur, hard uint64
	}{
		{unix.RLIMIT_CORE, 0, 0},
		{unix.RLIMIT_FSIZE, uint64(lim.FileSize), uint64(lim.FileSize)},
		{unix.RLIMIT_NOFILE, uint64(lim.OpenFiles), uint64(lim.OpenFiles)},
		{unix.RLIMIT_STACK, stack, stack},
		// A backstop only: the monitor stops the run at the CPU limit.
		{unix.RLIMIT_CPU, cpu + 1, cpu + 2},
		// The namespace's init counts too.
		{unix.RLIMIT_NPROC, uint64(lim.Processes + 1), uint64(lim.Processes + 1)},
		// Per-user counts: see kquota.
		{unix.RLIMIT_SIGPENDING, kquota.SigPending, kquota.SigPending},
		{unix.RLIMIT_MSGQUEUE, kquota.MsgQueueBytes, kquota.MsgQueueBytes},
	}
	if r.group == nil {
		limits = append(limits, struct {
			res       int
			cur, hard uint64
		}{unix.RLIMIT_AS, uint64(lim.Memory), uint64(lim.Memory)})
	}
	set := func() error {
		for _, l := range limits {
			rl := unix.Rlimit{Cur: l.cur, Max: l.hard}
			if err := unix.Prlimit(child, l.res, &rl, nil); err != nil {
				return fmt.Errorf("%w: unable to set rlimit %d of the sandbox: %w", sandbox.ErrSetup, l.res, err)
			}
		}
		return nil
	}
	if r.uid < 0 {
		return set()
	}
	// prlimit(2) on another user's process needs CAP_SYS_RESOURCE, which
	// root does not always have (some container runtimes drop it); as
	// bwrap's own user it needs nothing, and lowering limits never does.
	if err := threadid.As(r.uid, set); err != nil {
		return fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
	}
	return nil
}

// reapTimeout bounds the wait for bwrap's sandbox child to exit once its
// monitor is gone; the kernel ends it as soon as its namespace is killed.
const reapTimeout = 2 * time.Second

// reap collects bwrap's sandbox child. bwrap's monitor exits as soon as the
// child reports the program's status, without waiting for the child itself,
// which is then handed to us (we are a child subreaper) instead of lingering
// as a zombie under the machine's init.
func reap(pid int) {
	deadline := time.Now().Add(reapTimeout)
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG|unix.WALL, nil)
		if got == pid || err != nil || time.Now().After(deadline) {
			// ECHILD: not ours (no subreaper), someone else reaps it.
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// memfd holds a file's content for bwrap's --file.
func memfd(name string, content []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate("coderunner-file", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(content); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
	}
	return f, nil
}

// hostLink reports whether a mount source is a symbolic link, as /lib is
// on merged-/usr systems.
func hostLink(source string) (string, bool, error) {
	fi, err := os.Lstat(source) //nolint:forbidigo // a mount source from the configuration, not the sandbox's
	if err != nil {
		return "", false, err
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		return "", false, nil
	}
	to, err := os.Readlink(source) //nolint:forbidigo // a mount source from the configuration, not the sandbox's
	return to, err == nil, err
}
