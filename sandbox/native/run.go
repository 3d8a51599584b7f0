package native

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path"
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
	"github.com/coderunner/coderunner/sandbox/internal/watch"
	"github.com/coderunner/coderunner/sandbox/native/nsinit"
)

// drainTimeout bounds how long output is read after the init is gone. By
// then the kernel has killed every process of the run, so the pipes are at
// EOF unless a descriptor was passed out of the sandbox, which cannot
// happen; the bound is a guard, not a policy.
const drainTimeout = 2 * time.Second

// Run executes spec in fresh namespaces. See sandbox.Backend.
func (b *Backend) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	return b.run(ctx, spec, false)
}

// run is Run; probe marks the probe's own trivial program, which runs
// even where runs are refused (refused), always in a new sandbox.
func (b *Backend) run(ctx context.Context, spec *sandbox.Spec, probe bool) (*sandbox.Result, error) {
	if b.kept != nil && !probe {
		return b.kept.Run(ctx, spec)
	}
	s, err := sandbox.PreparedToRun(ctx, spec)
	if err != nil {
		return nil, err
	}
	if err := hostws.Capped(s); err != nil {
		return nil, err
	}
	r := &run{b: b, spec: s, id: b.runID.Add(1), probe: probe}
	defer r.close()
	return r.execute(ctx)
}

// run is the state of one execution. Everything it holds is released by
// close, on every path.
type run struct {
	b    *Backend
	spec *sandbox.Spec
	id   uint64
	// probe is set for the probe's trivial program, which runs even
	// where runs are refused (Backend.refused).
	probe bool

	sandbox *started
	// mounts are the second phase's mounts, which a kept sandbox keeps;
	// setup is the rest of it, the run's own.
	mounts setup
	setup  setup
	// series, when set, keeps the sandbox for a later run if this one
	// ends normally (keep); reused is set for a run in a kept sandbox,
	// whose cgroup counters up to its start are base.
	series *series
	reused bool
	keep   bool
	base   cgroup.Stats
	// drift is what earlier runs left charged to a kept sandbox's cgroup
	// (at most keepDrift): not counted as the run's memory.
	drift int64
	// attach is set when the second phase attaches tree, the host
	// workspace's mount, on /workspace.
	attach bool
	// fed is set once the run's stdin may have been read from.
	fed bool
	// sources are the toolchain paths the second phase binds; workspace
	// is the host workspace it binds, if any.
	sources   []string
	workspace string
	// tree is the detached clone of the host workspace's mount that the
	// second phase sends (cloneWorkspace), until it is sent.
	tree     *os.File
	warnings []string
	// detach lets close finish the teardown in the background: the
	// program and everything it started are gone and the result known,
	// or nothing the caller holds is reachable from the sandbox.
	detach bool
}

// close kills whatever is left of the sandbox, removes its cgroup and
// closes every descriptor.
func (r *run) close() {
	r.closeTree()
	if sp := r.sandbox; sp != nil {
		sp.done()
	}
	if r.keep {
		r.sandbox.closeStreams()
		r.series.put(r.sandbox, string(r.mounts.buf))
		return
	}
	release := func() {
		if sp := r.sandbox; sp != nil {
			err := sp.kill()
			sp.close()
			if sp.group != nil {
				if derr := sp.group.Destroy(); derr != nil {
					err = errors.Join(err, derr)
				}
			}
			if err != nil {
				r.b.tornDown(fmt.Errorf("run %d: unable to tear its sandbox down: %w", r.id, err))
			}
		}
	}
	if !r.detach {
		release()
		return
	}
	r.b.teardown.Add(1)
	go func() {
		defer r.b.teardown.Done()
		release()
	}()
}

func (r *run) execute(ctx context.Context) (*sandbox.Result, error) {
	if !r.probe {
		if err := r.b.noCgroup.Admit(r.b.log, r.b.Name()); err != nil {
			return nil, err
		}
	}
	s := r.spec
	if err := r.plan(); err != nil {
		return nil, err
	}
	if r.workspace != "" {
		// A bound workspace is in the sandbox's own mount namespace for
		// good: the sandbox serves this run only.
		r.series = nil
	}
	sp, err := r.acquire()
	if err != nil {
		return nil, err
	}
	r.sandbox = sp

	p := &program{r: r, sp: sp, status: make(chan []byte, 1)}
	cfg := watch.Config{
		Spec: s,
		// Past an output cap the tree is stopped at once, from the
		// reading goroutine: frozen and killed through its cgroup, so
		// that it cannot take one more step.
		Halt: func() {
			var err error
			if sp.group != nil {
				err = sp.group.Kill()
			}
			if serr := sp.signal(); serr != nil {
				err = errors.Join(err, serr)
			}
			if err != nil {
				// Stop, which follows, kills the init again and fails
				// the run if it cannot.
				r.b.log.Warn("unable to stop a run past its output cap", "run", r.id, "error", err)
			}
		},
		Drain: drainTimeout,
		Stuck: func() { r.b.log.Warn("output still open after the sandbox ended", "run", r.id) },
	}
	if g := sp.group; g != nil {
		cfg.Source = func() (watch.Usage, error) {
			st, err := g.Stats()
			return watch.Usage{CPU: st.CPU - r.base.CPU, Memory: max(st.Memory-r.drift, 0)}, err
		}
	}
	sup := watch.NewSupervisor(cfg)
	sup.Drain(sp.stdout, sp.stderr)
	go func() {
		line, _ := sp.readReport()
		p.status <- line
	}()

	// The second phase is also the go signal: the init blocks on it.
	if err := r.send(sp); err != nil {
		return nil, err
	}
	r.fed = true
	if s.Stdin != nil {
		go watch.Feed(sp.stdin, s.Stdin)
	} else {
		_ = sp.stdin.Close()
	}
	res, err := sup.Run(ctx, p)
	if err != nil {
		return nil, err
	}
	res.Warnings = append(r.warnings, r.b.warnings...)
	// A host workspace is the caller's: nothing of the sandbox may still
	// run when the caller gets it back. The init reports the end only
	// once it is alone in the sandbox, every other process killed and
	// reaped; without that report (the init was killed first) close waits
	// for the init's end, which the kernel holds back until the rest of
	// the namespace is gone. A private workspace dies with the namespace.
	// Either way the teardown can then finish after the result is out.
	r.detach = s.Workspace == "" || bytes.HasPrefix(p.msg, []byte("X "))
	// A sandbox whose program ended by itself, within its memory, has
	// cleaned up after it, and can serve the series again once its init
	// says it is ready (readied).
	r.keep = p.ended && !res.MemoryExceeded
	if r.inspects() {
		r.inspect(p)
	}
	return res, nil
}

// inspect hands the run's private workspace to the caller (Spec.Inspect).
// The run's init sent it before the program started, so it is on the
// config socket by now unless the sandbox failed first. It is read once
// nothing of the run can write there: the init's report says it killed
// and reaped everything else; without a report the init was killed, and
// its end, which the kernel holds back until the rest of its namespace is
// gone, is awaited. The caller is done with it before a kept sandbox
// serves another run, so none of its memory is charged to that run.
func (r *run) inspect(p *program) {
	root, err := r.sandbox.receiveWorkspace()
	if err != nil {
		r.b.log.Warn("unable to receive a run's workspace", "run", r.id, "error", err)
	}
	if root == nil {
		// A run that asked for its workspace and ended normally sent
		// it: a sandbox that did not is not given another run.
		r.keep = false
		return
	}
	defer root.Close()
	if !bytes.HasPrefix(p.msg, []byte("X ")) {
		if _, err := r.sandbox.waitFor(exitWait); err != nil {
			r.b.log.Warn("a run's workspace is not read while its sandbox may still run", "run", r.id, "error", err)
			return
		}
	}
	r.spec.Inspect(root)
}

// program is the native side of a run's supervision: the init reports the
// program's end on its status pipe before it exits; that report, not the
// init's exit, ends the run.
type program struct {
	r  *run
	sp *started
	// status receives the init's report; msg is the report once read,
	// reported whether it came before the run was stopped.
	status   chan []byte
	msg      []byte
	reported bool
	// ended is set when the init, kept for a series, reported the end
	// itself: it killed everything else and lives on.
	ended bool
	// state is the init's exit, once waited for.
	state *os.ProcessState
}

func (p *program) Wait(quit <-chan struct{}) error {
	select {
	case p.msg = <-p.status:
		p.reported = true
	case <-quit:
	}
	return nil
}

// Stop kills the init, and with it the PID namespace, whatever happened:
// nothing of the run may outlive it. An init kept for a series reports the
// end only once it has killed everything else itself.
func (p *program) Stop(reason watch.Reason) error {
	sp := p.sp
	p.ended = p.reported && reason == watch.ReasonNone && p.r.series != nil && bytes.HasPrefix(p.msg, []byte("X "))
	var err error
	if !p.ended {
		err = sp.signal()
	}
	if reason != watch.ReasonNone && sp.group != nil {
		if gerr := sp.group.Kill(); gerr != nil {
			err = errors.Join(err, gerr)
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
	}
	return nil
}

// Settle waits for the init's report if the run was stopped before it.
func (p *program) Settle(ctx context.Context) {
	if p.reported {
		return
	}
	select {
	case p.msg = <-p.status:
	case <-ctx.Done():
	}
}

func (p *program) Totals(int64) (watch.Totals, error) {
	sp, base := p.sp, p.r.base
	if sp.group != nil {
		st, err := sp.group.Stats()
		if err != nil {
			return watch.Totals{}, fmt.Errorf("%w: unable to read cgroup: %w", sandbox.ErrSetup, err)
		}
		return watch.Totals{CPU: st.CPU - base.CPU, PeakMemory: max(st.PeakMemory-p.r.drift, 0), MemoryExceeded: st.OOMKills > base.OOMKills}, nil
	}
	// Without a cgroup the init's rusage, which includes the program it
	// reaped, is all there is.
	var tot watch.Totals
	st, err := sp.waitFor(exitWait)
	if err != nil {
		return watch.Totals{}, fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
	}
	p.state = st
	if ru, ok := p.state.SysUsage().(*syscall.Rusage); ok {
		tot.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		tot.PeakMemory = ru.Maxrss * 1024
	}
	return tot, nil
}

// Exit reads the init's report: "X status" with the program's wait
// status, or "E why" when the setup failed. Without a report the init
// itself was killed: by us, or by the OOM killer.
func (p *program) Exit(_ *sandbox.Result, reason watch.Reason) (watch.Exit, error) {
	line := strings.TrimSpace(string(p.msg))
	switch {
	case strings.HasPrefix(line, "X "):
		n, err := strconv.Atoi(line[2:])
		if err != nil {
			return watch.Exit{}, fmt.Errorf("%w: malformed report from sandbox init: %q", sandbox.ErrSetup, line)
		}
		ws := syscall.WaitStatus(n)
		if ws.Signaled() {
			return watch.Exit{Code: -1, Signal: ws.Signal()}, nil
		}
		return watch.Exit{Code: ws.ExitStatus()}, nil
	case strings.HasPrefix(line, "E ") && reason == watch.ReasonNone:
		if strings.HasPrefix(line, "E attach workspace") && !p.r.b.noAttach.Swap(true) {
			// This kernel does not attach a mount made on the host in
			// the sandbox's namespace: later runs bind the workspace.
			p.r.b.log.Warn("a workspace's mount cannot be attached in a sandbox; runs with a host workspace start a new sandbox", "error", line[2:])
		}
		return watch.Exit{}, fmt.Errorf("%w: %s", sandbox.ErrSetup, line[2:])
	}
	return watch.Exit{Code: -1, Signal: syscall.SIGKILL, Lost: func() error {
		if p.state == nil {
			st, err := p.sp.waitFor(exitWait)
			if err != nil {
				return fmt.Errorf("%w: %w: %w", sandbox.ErrSetup, errInitDied, err)
			}
			p.state = st
		}
		return fmt.Errorf("%w: %w (%v)", sandbox.ErrSetup, errInitDied, p.state)
	}}, nil
}

// reportSize bounds a line of the init's reports.
const reportSize = 4096

// readReport reads one line of the init's reports: it returns as soon as
// the line is complete, without waiting for the init to exit, and leaves
// what follows (a kept sandbox's "R") for the next read. A line longer
// than reportSize is cut there.
func (s *started) readReport() ([]byte, error) {
	line, err := s.reports.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		err = nil
	}
	return bytes.Clone(line), err
}

// plan encodes the second phase of the setup: what is particular to this
// run. The first phase, shared by every run, is the backend's (firstPhase).
func (r *run) plan() error {
	s, b := r.spec, r.b
	uid := b.innerUID
	w := &r.setup
	for _, m := range s.Mounts {
		if err := r.mount(m); err != nil {
			return err
		}
	}
	// /tmp and a private /workspace are mounted in the first phase
	// (resized in phase if need be); a host workspace goes over the
	// latter.
	if s.Workspace != "" {
		if err := r.hostWorkspace(); err != nil {
			return err
		}
	} else {
		r.files(sandbox.WorkspaceDir, s.Files, uid)
	}
	if r.inspects() {
		w.op(nsinit.OpSendWorkspace, sandbox.WorkspaceDir)
	}
	// The run's /tmp is its own, made anew: its files too.
	r.files(sandbox.TmpDir, s.TmpFiles, uid)
	w.op(nsinit.OpUser, strconv.Itoa(uid), strconv.Itoa(uid))
	if s.Stdin == nil {
		w.op(nsinit.OpStdinNull)
	}
	dir := s.Dir
	if dir == "" {
		dir = sandbox.WorkspaceDir
	}
	w.op(nsinit.OpCwd, dir)
	r.rlimits()
	w.op(nsinit.OpArgv, s.Args...)
	w.op(nsinit.OpEnv, s.Env...)
	// resize and keep add a few hundred bytes.
	if size, limit := len(r.mounts.buf)+len(w.buf), nsinit.MaxConfig-1024; size > limit {
		return fmt.Errorf("%w: sandbox setup is %d bytes, more than %d", sandbox.ErrInvalidSpec, size, limit)
	}
	return nil
}

// files writes files beneath dir, the run's /workspace or /tmp, which
// the init has just made (in a kept sandbox, the run's own), owned by the
// program's user.
func (r *run) files(dir string, files []sandbox.File, uid int) {
	w := &r.setup
	made := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(f.Path); d != "."; d = path.Dir(d) {
			made[d] = true
		}
	}
	for _, d := range sortedKeys(made) {
		w.mkdir(path.Join(dir, d), 0o755, uid, uid)
	}
	for _, f := range files {
		mode := uint32(f.Mode.Perm())
		if mode == 0 {
			mode = 0o644
		}
		w.file(path.Join(dir, f.Path), f.Content, mode, uid, uid)
	}
}

// phase returns the second phase for sandbox sp: its /tmp and /workspace
// at the run's sizes (in a series, the request to keep the sandbox
// afterwards, whose runs each mount their own in a mount namespace of
// their own), the run's mounts (unless sp has them from an earlier run)
// and its setup.
func (r *run) phase(sp *started) []byte {
	lim := r.spec.Limits
	var w setup
	w.buf = make([]byte, 4, 4+256+len(r.mounts.buf)+len(r.setup.buf))
	tmp := tmpfsOptions(lim.TmpSize, 0o1777, -1)
	workspace := tmpfsOptions(lim.WorkspaceSize, 0o755, r.b.innerUID)
	switch {
	case r.series != nil:
		// Nothing a run leaves in its scratch mounts, not even how many
		// inodes a tmpfs numbered, reaches the next run, which may be
		// another request's.
		w.op(nsinit.OpKeep, sandbox.TmpDir, tmp, sandbox.WorkspaceDir, workspace)
	default:
		w.op(nsinit.OpTmpfs, sandbox.TmpDir, tmp)
		if !r.attach {
			w.op(nsinit.OpTmpfs, sandbox.WorkspaceDir, workspace)
		}
	}
	if !r.reused {
		w.buf = append(w.buf, r.mounts.buf...)
	}
	if r.attach {
		w.op(nsinit.OpAttach, sandbox.WorkspaceDir)
	}
	w.buf = append(w.buf, r.setup.buf...)
	binary.NativeEndian.PutUint32(w.buf, uint32(len(w.buf)-4))
	return w.buf
}

// send sends sp the run's second phase: over the config socket of a new
// sandbox, which then closes (unless a series may keep the sandbox), or
// with the run's streams to a kept one.
func (r *run) send(sp *started) error {
	phase := r.phase(sp)
	if r.reused {
		err := sp.sendRun(phase, r.tree)
		r.closeTree()
		if err != nil {
			return fmt.Errorf("%w: unable to send the run to a kept sandbox: %w", sandbox.ErrSetup, err)
		}
		return nil
	}
	var err error
	if r.tree != nil {
		// The workspace's mount goes with the phase; the host's
		// descriptor is not needed once it is in flight.
		err = sp.sendWith(phase, r.tree)
		r.closeTree()
	} else {
		_, err = sp.config.Write(phase)
	}
	if err != nil && !errors.Is(err, syscall.EPIPE) {
		return fmt.Errorf("%w: unable to send sandbox setup: %w", sandbox.ErrSetup, err)
	}
	// The socket stays open for the workspace the run's init sends
	// back, if the run asked for it.
	if r.series == nil && !r.inspects() {
		_ = sp.config.Close()
	}
	return nil
}

// inspects reports whether the run's private workspace goes to the
// caller (Spec.Inspect).
func (r *run) inspects() bool {
	return r.spec.Workspace == "" && r.spec.Inspect != nil
}

// closeTree closes the clone of the workspace's mount, if the run has one
// still.
func (r *run) closeTree() {
	if r.tree != nil {
		_ = r.tree.Close()
		r.tree = nil
	}
}

func tmpfsOptions(size int64, mode os.FileMode, uid int) string {
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=%o", size, maxInodes, mode)
	if uid >= 0 {
		opts += fmt.Sprintf(",uid=%d,gid=%d", uid, uid)
	}
	return opts
}

// maxInodes caps the files of each tmpfs: without it a run could pin kernel
// memory with millions of empty files.
const maxInodes = 16384

// mount adds one toolchain mount. A host symlink is recreated as the same
// link; anything else is bind-mounted. The mounts every sandbox has from
// its first phase are not mounted again.
func (r *run) mount(m sandbox.Mount) error {
	if r.b.shared[sharedKey(m)] {
		return nil
	}
	target := m.TargetPath()
	fi, err := os.Lstat(m.Source)
	if err != nil {
		return fmt.Errorf("%w: mount source: %w", sandbox.ErrSetup, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		link, err := os.Readlink(m.Source)
		if err != nil {
			return fmt.Errorf("%w: mount source: %w", sandbox.ErrSetup, err)
		}
		r.mounts.op(nsinit.OpSymlink, link, target)
		return nil
	}
	// The init opens the source through the host's tree after it has
	// pivoted, where an absolute link in the path would resolve inside
	// the sandbox: resolve links here, on the host.
	src, err := filepath.EvalSymlinks(m.Source)
	if err != nil {
		return fmt.Errorf("%w: mount source: %w", sandbox.ErrSetup, err)
	}
	r.sources = append(r.sources, src)
	mode := "ro"
	if m.Writable {
		mode = "rw"
	}
	r.mounts.op(nsinit.OpBind, src, target, mode)
	return nil
}

func (r *run) rlimits() {
	lim, w := r.spec.Limits, &r.setup
	cpu := uint64((lim.CPUTime + time.Second - 1) / time.Second)
	stack := uint64(min(lim.Memory, 256*sandbox.MiB))
	w.rlimit(unix.RLIMIT_CORE, 0, 0)
	w.rlimit(unix.RLIMIT_FSIZE, uint64(lim.FileSize), uint64(lim.FileSize))
	w.rlimit(unix.RLIMIT_NOFILE, uint64(lim.OpenFiles), uint64(lim.OpenFiles))
	w.rlimit(unix.RLIMIT_STACK, stack, stack)
	// A backstop only: the monitor stops the run at the CPU limit within
	// milliseconds; this catches a parent that could not watch.
	w.rlimit(unix.RLIMIT_CPU, cpu+1, cpu+2)
	w.rlimit(unix.RLIMIT_NPROC, uint64(lim.Processes), uint64(lim.Processes))
	// Per-user counts, charged to host root too: see kquota.
	w.rlimit(unix.RLIMIT_SIGPENDING, kquota.SigPending, kquota.SigPending)
	w.rlimit(unix.RLIMIT_MSGQUEUE, kquota.MsgQueueBytes, kquota.MsgQueueBytes)
	if r.b.cgroups == nil {
		// Without a memory cgroup the address space is the only handle
		// on memory.
		w.rlimit(unix.RLIMIT_AS, uint64(lim.Memory), uint64(lim.Memory))
	}
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Parents sort before their children.
	slices.Sort(keys)
	return keys
}

// sharedKey is a mount with its target spelled out, so that {Source: "/usr"}
// and {Source: "/usr", Target: "/usr"} compare equal.
func sharedKey(m sandbox.Mount) sandbox.Mount {
	return sandbox.Mount{Source: m.Source, Target: m.TargetPath(), Writable: m.Writable}
}
