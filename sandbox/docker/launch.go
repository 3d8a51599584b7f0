package docker

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
// line from stdin, says it took it ('G'), and evaluates it. The line,
// built by the backend only, every value single quoted so that the shell
// parses nothing of the request, changes to the working directory and
// runs /usr/bin/env -i with the run's environment and argv, as an exec
// would; dash's read takes one byte at a time from a pipe, so the rest of
// the stream is the program's stdin, untouched. Once the program ended
// the line writes an end mark on stdout, with the program's status
// (128+N for a signal) and a '+' when it left processes that may still
// write, and one on stderr, each holding a nonce of the run, and stops
// the launcher: the container, its cgroup and its counters stay until
// the backend has read them and kills it. Output after the marks comes
// from what the program left: it is the run's, waited for as the exec
// path waits for it (linger).
//
// The marks tell the backend that it has all of the program's output and
// its status without the engine, whose report of a container's end comes
// only after the container's teardown (about 40 ms here). The backend
// kills the container through a pidfd of its docker-init, which also
// tells when nothing of the run is left. A program that ends the launcher
// (it runs as the same user), or learns the nonce from its memory, only
// cuts its own run short: without the marks its end is the container's,
// as the engine reports it.

// launcherScript is the warm container's command, run by /bin/sh.
const launcherScript = `printf R; IFS= read -r l || exit 0; printf G; eval "$l"`

// Bytes the launcher writes on stdout: ready for a request, and the
// request taken. The backend drops both from the program's output.
const (
	launcherReady = 'R'
	launcherTook  = 'G'
)

// endTag starts the end marks, after a NUL.
const endTag = "coderunner-end-"

// maxRequestLine bounds the request line: dash reads it a byte at a time.
// A run whose line would be longer gets a container of its own.
const maxRequestLine = 16 << 10

// readyTimeout bounds the wait for a new launcher's ready byte.
const readyTimeout = 30 * time.Second

// requestLine is the line that makes the launcher run s, its end marked
// with nonce: the working directory, then env -i with s's environment
// and argv, as the exec path runs them (stdin /dev/null when s has
// none), then a look for processes the program left, then the marks,
// then the launcher stops. ok is false when a
// value holds a newline or a NUL (the line could not carry it) or the
// line is too long.
func requestLine(s *sandbox.Spec, nonce string) (line string, ok bool) {
	dir := s.Dir
	if dir == "" {
		dir = sandbox.WorkspaceDir
	}
	var b strings.Builder
	// The shell's own stderr is /dev/null: dash tells of a child killed
	// by a signal there ("Killed"), which an exec's program never has.
	// Its fd 3 keeps the container's stderr, for the program and the
	// mark; the program's redirections are made in a subshell that
	// becomes it, not around the shell's wait.
	b.WriteString("exec 3>&2 2>/dev/null; if cd -P -- ")
	b.WriteString(shQuote(dir))
	b.WriteString(" 2>/dev/null; then (exec ")
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
	b.WriteString(" 2>&3 3>&-); s=$?; else echo 'coderunner-launcher: exec failed: no working directory' >&3; s=126; fi; ")
	// A '+' after the status: a process other than docker-init (1) and
	// the launcher is left in the container, which may still write.
	b.WriteString("k=; for f in /proc/[0-9]*; do case ${f#/proc/} in 1|$$) ;; *) k=+; break;; esac; done; ")
	fmt.Fprintf(&b, `printf '\000%s%%s %%d%%s\n' %s "$s" "$k"; printf '\000%s%%s\n' %s >&3; while :; do kill -STOP $$; done`,
		endTag, shQuote(nonce), endTag, shQuote(nonce))
	line = b.String()
	if strings.ContainsAny(line, "\n\x00") || len(line) >= maxRequestLine {
		return "", false
	}
	return line + "\n", true
}

// sendable reports whether s can be sent to a launcher.
func sendable(s *sandbox.Spec) bool {
	_, ok := requestLine(s, strings.Repeat("0", nonceLen))
	return ok
}

// nonceLen is the length of a run's nonce in hex digits.
const nonceLen = 32

func newNonce() string {
	var b [nonceLen / 2]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
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
	// pidfd refers to the launcher, initFD to the container's
	// docker-init; -1 when not open.
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
	nonce := newNonce()
	line, ok := requestLine(s, nonce)
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
	p := &launched{b: b, ctx: ctx, spec: s, bx: bx, before: before, since: time.Now(), streams: make(chan struct{}), over: make(chan struct{})}
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
	mark := "\x00" + endTag + nonce
	p.stdout = newEndWriter(nil, mark, true)
	p.stderr = newEndWriter(nil, mark, false)
	p.stdout.begin, p.stderr.begin = p.begin, p.begin
	sup.Copy(func(stdout, stderr io.Writer) {
		defer close(p.streams)
		p.stdout.w, p.stderr.w = stdout, stderr
		_, _ = stdcopy.StdCopy(p.stdout, p.stderr, l.hj.Reader)
		p.stdout.flush()
		p.stderr.flush()
	})
	if _, err := io.WriteString(l.hj.Conn, line); err != nil {
		return nil, notStarted{fmt.Errorf("%w: %w", errLauncher, err)}
	}
	if s.Stdin != nil {
		go p.feed(closeWriter{&l.hj}, s.Stdin)
	} else {
		_ = l.hj.CloseWrite()
	}
	defer func() {
		// A feed still waiting for the take never starts.
		p.abandon()
		close(p.over)
	}()
	return sup.Run(ctx, p)
}

// feed gives the program its stdin once the launcher took the request,
// never before: a launcher that dies first (Exit's not started) has read
// none of it, and the run is made again elsewhere with all of it, stdin
// that cannot be read twice (an interactive client's) included. The
// program reads nothing before the take anyway: the launcher starts it
// only once it wrote the 'G'.
func (p *launched) feed(w closeWriter, stdin io.Reader) {
	select {
	case <-p.stdout.took:
	case <-p.over:
		return
	}
	if p.begin() {
		watch.Feed(w, stdin)
	}
}

// What of a launched run has crossed the launcher (launched.gate).
const (
	gateShut      int32 = iota // nothing yet
	gateBegun                  // stdin read for it, or output passed on
	gateAbandoned              // found not started: nothing crosses
)

// begin reports whether stdin may be read for the run and its output
// passed on: not once the run was found not started.
func (p *launched) begin() bool {
	return p.gate.CompareAndSwap(gateShut, gateBegun) || p.gate.Load() == gateBegun
}

// abandon reports whether the run may be made again elsewhere: nothing
// of it crossed the launcher, and from now on nothing does.
func (p *launched) abandon() bool {
	return p.gate.CompareAndSwap(gateShut, gateAbandoned) || p.gate.Load() == gateAbandoned
}

// endWriter passes a launched program's output on, without the
// launcher's bytes: its 'G' (first on stdout) and the end mark, which
// closes ended (on stdout with the status after it, and a '+' when the
// program left processes). Whatever comes after the mark is written by
// what the program left, and passed on too. The bytes that could be the
// start of the mark are held back until they turn out not to be.
type endWriter struct {
	w io.Writer
	// begin, when set, tells whether output may be passed on; what may
	// not is dropped.
	begin      func() bool
	mark       []byte
	withStatus bool
	ack        bool // the 'G' is still to come
	took       chan struct{}
	pending    []byte
	ended      chan struct{}
	done       bool
	status     int
	// leftovers is set when the status says the program left processes.
	leftovers bool
}

func newEndWriter(w io.Writer, mark string, stdout bool) *endWriter {
	return &endWriter{w: w, mark: []byte(mark), withStatus: stdout, ack: stdout,
		took: make(chan struct{}), ended: make(chan struct{})}
}

// maxStatus bounds the status after the mark: " 255\n".
const maxStatus = 8

func (e *endWriter) Write(b []byte) (int, error) {
	n := len(b)
	if e.done {
		return n, e.pass(b)
	}
	if e.ack && len(b) > 0 {
		e.ack = false
		if b[0] == launcherTook {
			close(e.took)
			b = b[1:]
		}
	}
	buf := b
	if len(e.pending) > 0 {
		buf = append(e.pending, b...)
		e.pending = nil
	}
	if i := bytes.Index(buf, e.mark); i >= 0 {
		if err := e.pass(buf[:i]); err != nil {
			return n, err
		}
		// The mark ends its line: on stdout, the status comes first.
		rest := buf[i+len(e.mark):]
		j := bytes.IndexByte(rest, '\n')
		if j < 0 && len(rest) < maxStatus {
			// The rest of the line is on its way.
			e.pending = append([]byte(nil), buf[i:]...)
			return n, nil
		}
		status := ""
		if j >= 0 {
			status, rest = strings.TrimSpace(string(rest[:j])), rest[j+1:]
		}
		if e.withStatus {
			status, e.leftovers = strings.CutSuffix(status, "+")
			code, err := strconv.Atoi(strings.TrimSpace(status))
			if j < 0 || err != nil {
				code = -1
			}
			e.status = code
		}
		e.done = true
		close(e.ended)
		return n, e.pass(rest)
	}
	k := overlap(buf, e.mark)
	e.pending = append([]byte(nil), buf[len(buf)-k:]...)
	return n, e.pass(buf[:len(buf)-k])
}

func (e *endWriter) pass(b []byte) error {
	if len(b) == 0 || e.begin != nil && !e.begin() {
		return nil
	}
	_, err := e.w.Write(b)
	return err
}

// overlap is the length of the longest end of b that starts mark.
func overlap(b, mark []byte) int {
	for k := min(len(b), len(mark)-1); k > 0; k-- {
		if bytes.HasSuffix(b, mark[:k]) {
			return k
		}
	}
	return 0
}

// flush passes on what was held back, once the stream ended without a
// mark; it is called from the goroutine that writes.
func (e *endWriter) flush() {
	if !e.done && len(e.pending) > 0 {
		_ = e.pass(e.pending)
		e.pending = nil
	}
}

// launched is the docker side of a run started by a launcher: its end is
// the two end marks, or, when they never come (the launcher was killed),
// the container's, as the engine reports it.
type launched struct {
	b              *Backend
	ctx            context.Context
	spec           *sandbox.Spec
	bx             *box
	before         usage
	since          time.Time
	taken          func() int64
	stdout, stderr *endWriter
	// streams is closed when the copy of the output ended, over when
	// the run is over.
	streams, over chan struct{}
	// gate tells whether anything of the run crossed the launcher (stdin
	// read for it, output passed on), or the run was found not started
	// (gateShut, gateBegun, gateAbandoned): a run may be made again
	// elsewhere only when nothing did, and then nothing will.
	gate atomic.Int32
	// last is the CPU time of the latest reading while it ran.
	last atomic.Int64

	exitCode int
	exited   bool
	// marked is set when the marks ended the run, lingered when Wait then
	// waited for the output of what the program left, streamsOpen while
	// the output was open when Wait returned.
	marked      bool
	lingered    bool
	streamsOpen bool
	after       usage
	statsErr    error
}

// Wait follows the program until both end marks came, or else until the
// engine reported the container's end and the output ended (or stayed
// quiet for lingerTimeout after it). When the marks say the program left
// processes, which may still write, it then waits as the exec path does:
// until the output stayed quiet for lingerTimeout.
func (p *launched) Wait(quit <-chan struct{}) error {
	outEnded, errEnded := p.stdout.ended, p.stderr.ended
	streamsDone, exited := p.streams, p.bx.launch.exited
	p.streamsOpen = true
	for outEnded != nil || errEnded != nil {
		select {
		case <-outEnded:
			outEnded = nil
		case <-errEnded:
			errEnded = nil
		case <-streamsDone:
			streamsDone, p.streamsOpen = nil, false
		case <-exited:
			l := p.bx.launch
			if l.waitErr != nil {
				if p.ctx.Err() != nil {
					return p.ctx.Err()
				}
				return fmt.Errorf("%w: unable to follow the program: %w", sandbox.ErrSetup, l.waitErr)
			}
			p.exitCode, p.exited = int(l.status.StatusCode), true
			// Nothing of the container runs any more: what is left of
			// its output is on its way.
			if streamsDone != nil && linger(p.taken, streamsDone, quit) {
				p.streamsOpen = false
			}
			if closed(p.stdout.ended) && closed(p.stderr.ended) {
				p.exitCode, p.marked = p.stdout.status, true
			}
			return nil
		case <-quit:
			return nil
		}
	}
	p.exitCode, p.exited, p.marked = p.stdout.status, true, true
	if !p.stdout.leftovers || streamsDone == nil {
		return nil
	}
	p.lingered = true
	if linger(p.taken, streamsDone, quit) {
		p.streamsOpen = false
	}
	return nil
}

// closed reports whether c is closed.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Stop takes the counters of the run, then kills the container: the
// launcher waits, stopped, once the program ended, and whatever the
// program left is killed with it.
func (p *launched) Stop(reason watch.Reason) error {
	l := p.bx.launch
	p.after, p.statsErr = p.b.read(context.WithoutCancel(p.ctx), p.bx)
	if reason != watch.ReasonNone || !p.lingered {
		// Stop reading: nothing more is the run's, and the engine never
		// blocks on a stream nobody reads. What the processes a program
		// that ended by itself left wrote before the kill is still its
		// own: it is read until the stream ends (lingerDrainTimeout).
		l.hj.Close()
	}
	if err := unix.PidfdSendSignal(l.initFD, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), 10*time.Second)
		defer cancel()
		_ = p.b.cli.ContainerKill(kctx, p.bx.id, "KILL")
	}
	return nil
}

// Totals are the counters since the take. When the container's cgroup
// was gone before they could be read (the launcher killed), the last
// reading while it ran and the peak seen stand in.
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

// Exit is the program's status (128+N for a signal), unless it was
// killed. A launcher that never took the request, or an image that could
// not run the program, is a setup error; the first, when nothing of the
// run crossed the launcher, a run not started.
func (p *launched) Exit(res *sandbox.Result, reason watch.Reason) (watch.Exit, error) {
	if reason != watch.ReasonNone || !p.exited || p.exitCode < 0 {
		return watch.Exit{Code: -1, Signal: syscall.SIGKILL}, nil
	}
	if !closed(p.stdout.took) {
		if p.abandon() {
			// Nothing of the run reached the program or the caller.
			return watch.Exit{}, notStarted{fmt.Errorf("%w (status %d)", errLauncher, p.exitCode)}
		}
		return watch.Exit{}, fmt.Errorf("%w (status %d): %.200s", errLauncher, p.exitCode, res.Stderr)
	}
	code, sig := watch.DecodeExit(p.exitCode)
	if p.exitCode == 126 || p.exitCode == 127 {
		msg := string(res.Stderr)
		if strings.HasPrefix(msg, "/usr/bin/env: ") || strings.HasPrefix(msg, "coderunner-launcher: ") || strings.HasPrefix(msg, "sh: 1: /usr/bin/env: ") {
			return watch.Exit{}, fmt.Errorf("%w: image %s cannot run %s: %s", sandbox.ErrSetup, p.bx.image, p.spec.Args[0], strings.TrimSpace(msg))
		}
	}
	return watch.Exit{Code: code, Signal: sig}, nil
}
