package docker

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/internal/watch"
)

// A warm container runs its program without docker exec: its command is
// a launcher run by the image's own /bin/sh, its standard streams are
// attached before it starts, and its user is the program's from the
// start. The launcher says it is ready ('R' on stdout), reads one request
// line from stdin, says it took it ('G'), and evaluates it: the line,
// built by the backend only, changes to the working directory and execs
// /usr/bin/env -i with the run's environment and argv, every value single
// quoted, so that the shell parses nothing of the request. dash's read
// takes one byte at a time from a pipe: the rest of the stream is the
// program's stdin, untouched. The program is then the container's
// process: docker-init, PID 1, reaps it and exits with its status (128+N
// for a signal), and its end ends the container, with everything it
// left.
//
// The end of the program is seen from the host through a pidfd of the
// launcher (the process that becomes the program): the container's
// cgroup, and with it its counters, is removed before the engine reports
// the container's exit, so they are read the moment the program is gone.
// A pidfd of docker-init tells when nothing of the run is left, and kills
// it without the engine.

// launcherScript is the warm container's command, run by /bin/sh.
const launcherScript = `printf R; IFS= read -r l || exit 0; printf G; eval "$l"`

// Bytes the launcher writes on stdout: ready for a request, and the
// request taken. The backend drops both from the program's output.
const (
	launcherReady = 'R'
	launcherTook  = 'G'
)

// maxRequestLine bounds the request line: dash reads it a byte at a time.
// A run whose line would be longer gets a container of its own.
const maxRequestLine = 16 << 10

// readyTimeout bounds the wait for a new launcher's ready byte.
const readyTimeout = 30 * time.Second

// requestLine is the line that makes the launcher run s: the working
// directory, then exec of env -i with s's environment and argv, as the
// exec path runs them, stdin /dev/null when s has none. ok is false when a value holds a newline or a NUL
// (the line could not carry it) or the line is too long.
func requestLine(s *sandbox.Spec) (line string, ok bool) {
	dir := s.Dir
	if dir == "" {
		dir = sandbox.WorkspaceDir
	}
	var b strings.Builder
	b.WriteString("cd -P -- ")
	b.WriteString(shQuote(dir))
	b.WriteString(" 2>/dev/null || { echo 'coderunner-launcher: exec failed: no working directory' >&2; exit 126; }; exec ")
	b.WriteString(shQuote("/usr/bin/env"))
	b.WriteString(" -i")
	for _, v := range [][]string{s.Env, s.Args} {
		for _, a := range v {
			b.WriteByte(' ')
			b.WriteString(shQuote(a))
		}
	}
	if s.Stdin == nil {
		// As for an exec without input.
		b.WriteString(" </dev/null")
	}
	line = b.String()
	if strings.ContainsAny(line, "\n\x00") || len(line) >= maxRequestLine {
		return "", false
	}
	return line + "\n", true
}

// shQuote quotes s for the shell: within single quotes nothing is
// special but the quote itself, which ends the quoting, is escaped and
// starts it again.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// launcher is a warm container's launcher, as the backend holds it.
type launcher struct {
	hj types.HijackedResponse
	// pidfd refers to the launcher (then the program), initFD to the
	// container's docker-init; -1 when not open.
	pidfd, initFD int
	// exited is closed once the engine reported the container's end:
	// status, or waitErr when the engine failed to tell.
	exited     chan struct{}
	status     container.WaitResponse
	waitErr    error
	cancelWait context.CancelFunc
}

// launcherConfig turns cfg into a warm container's: the launcher as its
// command, its streams open for attaching, the program's user.
func launcherConfig(cfg *container.Config, user string) {
	cfg.Cmd = []string{"/bin/sh", "-c", launcherScript}
	cfg.User = user
	cfg.OpenStdin, cfg.StdinOnce = true, true
	cfg.AttachStdin, cfg.AttachStdout, cfg.AttachStderr = true, true, true
}

// attach connects bx's launcher's streams and starts waiting for its
// container's end; it runs between the container's creation and start,
// so that nothing of either is lost.
func (b *Backend) attach(ctx context.Context, bx *box) error {
	l := &launcher{pidfd: -1, initFD: -1, exited: make(chan struct{})}
	hj, err := b.cli.ContainerAttach(ctx, bx.id, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return fmt.Errorf("%w: unable to attach to a container: %w", sandbox.ErrSetup, err)
	}
	l.hj = hj
	wctx, cancel := context.WithCancel(context.Background())
	l.cancelWait = cancel
	statusC, errC := b.cli.ContainerWait(wctx, bx.id, container.WaitConditionNextExit)
	go func() {
		defer close(l.exited)
		select {
		case l.status = <-statusC:
			if l.status.Error != nil {
				l.waitErr = errors.New(l.status.Error.Message)
			}
		case l.waitErr = <-errC:
		}
	}()
	bx.launch = l
	return nil
}

// readyLauncher waits for bx's launcher to say it is ready, and opens pidfds of
// it and of the container's docker-init (initPid). Without the host
// cgroup the launcher cannot be found: the box then runs its program
// with docker exec, as its user.
func (b *Backend) readyLauncher(ctx context.Context, bx *box, initPid int) error {
	l := bx.launch
	deadline := time.Now().Add(readyTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = l.hj.Conn.SetReadDeadline(deadline)
	err := readReady(l.hj.Reader)
	_ = l.hj.Conn.SetReadDeadline(time.Time{})
	if err != nil {
		return fmt.Errorf("%w: the launcher of a warm container did not start: %w", sandbox.ErrSetup, err)
	}
	if bx.cg == nil || initPid <= 0 {
		return nil
	}
	if l.initFD, err = unix.PidfdOpen(initPid, 0); err != nil {
		return fmt.Errorf("%w: unable to open the container's init: %w", sandbox.ErrSetup, err)
	}
	pid, err := bx.cg.childOf(initPid, bx.uid)
	if err == nil {
		l.pidfd, err = unix.PidfdOpen(pid, 0)
	}
	if err == nil && !bx.cg.isChild(pid, initPid, bx.uid) {
		// Gone between the look and the open, its pid reused.
		err = errors.New("the launcher is gone")
	}
	if err != nil {
		return fmt.Errorf("%w: unable to find the launcher of a warm container: %w", sandbox.ErrSetup, err)
	}
	return nil
}

// readReady reads the launcher's first output: its ready byte alone on
// stdout. Anything else (the shell's complaint on stderr, the end of the
// stream) means it does not run.
func readReady(r io.Reader) error {
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[4:])
	body := make([]byte, min(n, 512))
	got, _ := io.ReadFull(r, body)
	body = body[:got]
	if hdr[0] == byte(stdcopy.Stdout) && n == 1 && got == 1 && body[0] == launcherReady {
		return nil
	}
	return fmt.Errorf("it wrote %q", body)
}

// alive reports whether l's launcher still waits for its request: its
// process and its container are there.
func (l *launcher) alive() bool {
	select {
	case <-l.exited:
		return false
	default:
	}
	return l.pidfd < 0 || !pidfdReadable(l.pidfd, 0)
}

// runsLauncher tells whether bx's program is started by its launcher.
func (bx *box) runsLauncher() bool {
	return bx.launch != nil && bx.launch.pidfd >= 0 && bx.cg != nil
}

// close lets go of l: its stream, pidfds and wait. The container is
// removed by the caller.
func (l *launcher) close() {
	l.hj.Close()
	for _, fd := range []*int{&l.pidfd, &l.initFD} {
		if *fd >= 0 {
			_ = unix.Close(*fd)
			*fd = -1
		}
	}
	l.cancelWait()
}

// pidfdReadable waits up to timeout for the process of fd to end.
func pidfdReadable(fd int, timeout time.Duration) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(timeout/time.Millisecond))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n > 0
	}
}

// childOf finds the one process of uid in the cgroup whose parent is
// ppid: the launcher, docker-init's child.
func (c *hostCgroup) childOf(ppid, uid int) (int, error) {
	data, err := os.ReadFile(filepath.Join(c.mem, "cgroup.procs"))
	if err != nil {
		return 0, err
	}
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err == nil && c.isChild(pid, ppid, uid) {
			return pid, nil
		}
	}
	return 0, errors.New("no launcher in the container")
}

// isChild reports whether pid is a live process of uid in the cgroup
// whose parent is ppid.
func (c *hostCgroup) isChild(pid, ppid, uid int) bool {
	if !c.owns(pid, uid) {
		return false
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "PPid:"); ok {
			return strings.TrimSpace(v) == strconv.Itoa(ppid)
		}
	}
	return false
}

// stopLaunched ends bx's run: once docker-init is gone, nothing of the
// container runs (the kernel kills and reaps every other process of its
// PID namespace before its first one ends).
func (b *Backend) stopLaunched(ctx context.Context, bx *box) error {
	l := bx.launch
	if !pidfdReadable(l.initFD, 0) {
		_ = unix.PidfdSendSignal(l.initFD, unix.SIGKILL, nil, 0)
	}
	if pidfdReadable(l.initFD, stopTimeout) {
		return nil
	}
	return b.stop(ctx, bx)
}

// errLauncher means a warm container's launcher died before it took the
// request: the run never started, the container alone is lost.
var errLauncher = fmt.Errorf("%w: the launcher of a warm container is gone", sandbox.ErrSetup)

// runLaunched runs s in bx by sending its launcher the request line.
func (b *Backend) runLaunched(ctx context.Context, bx *box, s *sandbox.Spec) (*sandbox.Result, error) {
	l := bx.launch
	line, ok := requestLine(s)
	if !ok {
		// takeWarm does not hand such a run a warm container.
		return nil, notStarted{fmt.Errorf("%w: the run cannot be sent to a launcher", sandbox.ErrSetup)}
	}
	if want := resourcesOf(s.Limits); want != bx.res {
		if _, err := b.cli.ContainerUpdate(ctx, bx.id, container.UpdateConfig{Resources: want.engine()}); err != nil {
			return nil, notStarted{fmt.Errorf("%w: unable to set the container's limits: %w", sandbox.ErrSetup, err)}
		}
		bx.res = want
	}
	bx.cg.resetPeak()
	before, err := b.read(ctx, bx)
	if err != nil {
		return nil, notStarted{fmt.Errorf("%w: unable to read the container's usage: %w", sandbox.ErrSetup, err)}
	}
	p := &launched{b: b, ctx: ctx, spec: s, bx: bx, before: before, since: time.Now(),
		streams: make(chan struct{}), took: make(chan struct{}), gone: make(chan struct{}),
		quitEnd: make(chan struct{}), endDone: make(chan struct{})}
	cfg := watch.Config{
		Spec: s,
		Source: func() (watch.Usage, error) {
			u, err := b.read(ctx, bx)
			if err == nil {
				p.last.Store(int64(u.cpu - before.cpu))
			}
			return watch.Usage{CPU: u.cpu - before.cpu, Memory: u.memory}, err
		},
		Drain:      drainTimeout,
		DrainEnded: lingerDrainTimeout,
		Stuck:      func() { b.log.Warn("output still open after the program ended", "container", bx.id) },
	}
	sup := watch.NewSupervisor(cfg)
	p.taken = sup.Taken
	sup.Copy(func(stdout, stderr io.Writer) {
		defer close(p.streams)
		_, _ = stdcopy.StdCopy(&tookWriter{w: stdout, took: p.took}, stderr, l.hj.Reader)
	})
	// Its end is watched from now on: the counters are read the moment
	// it comes.
	go p.watchEnd()
	if _, err := io.WriteString(l.hj.Conn, line); err != nil {
		p.stopWatch()
		return nil, notStarted{fmt.Errorf("%w: %w", errLauncher, err)}
	}
	if s.Stdin != nil {
		go watch.Feed(closeWriter{&l.hj}, s.Stdin)
	} else {
		_ = l.hj.CloseWrite()
	}
	res, err := sup.Run(ctx, p)
	p.stopWatch()
	return res, err
}

// tookWriter drops the launcher's 'G', the first byte of stdout, and
// closes took when it came.
type tookWriter struct {
	w    io.Writer
	took chan struct{}
	seen bool
}

func (t *tookWriter) Write(b []byte) (int, error) {
	if !t.seen && len(b) > 0 {
		t.seen = true
		if b[0] == launcherTook {
			close(t.took)
			n, err := t.w.Write(b[1:])
			return n + 1, err
		}
	}
	return t.w.Write(b)
}

// launched is the docker side of a run started by a launcher: the
// program is the container's process, whose end a pidfd tells at once
// and the engine confirms with its status.
type launched struct {
	b      *Backend
	ctx    context.Context
	spec   *sandbox.Spec
	bx     *box
	before usage
	since  time.Time
	taken  func() int64
	// streams is closed when the output stream ended, took when the
	// launcher took the request.
	streams, took chan struct{}
	// gone is closed once the program's process ended and end (or
	// endErr) holds the counters read at that moment; watchEnd stops at
	// quitEnd, and closes endDone.
	gone, quitEnd, endDone chan struct{}
	quitOnce               sync.Once
	end                    usage
	endErr                 error
	// last is the CPU time of the latest reading while it ran.
	last atomic.Int64

	exitCode    int
	exited      bool
	streamsOpen bool
	after       usage
	statsErr    error
}

// watchEnd waits for the program's process to end and reads the
// container's counters then, before the container (and its cgroup)
// goes.
func (p *launched) watchEnd() {
	defer close(p.endDone)
	for {
		select {
		case <-p.quitEnd:
			return
		default:
		}
		if pidfdReadable(p.bx.launch.pidfd, 20*time.Millisecond) {
			p.end, p.endErr = p.b.read(context.WithoutCancel(p.ctx), p.bx)
			close(p.gone)
			return
		}
	}
}

// stopWatch ends watchEnd and waits for it.
func (p *launched) stopWatch() {
	p.quitOnce.Do(func() { close(p.quitEnd) })
	<-p.endDone
}

// Wait follows the program until the engine reported the container's end
// and the output ended, or stayed open and quiet for lingerTimeout after
// it.
func (p *launched) Wait(quit <-chan struct{}) error {
	streamsDone, exited := p.streams, p.bx.launch.exited
	p.streamsOpen = true
	var linger <-chan time.Time
	var lingerTaken int64
	for {
		select {
		case <-streamsDone:
			streamsDone, p.streamsOpen = nil, false
			if p.exited {
				return nil
			}
		case <-exited:
			exited = nil
			l := p.bx.launch
			if l.waitErr != nil {
				if p.ctx.Err() != nil {
					return p.ctx.Err()
				}
				return fmt.Errorf("%w: unable to follow the program: %w", sandbox.ErrSetup, l.waitErr)
			}
			p.exitCode, p.exited = int(l.status.StatusCode), true
			if streamsDone == nil {
				return nil
			}
			// Nothing of the container runs any more: what is left
			// of its output is on its way.
			linger = time.After(lingerTimeout)
			lingerTaken = p.taken()
		case <-linger:
			if n := p.taken(); n != lingerTaken {
				linger, lingerTaken = time.After(lingerTimeout), n
				continue
			}
			return nil
		case <-quit:
			return nil
		}
	}
}

// endBound bounds the wait for the counters read at the program's end,
// once the engine said the container is over: the pidfd told first.
const endBound = time.Second

// Stop takes the counters of the run, and kills the container if it still
// runs (a limit, the caller).
func (p *launched) Stop(reason watch.Reason) error {
	select {
	case <-p.gone:
		p.after, p.statsErr = p.end, p.endErr
	default:
		if p.exited {
			select {
			case <-p.gone:
				p.after, p.statsErr = p.end, p.endErr
			case <-time.After(endBound):
				p.statsErr = errors.New("the counters at the program's end were not read")
			}
		} else {
			p.after, p.statsErr = p.b.read(context.WithoutCancel(p.ctx), p.bx)
		}
	}
	if reason == watch.ReasonNone && p.exited {
		return nil
	}
	l := p.bx.launch
	if reason != watch.ReasonNone || !p.exited {
		// Stop reading first, as for an exec: the engine never blocks
		// on a stream nobody reads.
		l.hj.Close()
	}
	if err := unix.PidfdSendSignal(l.initFD, unix.SIGKILL, nil, 0); err != nil {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), 10*time.Second)
		defer cancel()
		_ = p.b.cli.ContainerKill(kctx, p.bx.id, "KILL")
	}
	return nil
}

// Totals are the counters since the take. When the container's cgroup
// was gone before they could be read at the end, the last reading while
// it ran and the peak seen stand in.
func (p *launched) Totals(seen int64) (watch.Totals, error) {
	var tot watch.Totals
	before, after := p.before, p.after
	if p.statsErr == nil {
		tot.CPU = after.cpu - before.cpu
		tot.PeakMemory = max(after.peak, seen)
	} else {
		p.b.log.Debug("container counters not read at the program's end", "container", p.bx.id, "error", p.statsErr)
		tot.CPU = time.Duration(p.last.Load())
		tot.PeakMemory = seen
	}
	p.bx.runs++
	if p.statsErr == nil && after.oomKills >= 0 && before.oomKills >= 0 {
		tot.MemoryExceeded = after.oomKills > before.oomKills
	} else {
		tot.MemoryExceeded = p.b.oomSince(p.ctx, p.bx.id, p.since)
	}
	return tot, nil
}

// Exit is the container's exit status (128+N for a signal), unless it
// was killed. A launcher that never took the request, or an image that
// could not run the program, is a setup error.
func (p *launched) Exit(res *sandbox.Result, reason watch.Reason) (watch.Exit, error) {
	if reason != watch.ReasonNone || !p.exited {
		return watch.Exit{Code: -1, Signal: syscall.SIGKILL}, nil
	}
	select {
	case <-p.took:
	default:
		return watch.Exit{}, notStarted{fmt.Errorf("%w (status %d): %.200s", errLauncher, p.exitCode, res.Stderr)}
	}
	code, sig := watch.DecodeExit(p.exitCode)
	if p.exitCode == 126 || p.exitCode == 127 {
		msg := string(res.Stderr)
		if strings.HasPrefix(msg, "/usr/bin/env: ") || strings.HasPrefix(msg, "coderunner-launcher: ") || strings.Contains(msg, "exec: /usr/bin/env: ") {
			return watch.Exit{}, fmt.Errorf("%w: image %s cannot run %s: %s", sandbox.ErrSetup, p.bx.image, p.spec.Args[0], strings.TrimSpace(msg))
		}
	}
	return watch.Exit{Code: code, Signal: sig}, nil
}
