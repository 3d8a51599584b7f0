package native

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/cgroup"
	"github.com/coderunner/coderunner/internal/mountpoint"
	"github.com/coderunner/coderunner/sandbox"
	"github.com/coderunner/coderunner/sandbox/internal/threadid"
	"github.com/coderunner/coderunner/sandbox/native/nsinit"
)

// initCaps are the capabilities, within its own namespaces, that the
// sandbox init needs to build the sandbox, and, kept for a series, to
// kill what a run left (its processes run as another user).
var initCaps = []uintptr{
	unix.CAP_SYS_ADMIN, unix.CAP_SETUID, unix.CAP_SETGID, unix.CAP_SETPCAP, unix.CAP_CHOWN,
	unix.CAP_DAC_OVERRIDE, unix.CAP_FOWNER, unix.CAP_NET_ADMIN, unix.CAP_KILL,
	// The user namespace's own limits (user.max_*).
	unix.CAP_SYS_RESOURCE,
}

// started is a sandbox init in its fresh namespaces, blocked until it is
// sent its setup. Each one serves exactly one run.
type started struct {
	proc   *os.Process
	waited chan *os.ProcessState
	// pidfd refers to the init, reaped or not, until close (nil where
	// the kernel has no pidfds); owner is the host uid that started it,
	// which owns its user namespace (0 when the backend is not root).
	pidfd *os.File
	owner int
	// group is the init's cgroup, or nil without cgroups; limits are the
	// limits it has now.
	group  *cgroup.Group
	limits cgroup.Limits
	// startMemory is what the cgroup held before the sandbox's first run,
	// for a sandbox a series may keep: later runs are measured from it.
	startMemory int64
	// background is set for an init started at the lowest CPU priority,
	// ahead of need: take restores its priority.
	background bool
	// freeSlot, for an init taken from the warm pool, lets the pool start
	// another; called once, by done.
	freeSlot func()
	freeOnce sync.Once
	// opened are the bind sources the init opened in its first phase.
	opened map[string]bool
	// The parent's ends of the init's pipes; reports reads status, which
	// carries a line per report (see readReport).
	stdin, stdout, stderr, config, status *os.File
	reports                               *bufio.Reader
	// programStreams are the program's ends of the pipes of the next run
	// of a kept sandbox, while haveStreams, until they are sent.
	programStreams [3]int
	haveStreams    bool
	// readyDone, for a kept sandbox, closes once its init answered
	// whether it is ready for another run (awaitReady); readyErr is nil
	// when it is.
	readyDone chan struct{}
	readyErr  error
	once      sync.Once
}

// spawn starts a sandbox init. Creating namespaces (a network namespace
// above all) is the slowest part of a run, and an init can be started
// before its run is known: see warmPool.
//
// A background sandbox's cgroup gets the least CPU weight, so that its
// first phase only takes CPU time runs leave idle; take gives it the
// normal weight back.
func (b *Backend) spawn(extra []string, background bool) (_ *started, retErr error) {
	var parent, child []*os.File
	var group *cgroup.Group
	recent := b.recentLimits()
	limits := cgroupLimits(recent)
	// The first phase (a copy of the host's mount tree among others) is
	// charged to the group: never less than this, whatever the latest run
	// wanted.
	limits.Memory = max(limits.Memory, firstPhaseMemory)
	if b.cgroups != nil {
		// The run's limits are set when it is known (take); until then
		// the init only waits, in a group limited as the latest run was,
		// since the next one is likely to want the same.
		g, err := b.cgroups.Create(fmt.Sprintf("run-%d-%d", os.Getpid(), spawnID.Add(1)), limits)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
		}
		group = g
		if background {
			if err := g.SetBackground(true); err != nil {
				_ = g.Destroy()
				return nil, fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
			}
		}
	}
	defer func() {
		if retErr != nil && group != nil {
			_ = group.Destroy()
		}
		for _, f := range child {
			_ = f.Close()
		}
		if retErr != nil {
			for _, f := range parent {
				_ = f.Close()
			}
		}
	}()
	// stdin, stdout, stderr, then config, a socket since a kept sandbox
	// is sent each later run's streams over it, and status, which the
	// child writes.
	parentStreams, childStreams, err := streamPipes()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
	}
	parent, child = parentStreams[:], childStreams[:]
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: unable to create socket pair: %w", sandbox.ErrSetup, err)
	}
	child = append(child, os.NewFile(uintptr(pair[1]), "config"))
	parent = append(parent, os.NewFile(uintptr(pair[0]), "config"))
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%w: unable to create pipe: %w", sandbox.ErrSetup, err)
	}
	child, parent = append(child, w), append(parent, r)
	proc, pidfd, owner, release, err := b.startInit(child, group)
	if err != nil {
		return nil, err
	}
	s := &started{
		proc:   proc,
		pidfd:  pidfd,
		owner:  owner,
		waited: make(chan *os.ProcessState, 1),
		group:  group,
		limits: limits,
		stdin:  parent[0], stdout: parent[1], stderr: parent[2], config: parent[3], status: parent[4],
		reports: bufio.NewReaderSize(parent[4], reportSize),
	}
	go func() {
		st, _ := proc.Wait()
		release()
		s.waited <- st
	}()
	if _, cloned := groupFD(group); group != nil && !cloned {
		// cgroup v1: the init waits for its setup before it does
		// anything, so it joins its cgroup before any of its work is
		// done.
		if err := group.Add(proc.Pid); err != nil {
			err = errors.Join(err, s.kill())
			s.close()
			return nil, fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
		}
	}
	if err := b.sendFirstPhase(s, extra); err != nil {
		err = errors.Join(err, s.kill())
		s.close()
		return nil, err
	}
	return s, nil
}

// groupFD is the descriptor a new process is cloned into group with
// (cgroup v2, CLONE_INTO_CGROUP); ok is false on v1 and without a group.
func groupFD(group *cgroup.Group) (fd int, ok bool) {
	if group == nil {
		return -1, false
	}
	return group.FD()
}

// startInit starts the sandbox init with the descriptors child, in new
// namespaces and, on cgroup v2, inside group from its first instruction.
// pidfd refers to it (nil without pidfds); owner is the host uid that
// owns its user namespace, as root. release, called once the init has
// exited, gives back what the start took.
func (b *Backend) startInit(child []*os.File, group *cgroup.Group) (proc *os.Process, pidfd *os.File, owner int, release func(), err error) {
	release = func() {}
	attr := b.sysProcAttr()
	if fd, ok := groupFD(group); ok {
		attr.UseCgroupFD, attr.CgroupFD = true, fd
	}
	fd := -1
	attr.PidFD = &fd
	start := func() (err error) {
		proc, err = os.StartProcess("/proc/self/exe", []string{nsinit.ArgV0}, &os.ProcAttr{
			Dir:   "/",
			Env:   []string{},
			Files: child,
			Sys:   attr,
		})
		return err
	}
	if b.privileged {
		// The user namespace is created by the thread that starts the
		// init, and belongs to that thread's effective uid: the kernel
		// charges the namespace's owner, up to the host, for what the
		// sandbox holds (inotify instances, queued signals, message
		// queue bytes). As root that thread is given the owner's uid
		// for the start (one of b.owners), and keeps its
		// capabilities to write the namespace's id maps.
		owner = b.owners.Take()
		if err = threadid.Privileged(owner, start); err == nil {
			release = func() { b.owners.Put(owner) }
		} else {
			b.owners.Put(owner)
		}
	} else {
		err = start()
	}
	if err != nil {
		return nil, nil, 0, nil, fmt.Errorf("%w: unable to start sandbox init: %w", sandbox.ErrSetup, err)
	}
	if fd >= 0 {
		pidfd = os.NewFile(uintptr(fd), "pidfd")
	}
	return proc, pidfd, owner, release, nil
}

// sendFirstPhase sends s its first phase (firstPhase), with, as root, the
// bind sources the init's host user cannot reach, opened in its copy of
// the host's tree.
func (b *Backend) sendFirstPhase(s *started, extra []string) error {
	var give func(string) (*os.File, error)
	if b.privileged {
		root, err := os.OpenFile(fmt.Sprintf("/proc/%d/root", s.proc.Pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%w: unable to open the sandbox's root: %w", sandbox.ErrSetup, err)
		}
		defer root.Close()
		give = func(src string) (*os.File, error) { return openIn(root, src) }
	}
	first, opened, given, err := b.firstPhase(extra, give)
	if err != nil {
		return err
	}
	s.opened = opened
	if len(given) == 0 {
		_, err = s.config.Write(first)
	} else {
		err = s.sendWith(first, given...)
		for _, f := range given {
			_ = f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("%w: unable to send the sandbox's first phase: %w", sandbox.ErrSetup, err)
	}
	return nil
}

// openIn opens src (O_PATH) as the init's copy of the host's tree has it:
// root is the init's root (/proc/<pid>/root), which its new mount
// namespace made a copy of the host's mounts, and src resolves in it as
// on the host, even through an absolute symbolic link. The init clones
// a mount out of the descriptor: it must point into the init's own
// namespace, which a path opened on the host does not. The backend opens
// it as root, for the init's host user may not reach it.
func openIn(root *os.File, src string) (*os.File, error) {
	fd, err := unix.Openat2(int(root.Fd()), src, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, &os.PathError{Op: "open mount source", Path: src, Err: err}
	}
	return os.NewFile(uintptr(fd), src), nil
}

// exitWait bounds how long the backend waits for a killed init to exit:
// the kernel then kills and reaps the rest of its PID namespace and
// tears its namespaces down, which takes milliseconds. An init still
// there past it is reported, and left.
const exitWait = 10 * time.Second

// errUnkillable is the error of an init that could not be killed, or did
// not exit once killed.
var errUnkillable = errors.New("sandbox init could not be stopped")

// kill stops the init, and so everything in its PID namespace, and waits,
// for up to exitWait, for it to exit.
func (s *started) kill() error {
	if err := s.signal(); err != nil {
		return err
	}
	if _, err := s.waitFor(exitWait); err != nil {
		return err
	}
	return nil
}

// signal sends the init SIGKILL, through its pidfd, so that a reused
// process id is never signalled. Without CAP_KILL, root may not signal
// the init (a process of another host user): the signal is then sent
// from a thread with the uid of the user namespace's owner, which holds
// every capability in it; and, failing that, through the init's cgroup
// (cgroup.kill on v2; on v1, frozen and killed).
func (s *started) signal() error {
	if !s.alive() {
		return nil // exited and reaped
	}
	err := s.send(0)
	if err != nil && errors.Is(err, unix.EPERM) && s.owner > 0 {
		if oerr := s.send(s.owner); oerr != nil {
			err = errors.Join(err, fmt.Errorf("as uid %d: %w", s.owner, oerr))
		} else {
			err = nil
		}
	}
	if err != nil && s.group != nil {
		if gerr := killGroup(s.group); gerr != nil {
			err = errors.Join(err, gerr)
		} else {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("%w: unable to kill process %d: %w", errUnkillable, s.proc.Pid, err)
	}
	return nil
}

// send sends SIGKILL to the init from this thread, or, with as set, from
// a thread with that host uid; an init already reaped needs nothing.
func (s *started) send(as int) error {
	err := sendKill(s, as)
	if errors.Is(err, unix.ESRCH) || errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// killGroup kills every process in g; the tests replace it to make the
// kernel refuse.
var killGroup = (*cgroup.Group).Kill

// sendKill sends SIGKILL to s's init, from a thread with host uid as
// when it is set; the tests replace it to make the kernel refuse.
var sendKill = func(s *started, as int) error {
	kill := func() error {
		if s.pidfd == nil {
			return s.proc.Signal(syscall.SIGKILL)
		}
		raw, err := s.pidfd.SyscallConn()
		if err != nil {
			return err
		}
		var sigErr error
		if err := raw.Control(func(fd uintptr) {
			sigErr = unix.PidfdSendSignal(int(fd), unix.SIGKILL, nil, 0)
		}); err != nil {
			return err
		}
		return sigErr
	}
	if as > 0 {
		return threadid.As(as, kill)
	}
	return kill()
}

// waitFor waits, for up to d, for the init to exit.
func (s *started) waitFor(d time.Duration) (*os.ProcessState, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case st := <-s.waited:
		s.waited <- st
		return st, nil
	case <-t.C:
		return nil, fmt.Errorf("%w: process %d still there %v after SIGKILL", errUnkillable, s.proc.Pid, d)
	}
}

// discard kills the init and removes its cgroup.
func (s *started) discard() error {
	err := s.kill()
	s.close()
	if s.group != nil {
		if derr := s.group.Destroy(); derr != nil {
			err = errors.Join(err, derr)
		}
	}
	s.done()
	return err
}

// done tells the warm pool, if the init came from it, that its run is
// over: the pool may start another.
func (s *started) done() {
	if s.freeSlot != nil {
		s.freeOnce.Do(s.freeSlot)
	}
}

// close releases the parent's ends of the pipes, and the init's pidfd:
// it comes after every kill.
func (s *started) close() {
	s.once.Do(func() {
		for _, f := range []*os.File{s.stdin, s.stdout, s.stderr, s.config, s.status} {
			_ = f.Close()
		}
		if s.haveStreams {
			for _, fd := range s.programStreams {
				_ = unix.Close(fd)
			}
			s.haveStreams = false
		}
		// After every kill: a reaped init's pidfd still answers, with
		// ESRCH.
		if s.pidfd != nil {
			_ = s.pidfd.Close()
		}
	})
}

// closeStreams releases the parent's ends of the current run's standard
// streams, for a sandbox kept for another run.
func (s *started) closeStreams() {
	for _, f := range []*os.File{s.stdin, s.stdout, s.stderr} {
		_ = f.Close()
	}
}

// streamPipes makes the pipes of a program's stdin, stdout and stderr:
// the parent writes the first and reads the others, the program the
// other way round. On failure nothing is left open.
func streamPipes() (parent, child [3]*os.File, err error) {
	for i := range 3 {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range slices.Concat(parent[:i], child[:i]) {
				_ = f.Close()
			}
			return parent, child, fmt.Errorf("unable to create pipe: %w", err)
		}
		if i == 0 {
			child[i], parent[i] = r, w
		} else {
			child[i], parent[i] = w, r
		}
	}
	return parent, child, nil
}

// newStreams makes the pipes of the next run of a kept sandbox: the
// parent's ends replace the previous run's, the program's are sent with
// the run (sendRun). The parent's ends are read and written through the
// runtime's poller, as os.Pipe makes them; the program's stay bare
// descriptors, in the blocking mode the program gets them in, which
// os.Pipe would make non-blocking and sending them blocking again.
func (s *started) newStreams() (retErr error) {
	var parent [3]*os.File
	var child [3]int
	made := 0
	defer func() {
		if retErr != nil {
			for i := range made {
				_ = parent[i].Close()
				_ = unix.Close(child[i])
			}
		}
	}()
	for i := range 3 {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			return fmt.Errorf("unable to create pipe: %w", err)
		}
		ours, theirs := p[0], p[1]
		if i == 0 {
			ours, theirs = p[1], p[0]
		}
		if err := unix.SetNonblock(ours, true); err != nil {
			_ = unix.Close(p[0])
			_ = unix.Close(p[1])
			return fmt.Errorf("unable to create pipe: %w", err)
		}
		parent[i], child[i] = os.NewFile(uintptr(ours), streamNames[i]), theirs
		made++
	}
	s.stdin, s.stdout, s.stderr = parent[0], parent[1], parent[2]
	s.programStreams = child
	s.haveStreams = true
	return nil
}

var streamNames = [3]string{"stdin", "stdout", "stderr"}

// sendRun gives a kept sandbox its next run: the second phase, with the
// program's ends of the pipes newStreams made on its first byte, and
// tree, the detached mount of the run's host workspace, if not nil.
func (s *started) sendRun(phase []byte, tree *os.File) error {
	if !s.haveStreams {
		return errors.New("no streams for the run")
	}
	child := s.programStreams
	s.haveStreams = false
	defer func() {
		for _, fd := range child {
			_ = unix.Close(fd)
		}
	}()
	if tree != nil {
		return s.sendFDs(phase, child[0], child[1], child[2], int(tree.Fd()))
	}
	return s.sendFDs(phase, child[:]...)
}

// receiveWorkspace takes the run's workspace that the init sent over the
// config socket (OP_SEND_WORKSPACE), without waiting: nil, nil when
// nothing came.
func (s *started) receiveWorkspace() (*os.File, error) {
	raw, err := s.config.SyscallConn()
	if err != nil {
		return nil, err
	}
	var buf [1]byte
	oob := make([]byte, unix.CmsgSpace(4))
	var n, oobn, flags int
	var rerr error
	if err := raw.Read(func(fd uintptr) bool {
		n, oobn, flags, _, rerr = unix.Recvmsg(int(fd), buf[:], oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
		return true
	}); err != nil {
		return nil, err
	}
	if errors.Is(rerr, unix.EAGAIN) || (rerr == nil && n == 0 && oobn == 0) {
		return nil, nil
	}
	if rerr != nil {
		return nil, rerr
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for i := range msgs {
			if got, err := unix.ParseUnixRights(&msgs[i]); err == nil {
				fds = append(fds, got...)
			}
		}
	}
	if n != 1 || buf[0] != 'W' || len(fds) != 1 || flags&unix.MSG_CTRUNC != 0 {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
		return nil, fmt.Errorf("malformed workspace message from the sandbox init (%d bytes, %d descriptors)", n, len(fds))
	}
	return os.NewFile(uintptr(fds[0]), sandbox.WorkspaceDir), nil
}

// sendWith sends a frame over the config socket with the descriptors of
// files as SCM_RIGHTS on its first byte; the caller keeps files open
// until it returns.
func (s *started) sendWith(phase []byte, files ...*os.File) error {
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	return s.sendFDs(phase, fds...)
}

// sendFDs is sendWith for bare descriptors.
func (s *started) sendFDs(phase []byte, fds ...int) error {
	raw, err := s.config.SyscallConn()
	if err != nil {
		return err
	}
	rights := unix.UnixRights(fds...)
	var sent int
	var sendErr error
	if err := raw.Write(func(fd uintptr) bool {
		sent, sendErr = unix.SendmsgN(int(fd), phase, rights, nil, 0)
		return sendErr != unix.EAGAIN
	}); err != nil {
		return err
	}
	if sendErr != nil {
		return sendErr
	}
	// A blocking stream socket takes everything unless a signal came in
	// the middle; the descriptors went with the first byte.
	if sent < len(phase) {
		_, err = s.config.Write(phase[sent:])
	}
	return err
}

// readyWait bounds the wait for a kept sandbox's init to say it is ready
// for another run: it has had the time the previous result took to go
// out, and needs a fraction of a millisecond.
const readyWait = 5 * time.Second

// errNotReady is readied's error for a kept sandbox whose init ended
// instead of making itself ready: its run left something in the network
// namespace, or a scratch mount could not be made anew.
var errNotReady = errors.New("the kept sandbox ended instead of making itself ready for another run")

// readied waits for a kept sandbox's init to say that it is ready for
// another run ("R"): it checks the network namespace and makes the
// scratch mounts anew after its report, while the result goes out.
func (s *started) readied() error {
	if err := s.status.SetReadDeadline(time.Now().Add(readyWait)); err != nil {
		return err
	}
	line, err := s.readReport()
	if derr := s.status.SetReadDeadline(time.Time{}); err == nil {
		err = derr
	}
	switch {
	case errors.Is(err, io.EOF) && len(line) == 0:
		return errNotReady
	case err != nil:
		return fmt.Errorf("a kept sandbox did not say it was ready: %w", err)
	case string(line) != "R\n":
		return fmt.Errorf("a kept sandbox said %q, not that it was ready", line)
	}
	return nil
}

// awaitReady reads, in the background, a kept sandbox's answer to
// whether it is ready for another run (readied), so that its series can
// tell, without waiting, which of its sandboxes are (answered). The read
// ends with the answer, the init's end, readyWait or the sandbox's
// release, which closes the pipe.
func (s *started) awaitReady() {
	done := make(chan struct{})
	s.readyDone = done
	go func() {
		s.readyErr = s.readied()
		close(done)
	}()
}

// answered reports whether a kept sandbox's init answered whether it is
// ready for another run, and if so the answer (nil: it is).
func (s *started) answered() (bool, error) {
	select {
	case <-s.readyDone:
		return true, s.readyErr
	default:
		return false, nil
	}
}

// whenReady waits for a kept sandbox's answer to whether it is ready for
// another run (nil: it is).
func (s *started) whenReady() error {
	<-s.readyDone
	return s.readyErr
}

// alive reports whether the init still waits for its setup.
func (s *started) alive() bool {
	select {
	case st := <-s.waited:
		s.waited <- st
		return false
	default:
		return true
	}
}

func (b *Backend) sysProcAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{
		Cloneflags: unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
			unix.CLONE_NEWIPC | unix.CLONE_NEWUTS,
		Setsid:    true,
		Pdeathsig: syscall.SIGKILL,
		// The init starts as a host uid that is not mapped in its
		// namespace, so exec would clear the capabilities it holds
		// there; these carry over the ones the setup needs. They are
		// capabilities over the new namespaces only, and the program's
		// process drops every one of them.
		AmbientCaps: initCaps,
	}
	if b.privileged {
		ids := []syscall.SysProcIDMap{
			{ContainerID: 0, HostID: b.hostBase, Size: 1},
			{ContainerID: sandboxUID, HostID: b.hostBase + sandboxUID, Size: 1},
		}
		attr.UidMappings, attr.GidMappings = ids, ids
		attr.GidMappingsEnableSetgroups = true
	} else {
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
	}
	return attr
}

// firstPhaseMemory is the least memory a sandbox is started with, before
// its run's limit is set.
const firstPhaseMemory = 64 * sandbox.MiB

// refillDelay is how long a refill waits once a run has freed its slot.
const refillDelay = 3 * time.Millisecond

// backgroundNice is the nice value of sandboxes started ahead of need.
const backgroundNice = 19

// priorityRestorable reports whether this process can give a thread it
// lowered to backgroundNice its normal priority back. Root of the host
// can (CAP_SYS_NICE); root of a user namespace of its own (a Kubernetes
// pod with hostUsers: false) cannot, as the kernel honours CAP_SYS_NICE
// only in the initial user namespace, and nor can anyone whose
// RLIMIT_NICE forbids it. It tries on a thread of its own, which ends
// with the try.
func priorityRestorable() bool {
	ok := make(chan bool)
	go func() {
		// Never unlocked: the thread, whatever its priority now, ends
		// with this goroutine.
		runtime.LockOSThread()
		ok <- lowerAndRestore()
	}()
	return <-ok
}

// lowerAndRestore lowers the calling thread to backgroundNice and gives it
// the normal priority back, and reports whether both were allowed.
func lowerAndRestore() bool {
	tid := unix.Gettid()
	return unix.Setpriority(unix.PRIO_PROCESS, tid, backgroundNice) == nil &&
		unix.Setpriority(unix.PRIO_PROCESS, tid, 0) == nil
}

// warmPool keeps sandbox inits started ahead of need, so that a run only
// pays for its setup and its program. Every init is fresh and serves one
// run; none is ever reused.
type warmPool struct {
	// slots holds a token for every init started and not yet taken, so
	// that no more than its capacity wait at once.
	slots chan struct{}
	ready chan *started
	quit  chan struct{}
	done  chan struct{}
	// starters are the refill goroutines; done closes once they end.
	starters sync.WaitGroup
	// mu orders a run putting back an init it could not use against
	// Close emptying the pool for good (closed).
	mu     sync.Mutex
	closed bool
}

func (b *Backend) startPool(size int) {
	p := &warmPool{
		slots: make(chan struct{}, size),
		ready: make(chan *started, size),
		quit:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	b.pool = p
	// One starter per slot: starting a sandbox is mostly waiting for the
	// kernel (a new network namespace above all), so they overlap well.
	for range size {
		p.starters.Go(func() { b.refill(p) })
	}
	go func() {
		p.starters.Wait()
		close(p.done)
	}()
}

// refill keeps one slot of the pool filled until the pool is closed.
//
// Starting a sandbox costs a few milliseconds of CPU (the kernel creating
// namespaces, above all a network namespace, then the first phase), and a
// refill starts the moment a run takes a sandbox: on a machine with few
// cores it would compete with that run. Where the priority can be given
// back (b.background), refills run at the lowest priority instead, on a
// thread of their own whose priority the init inherits, and take gives
// the init back the normal priority.
func (b *Backend) refill(p *warmPool) {
	background := false
	if b.background.Load() {
		// The inits this thread starts die with it (Pdeathsig): it must
		// outlive the pool, so it is given back, at the normal priority,
		// rather than left to end with the goroutine.
		runtime.LockOSThread()
		tid := unix.Gettid()
		background = unix.Setpriority(unix.PRIO_PROCESS, tid, backgroundNice) == nil
		defer func() {
			if unix.Setpriority(unix.PRIO_PROCESS, tid, 0) == nil {
				runtime.UnlockOSThread()
			}
		}()
	}
	delay := 10 * time.Millisecond
	for {
		if background && !b.background.Load() {
			// A sandbox's priority could not be restored (foreground):
			// this thread cannot get its own back either. Another
			// starter, at the normal priority, takes over; this thread
			// ends with the goroutine, and the sandboxes it started
			// with it (Pdeathsig), which take then finds dead.
			p.starters.Go(func() { b.refill(p) })
			return
		}
		select {
		case p.slots <- struct{}{}:
		case <-p.quit:
			return
		}
		// Not at once: the run whose end freed the slot has its result
		// still to deliver (encoded, written, read by the client), and
		// a refill at that moment delays it (by about 0.4 ms at p50 on
		// 2 cores, measured with mcpbench).
		select {
		case <-time.After(refillDelay):
		case <-p.quit:
			<-p.slots
			return
		}
		s, err := b.spawn(nil, background)
		if err != nil {
			<-p.slots
			b.log.Warn("unable to start a sandbox ahead of need", "error", err)
			select {
			case <-time.After(delay):
				delay = min(2*delay, 5*time.Second)
				continue
			case <-p.quit:
				return
			}
		}
		delay = 10 * time.Millisecond
		s.background = background
		p.ready <- s // never blocks: slots bounds what is in ready
	}
}

// take returns a started init limited for a run that binds sources: a warm
// one when there is one that can reach them, else a new one.
func (b *Backend) take(lim sandbox.Limits, sources []string, workspace string) (*started, error) {
	return b.takeFrom(lim, sources, workspace, false)
}

// takeWarm is take, but returns nil, without starting a sandbox, when no
// warm one suits the run.
func (b *Backend) takeWarm(lim sandbox.Limits, sources []string, workspace string) (*started, error) {
	return b.takeFrom(lim, sources, workspace, true)
}

func (b *Backend) takeFrom(lim sandbox.Limits, sources []string, workspace string, warmOnly bool) (*started, error) {
	b.learn(sources)
	need := sources
	if workspace != "" {
		need = append(slices.Clip(sources), workspace)
	}
	var s *started
	var err error
	if workspace != "" && mountRoot(workspace) {
		// A workspace to bind (one that could not be sent attached,
		// see hostWorkspace) mounted after a warm sandbox copied the
		// host's mounts is not in that copy: only a new sandbox sees
		// it.
		if warmOnly {
			return nil, nil
		}
		s, err = b.coldStart(need)
	} else if s = b.warmReady(need); s == nil && !warmOnly {
		s, err = b.coldStart(need)
	}
	if err != nil || s == nil {
		return nil, err
	}
	if s.background {
		if s, err = b.foreground(s, need); err != nil {
			return nil, err
		}
	}
	b.recent.Store(&lim)
	want := cgroupLimits(lim)
	if s.group != nil && s.limits != want {
		if err := s.group.Update(want); err != nil {
			b.discardLogged(s, "a sandbox whose limits could not be set")
			return nil, fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
		}
		s.limits = want
	}
	return s, nil
}

// foreground gives a sandbox started ahead of need, at the lowest
// priority, the normal priority and CPU weight back. Where the kernel
// refuses the priority all the same (priorityRestorable said it would
// not), the run gets a new sandbox instead, and later ones start at the
// normal priority: a refusal never fails the run.
func (b *Backend) foreground(s *started, need []string) (*started, error) {
	if err := unix.Setpriority(unix.PRIO_PROCESS, s.proc.Pid, 0); err != nil {
		if b.background.Swap(false) {
			b.log.Warn("unable to give a sandbox started ahead of need its priority back; such sandboxes start at the normal priority from now on",
				"event", "background_priority_refused", "backend", b.Name(), "error", err)
		}
		b.discardLogged(s, "a sandbox left at the lowest priority")
		return b.coldStart(need)
	}
	if s.group != nil {
		if err := s.group.SetBackground(false); err != nil {
			b.discardLogged(s, "a sandbox whose CPU weight could not be restored")
			return nil, fmt.Errorf("%w: %w", sandbox.ErrSetup, err)
		}
	}
	return s, nil
}

// recentLimits are the limits of the latest run, or the defaults before the
// first.
func (b *Backend) recentLimits() sandbox.Limits {
	if l := b.recent.Load(); l != nil {
		return *l
	}
	return sandbox.DefaultLimits
}

// cgroupLimits are the cgroup limits of a run limited by lim.
func cgroupLimits(lim sandbox.Limits) cgroup.Limits {
	return cgroup.Limits{
		Memory:    lim.Memory,
		Processes: lim.Processes + 2, // the init and the run's init
		CPUs:      lim.CPUs,
	}
}

// warmReady returns a warm sandbox that reaches sources, or nil.
func (b *Backend) warmReady(sources []string) *started {
	if b.pool != nil {
		for {
			select {
			case s := <-b.pool.ready:
				if !s.alive() {
					b.discardLogged(s, "a sandbox started ahead of need died")
					<-b.pool.slots
					continue
				}
				if s.reaches(sources) {
					// Its slot stays taken until its run is over, so
					// that the refill does not compete with the run.
					s.freeSlot = func() { <-b.pool.slots }
					return s
				}
				// Keep it, with its slot, for a run it suits; this one
				// needs a source only a new init can open.
				b.pool.mu.Lock()
				if b.pool.closed {
					b.discardLogged(s, "a sandbox started ahead of need, once they were stopped")
					<-b.pool.slots
				} else {
					b.pool.ready <- s // never blocks: it was just taken out
				}
				b.pool.mu.Unlock()
				return nil
			default:
			}
			break
		}
	}
	return nil
}

// coldStart starts a sandbox for a run that none ready suits.
func (b *Backend) coldStart(sources []string) (*started, error) {
	b.coldStarts.Add(1)
	return b.spawn(sources, false)
}

// mountRoot reports whether path is the root of a mount; when that cannot
// be told, it takes the safe road and says it is.
func mountRoot(path string) bool {
	is, err := mountpoint.Is(path)
	return is || err != nil
}

// reaches reports whether the init can open every source: it opened it in
// its first phase, or anyone may reach it.
func (s *started) reaches(sources []string) bool {
	for _, src := range sources {
		if !s.opened[src] && !traversable(src) {
			return false
		}
	}
	return true
}

// Close stops the inits started ahead of need, releases the sandboxes
// series keep, and waits for the teardown of finished runs. Runs under
// way are not affected. It returns the errors of teardowns that failed
// (each also logged) since the last call. It is safe to call more than
// once.
func (b *Backend) Close() error {
	b.closeSeries()
	b.closeOnce.Do(func() {
		if b.pool == nil {
			return
		}
		close(b.pool.quit)
		<-b.pool.done
		b.pool.mu.Lock()
		defer b.pool.mu.Unlock()
		b.pool.closed = true
		for {
			select {
			case s := <-b.pool.ready:
				if err := s.discard(); err != nil {
					b.tornDown(fmt.Errorf("unable to stop a sandbox started ahead of need: %w", err))
				}
				continue
			default:
			}
			return
		}
	})
	b.teardown.Wait()
	b.teardownMu.Lock()
	defer b.teardownMu.Unlock()
	err := errors.Join(b.teardownErrs...)
	b.teardownErrs = nil
	return err
}

// tornDown logs an error of a sandbox's teardown, which happens after the
// run's result is out or in the background, and keeps it for Close to
// return.
func (b *Backend) tornDown(err error) {
	b.log.Error("a sandbox could not be torn down", "event", "teardown_failed", "backend", b.Name(), "error", err)
	b.teardownMu.Lock()
	defer b.teardownMu.Unlock()
	if len(b.teardownErrs) < maxTeardownErrs {
		b.teardownErrs = append(b.teardownErrs, err)
	}
}

// maxTeardownErrs bounds the teardown errors Close returns; every one is
// logged.
const maxTeardownErrs = 16

// discardLogged discards s, logging and keeping for Close (tornDown) an
// error: the caller, which wanted another sandbox, goes on without it.
func (b *Backend) discardLogged(s *started, why string) {
	if err := s.discard(); err != nil {
		b.tornDown(fmt.Errorf("%s: %w", why, err))
	}
}
