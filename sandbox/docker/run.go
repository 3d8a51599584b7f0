package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/internal/hostws"
	"github.com/coderunner/coderunner/sandbox/internal/watch"
)

// Bounds on waits that only a broken engine could exceed.
const (
	drainTimeout = 2 * time.Second
	// lingerTimeout is how long output may stay open, and quiet, after
	// the program exited before the processes holding it (a background
	// child) are killed with the container. Output still arriving is
	// waited for: the engine may hold much of it when the caller reads
	// slowly.
	lingerTimeout = 50 * time.Millisecond
	// lingerDrainTimeout bounds the wait for the output of a program
	// that ended by itself once its container is killed: what is still
	// on its way is the program's.
	lingerDrainTimeout = 10 * time.Second
	// statsPause bounds the pause between two readings of the engine's
	// counters: on a reused container they are the run's memory peak.
	statsPause = 100 * time.Millisecond
	// firstPoll and maxPoll are the first and the longest pause between
	// two looks at the program's state while its output is still open.
	firstPoll = 20 * time.Millisecond
	maxPoll   = 50 * time.Millisecond
)

// Run executes spec in a container. See sandbox.Backend. An engine that
// stops answering during the run (killed, restarting) ends it with a setup
// error that names the engine.
func (b *Backend) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	res, err := b.run(ctx, spec)
	if err != nil && client.IsErrConnectionFailed(err) {
		return nil, fmt.Errorf("the Docker engine at %s does not answer: %w", b.cli.DaemonHost(), err)
	}
	return res, err
}

func (b *Backend) run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	s, err := sandbox.Prepared(spec)
	if err != nil {
		return nil, err
	}
	if len(s.TmpFiles) > 0 {
		// The engine copies nothing into a tmpfs: a cache meant for /tmp
		// would land beneath it, unseen.
		return nil, fmt.Errorf("%w: the docker backend places no TmpFiles", sandbox.ErrInvalidSpec)
	}
	if err := hostws.Capped(s); err != nil {
		return nil, err
	}
	if err := hostws.Bindable(s, "docker"); err != nil {
		return nil, err
	}
	if strings.Contains(s.Args[0], "=") {
		// env(1) would take it for a variable.
		return nil, fmt.Errorf("%w: the docker backend cannot run a program whose path contains '=': %q", sandbox.ErrInvalidSpec, s.Args[0])
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	image := b.images.forSpec(s)
	if image == "" {
		return nil, fmt.Errorf("%w: no image for %s: set languages.<id>.image or docker's default image", sandbox.ErrSetup, s.Args[0])
	}
	if err := b.ensureImage(ctx, image); err != nil {
		return nil, err
	}
	key := specKey(s, image)
	var bx *box
	if b.reuse && s.Workspace == "" {
		bx = b.take(key)
	}
	if bx == nil {
		bx = b.takeWarm(ctx, s, image, key)
		if bx != nil && b.tookWarm != nil {
			b.tookWarm(bx)
		}
	}
	if bx == nil {
		var err error
		if bx, err = b.create(ctx, s, image, key); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		b.markBusy(bx)
	}
	res, reusable, err := b.runIn(ctx, bx, s)
	var ns notStarted
	// A run not started was given nothing of its stdin, and passed on
	// nothing of its output (a launcher's run is given its stdin only once
	// the launcher took it): it is made again, whatever its stdin, an
	// interactive client's included.
	if bx.warm && errors.As(err, &ns) && ctx.Err() == nil {
		if errors.Is(err, errLauncher) {
			// Its launcher died before it took the run: that container
			// alone is lost.
			b.log.Warn("a warm container's launcher is gone; making one for the run", "container", bx.id, "error", err)
		} else {
			// The warm container is gone (the engine restarted, someone
			// removed it) or broken: so are the others, likely.
			b.log.Warn("a warm container failed; emptying the pool", "container", bx.id, "error", err)
			b.flushWarm()
		}
		// The program never started: a container of its own.
		if stopErr := b.stopRun(ctx, bx); stopErr != nil {
			b.release(bx, false)
			return nil, stopErr
		}
		if umErr := b.unmountWorkspace(bx); umErr != nil {
			b.release(bx, false)
			return nil, fmt.Errorf("%w: %w", sandbox.ErrSetup, umErr)
		}
		b.release(bx, false)
		if bx, err = b.create(ctx, s, image, key); err != nil {
			return nil, err
		}
		b.markBusy(bx)
		res, reusable, err = b.runIn(ctx, bx, s)
	}
	if errors.Is(err, errPrelude) && bx.runs > 1 {
		// The container could not be readied again: a new one.
		b.release(bx, false)
		if bx, err = b.create(ctx, s, image, key); err != nil {
			return nil, err
		}
		b.markBusy(bx)
		res, reusable, err = b.runIn(ctx, bx, s)
	}
	// A host workspace is the caller's: nothing may still run in it when
	// the caller gets it back, so its container is stopped before Run
	// returns, and goes.
	if s.Workspace != "" {
		if stopErr := b.stopRun(ctx, bx); stopErr != nil {
			res, err = nil, stopErr
		} else if umErr := b.unmountWorkspace(bx); umErr != nil {
			// Stopped: nothing runs in it, but the caller's
			// workspace stays mounted in the pool until the
			// container goes.
			b.log.Warn("unable to unmount a workspace from a warm container", "dir", bx.mountDir, "error", umErr)
		}
	}
	b.release(bx, reusable && err == nil && s.Workspace == "")
	return res, err
}

// stopTimeout bounds the wait for a killed container to stop.
const stopTimeout = 30 * time.Second

// stop kills bx and waits until it has stopped. The container's first
// process is the first of its PID namespace, and the kernel lets it end
// only once every other process in the namespace is gone (those the
// engine started in it with exec included): a stopped container runs
// nothing. It is not cancelled with ctx, which may be over already.
func (b *Backend) stop(ctx context.Context, bx *box) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	// Killing a container that stopped already fails, and changes
	// nothing: the wait below tells.
	_ = b.cli.ContainerKill(ctx, bx.id, "KILL")
	stopped, failed := b.cli.ContainerWait(ctx, bx.id, container.WaitConditionNotRunning)
	select {
	case <-stopped:
		return nil
	case err := <-failed:
		if isGone(err) {
			// Removed: none of its processes is left.
			return nil
		}
		return fmt.Errorf("%w: unable to stop the container of a run in a host workspace: %w", sandbox.ErrSetup, err)
	}
}

// stopRun ends everything of bx's run. A warm container serves one run
// and goes: when its cgroup is readable here, killing every process of
// the run's user in it, until none is left, is enough, and much faster
// than stopping the container through the engine. The program's
// processes cannot change their user (no capabilities,
// no-new-privileges) nor leave the cgroup (read-only cgroupfs), and a
// process counts as gone only once it is a zombie, when the kernel has
// closed its files already.
func (b *Backend) stopRun(ctx context.Context, bx *box) error {
	if bx.runsLauncher() {
		return b.stopLaunched(ctx, bx)
	}
	if bx.warm && bx.cg != nil {
		err := bx.cg.killLeftovers(bx.uid)
		if err == nil {
			return nil
		}
		b.log.Debug("stopping the container instead", "container", bx.id, "error", err)
	}
	return b.stop(ctx, bx)
}

// usage is one reading of a container's counters.
type usage struct {
	cpu    time.Duration
	memory int64
	peak   int64
	// oomKills is -1 when unknown (the engine's stats do not count them).
	oomKills int
}

// read takes a reading of bx's counters: from its cgroup on this machine,
// or from the engine.
func (b *Backend) read(ctx context.Context, bx *box) (usage, error) {
	if bx.cg != nil {
		u, err := bx.cg.read()
		return usage(u), err
	}
	rd, err := b.cli.ContainerStatsOneShot(ctx, bx.id)
	if err != nil {
		return usage{}, err
	}
	defer rd.Body.Close()
	var st container.StatsResponse
	if err := decodeJSON(rd.Body, &st); err != nil {
		return usage{}, err
	}
	return usage{
		cpu:      time.Duration(st.CPUStats.CPUUsage.TotalUsage),
		memory:   int64(st.MemoryStats.Usage),
		peak:     int64(st.MemoryStats.MaxUsage),
		oomKills: -1,
	}, nil
}

// runIn runs the program in bx. reusable tells whether bx may serve
// another run of the program.
func (b *Backend) runIn(ctx context.Context, bx *box, s *sandbox.Spec) (_ *sandbox.Result, reusable bool, _ error) {
	if bx.runsLauncher() {
		// No exec: the container's launcher runs the program.
		res, err := b.runLaunched(ctx, bx, s)
		return res, false, err
	}
	lim := s.Limits
	if want := resourcesOf(lim); want != bx.res {
		if _, err := b.cli.ContainerUpdate(ctx, bx.id, container.UpdateConfig{Resources: want.engine()}); err != nil {
			return nil, false, notStarted{fmt.Errorf("%w: unable to set the container's limits: %w", sandbox.ErrSetup, err)}
		}
		bx.res = want
	}
	// A new peak for this run, where the kernel can start one.
	peakReset := bx.cg != nil && bx.cg.resetPeak()
	before, err := b.read(ctx, bx)
	if err != nil {
		return nil, false, notStarted{fmt.Errorf("%w: unable to read the container's usage: %w", sandbox.ErrSetup, err)}
	}
	dir := s.Dir
	if dir == "" {
		dir = sandbox.WorkspaceDir
	}
	wipe, files := "fresh", "none"
	if bx.runs > 0 {
		wipe = "wipe"
	}
	if len(bx.files) > 0 {
		files = "files"
	}
	// env -i: the engine adds HOSTNAME and the image's variables to every
	// exec; the program gets exactly the spec's environment.
	argv := append([]string{"/bin/sh", "-c", prelude, "prelude", wipe, files, "/usr/bin/env", "-i"}, s.Env...)
	if bx.warm {
		// A fresh container, its workspace ready: nothing to clean.
		argv = append([]string{"/usr/bin/env", "-i"}, s.Env...)
	}
	argv = append(argv, s.Args...)
	ex, err := b.cli.ContainerExecCreate(ctx, bx.id, container.ExecOptions{
		User: bx.user(), Cmd: argv, WorkingDir: dir,
		AttachStdin: s.Stdin != nil, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return nil, false, notStarted{fmt.Errorf("%w: unable to start the program in image %s: %w", sandbox.ErrSetup, bx.image, err)}
	}

	cfg := watch.Config{
		Spec: s,
		Source: func() (watch.Usage, error) {
			u, err := b.read(ctx, bx)
			return watch.Usage{CPU: u.cpu - before.cpu, Memory: u.memory}, err
		},
		Drain: drainTimeout,
		// The program ended by itself and something it left holds its
		// output open, or its last output is still on its way (a slow
		// reader of the stream, a loaded machine): the output goes on
		// being read while the container is killed, and until the
		// stream ends.
		DrainEnded: lingerDrainTimeout,
		Stuck:      func() { b.log.Warn("output still open after the program ended", "container", bx.id) },
	}
	if !peakReset {
		// The samples are the run's peak measure.
		cfg.MaxPause = statsPause
	}
	sup := watch.NewSupervisor(cfg)
	since := time.Now()
	hj, err := b.cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, false, fmt.Errorf("%w: unable to start the program in image %s: %w", sandbox.ErrSetup, bx.image, err)
	}
	defer hj.Close()
	p := &program{b: b, ctx: ctx, spec: s, bx: bx, hj: &hj, exec: ex.ID, before: before, peakReset: peakReset, since: since, streams: make(chan struct{}), taken: sup.Taken}
	sup.Copy(func(stdout, stderr io.Writer) {
		defer close(p.streams)
		_, _ = stdcopy.StdCopy(stdout, stderr, hj.Reader)
	})
	if s.Stdin != nil {
		go watch.Feed(closeWriter{&hj}, s.Stdin)
	}
	res, err := sup.Run(ctx, p)
	if err != nil {
		return nil, false, err
	}
	return res, !p.killed, nil
}

// program is the docker side of a run's supervision: the program is an
// exec in the container, whose end the engine tells when asked, and whose
// output comes on one stream.
type program struct {
	b         *Backend
	ctx       context.Context
	spec      *sandbox.Spec
	bx        *box
	hj        *types.HijackedResponse
	exec      string
	before    usage
	peakReset bool
	since     time.Time
	// streams is closed when the output stream ended; taken is how much
	// of the output was taken so far.
	streams chan struct{}
	taken   func() int64

	// What Wait saw: the program's exit, and whether its output was still
	// open.
	exitCode    int
	exited      bool
	streamsOpen bool
	// What Stop did: the counters at the end, and whether it killed the
	// container (which then cannot serve another run).
	after    usage
	statsErr error
	killed   bool
	state    container.InspectResponse
}

// Wait follows the exec until it exited and its output ended, or stayed
// open and quiet for lingerTimeout after the exit.
func (p *program) Wait(quit <-chan struct{}) error {
	streamsDone := p.streams
	p.streamsOpen = true
	// While the output is open its end tells of the program's, mostly:
	// the engine is asked only now and then, for a program that left
	// something holding its output, and is not kept busy while it
	// starts the program.
	poll := time.NewTimer(firstPoll)
	defer poll.Stop()
	delay := firstPoll
	for {
		select {
		case <-streamsDone:
			streamsDone, p.streamsOpen = nil, false
			poll.Reset(0)
		case <-poll.C:
			ins, err := p.b.cli.ContainerExecInspect(p.ctx, p.exec)
			if err != nil {
				if p.ctx.Err() != nil {
					return p.ctx.Err()
				}
				return fmt.Errorf("%w: unable to follow the program: %w", sandbox.ErrSetup, err)
			}
			if !ins.Running && ins.Pid != 0 || !ins.Running && ins.ExitCode != 0 {
				p.exitCode, p.exited = ins.ExitCode, true
				// Its output may still be on its way, or held open by
				// something it left running.
				if streamsDone != nil && linger(p.taken, streamsDone, quit) {
					p.streamsOpen = false
				}
				return nil
			}
			delay = min(2*delay, maxPoll)
			if streamsDone == nil {
				delay = time.Millisecond
			}
			poll.Reset(delay)
		case <-quit:
			return nil
		}
	}
}

// linger waits for the rest of a program's output once the program
// ended: until ended is closed (the output ended), or no output was taken
// (taken unchanged) for lingerTimeout, or quit is closed. Output still
// flowing is the program's own, late (the engine may hold much of it when
// the caller reads slowly) or written by something it left running: it
// is waited for as long as it flows, within the output caps and the wall
// limit (which close quit). It reports whether the output ended.
func linger(taken func() int64, ended, quit <-chan struct{}) bool {
	t := time.NewTimer(lingerTimeout)
	defer t.Stop()
	seen := taken()
	for {
		select {
		case <-ended:
			return true
		case <-t.C:
			n := taken()
			if n == seen {
				return false
			}
			seen = n
			t.Reset(lingerTimeout)
		case <-quit:
			return false
		}
	}
}

// Stop reads the counters, then kills the container if anything of the
// program may still run in it: a limit stopped it, or it left a child
// holding its output.
func (p *program) Stop(reason watch.Reason) error {
	p.after, p.statsErr = p.b.read(context.WithoutCancel(p.ctx), p.bx)
	p.killed = reason != watch.ReasonNone || !p.exited || p.streamsOpen
	if !p.killed {
		return nil
	}
	if reason != watch.ReasonNone || !p.exited {
		// Stop reading first: the engine would otherwise block on a full
		// stream we no longer read and never finish the kill. The output
		// of a program that ended by itself goes on being read.
		p.hj.Close()
	}
	kctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), 10*time.Second)
	defer cancel()
	_ = p.b.cli.ContainerKill(kctx, p.bx.id, "KILL")
	p.state, _ = p.b.cli.ContainerInspect(kctx, p.bx.id)
	return nil
}

// Totals are the container's counters since the run's start; seen is the
// measure of a peak the kernel could not start afresh for the run.
func (p *program) Totals(seen int64) (watch.Totals, error) {
	var tot watch.Totals
	bx, before, after := p.bx, p.before, p.after
	if p.statsErr == nil {
		tot.CPU = after.cpu - before.cpu
		switch {
		case p.peakReset || bx.runs == 0 || after.peak > before.peak:
			// The peak was started for this run, or this run raised the
			// container's.
			tot.PeakMemory = after.peak
		default:
			// Below an earlier run's peak: the samples are the measure.
			tot.PeakMemory = max(seen, after.memory)
		}
	}
	bx.runs++
	if p.statsErr == nil && after.oomKills >= 0 && before.oomKills >= 0 {
		tot.MemoryExceeded = after.oomKills > before.oomKills
	} else {
		tot.MemoryExceeded = p.b.oomSince(p.ctx, bx.id, p.since)
	}
	if p.state.ContainerJSONBase != nil && p.state.State != nil && p.state.State.OOMKilled {
		tot.MemoryExceeded = true
	}
	return tot, nil
}

// Exit is the exec's exit code (128+N for a signal), unless the program
// was killed with the container. An exit that says the container could not
// be readied, or the program not executed, is a setup error.
func (p *program) Exit(res *sandbox.Result, reason watch.Reason) (watch.Exit, error) {
	if reason != watch.ReasonNone || !p.exited {
		return watch.Exit{Code: -1, Signal: syscall.SIGKILL}, nil
	}
	code, sig := watch.DecodeExit(p.exitCode)
	if !p.bx.warm && p.exitCode == preludeStatus && bytes.HasPrefix(res.Stderr, []byte(preludeTag)) {
		// A warm container runs no prelude: there, the same exit is
		// the program's own.
		p.bx.runs++
		return watch.Exit{}, fmt.Errorf("%w: %s", errPrelude, strings.TrimSpace(string(res.Stderr)))
	}
	if p.exitCode == 126 || p.exitCode == 127 {
		if msg := string(res.Stderr); strings.HasPrefix(msg, "/usr/bin/env: ") || strings.Contains(msg, "exec failed") {
			return watch.Exit{}, fmt.Errorf("%w: image %s cannot run %s: %s", sandbox.ErrSetup, p.bx.image, p.spec.Args[0], strings.TrimSpace(msg))
		}
	}
	return watch.Exit{Code: code, Signal: sig}, nil
}

// notStarted is an error before the program was started.
type notStarted struct{ error }

func (e notStarted) Unwrap() error { return e.error }

// errPrelude means the container could not be readied for the run.
var errPrelude = fmt.Errorf("%w: container not ready", sandbox.ErrSetup)

// oomSince reports whether the engine saw the kernel OOM-kill a process of
// the container since t. The engine handles a container's events in
// order, so an OOM kill that preceded the program's exit is already
// recorded.
func (b *Backend) oomSince(ctx context.Context, id string, t time.Time) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	now := time.Now()
	msgs, errs := b.cli.Events(ctx, events.ListOptions{
		Since:   unixTime(t),
		Until:   unixTime(now),
		Filters: filters.NewArgs(filters.Arg("container", id), filters.Arg("event", "oom")),
	})
	for {
		select {
		case <-msgs:
			return true
		case err := <-errs:
			if err != nil && !errors.Is(err, io.EOF) {
				b.log.Warn("unable to read the engine's events", "container", id, "error", err)
			}
			return false
		}
	}
}

func unixTime(t time.Time) string { return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond()) }

// closeWriter writes the program's input to an attached exec; Close ends
// the input only, the output still flows.
type closeWriter struct{ hj *types.HijackedResponse }

func (c closeWriter) Write(p []byte) (int, error) { return c.hj.Conn.Write(p) }

func (c closeWriter) Close() error { return c.hj.CloseWrite() }
