// Package pid1 is the init of a container whose first process is
// coderunner: it starts one command as its child, forwards the signals a
// container runtime sends (SIGTERM on `docker stop` or a pod's eviction,
// SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) to it, reaps every process
// that ends up its child, and returns the command's exit status.
//
// It is a process of its own, apart from the server: a loop of
// wait4(-1) reaps whatever child ends, so in a process that also waits
// for its own children through os/exec it would steal their statuses.
// Here the command is started with syscall.ForkExec and waited for by the
// same loop, which nothing else in the process shares.
//
// Outside PID 1 the init makes itself the subreaper of its descendants
// (PR_SET_CHILD_SUBREAPER), so orphans come to it as they would to PID 1.
package pid1

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// Forwarded are the signals the init passes on to its command. Every other
// signal that reaches it is left to the Go runtime's defaults, which for
// PID 1 means it is ignored: the kernel delivers to PID 1 only the signals
// it handles.
var Forwarded = []os.Signal{
	syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP,
	syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2,
}

// Exit statuses of the init itself, as a shell gives them.
const (
	// ExitNotFound is returned when the command does not exist.
	ExitNotFound = 127
	// ExitCannotRun is returned when the command exists but cannot start.
	ExitCannotRun = 126
)

// Command is what the init starts.
type Command struct {
	// Path is the executable; Args its argv, Args[0] included.
	Path string
	Args []string
	// Env is the command's environment.
	Env []string
	// Files are the command's fds 0, 1 and 2.
	Files []*os.File
}

// Run starts c, forwards signals to it, reaps every child until c has
// ended, and returns c's exit status: its own exit code, or 128+N when a
// signal N killed it. The error is non-nil only when c could not be started;
// the status then says why (ExitNotFound, ExitCannotRun).
func Run(c Command) (int, error) {
	if os.Getpid() != 1 {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return ExitCannotRun, fmt.Errorf("unable to become a subreaper: %w", err)
		}
	}
	// Every signal is watched before the child exists, so that neither its
	// end nor a SIGTERM sent while it starts is missed.
	sigs := make(chan os.Signal, 32)
	signal.Notify(sigs, append([]os.Signal{syscall.SIGCHLD}, Forwarded...)...)
	defer signal.Stop(sigs)

	pid, err := start(c)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return ExitNotFound, fmt.Errorf("unable to start %s: %w", c.Path, err)
		}
		return ExitCannotRun, fmt.Errorf("unable to start %s: %w", c.Path, err)
	}
	for {
		// A SIGCHLD may have been merged with an earlier one, or come
		// before the child's pid was known: reap after every wake-up.
		if status, done := reap(pid); done {
			return status, nil
		}
		s := <-sigs
		if s == syscall.SIGCHLD {
			continue
		}
		// The child may just have ended: ESRCH is expected then.
		_ = syscall.Kill(pid, s.(syscall.Signal))
	}
}

// start forks and executes c. When the init's stdin is a terminal the
// command gets a process group of its own in the foreground, so that the
// terminal's ^C reaches it once, not also through the init.
func start(c Command) (int, error) {
	files := make([]uintptr, len(c.Files))
	for i, f := range c.Files {
		files[i] = f.Fd()
	}
	attr := &syscall.ProcAttr{Env: c.Env, Files: files, Sys: &syscall.SysProcAttr{}}
	if len(c.Files) > 0 && isTerminal(c.Files[0]) {
		attr.Sys.Setpgid = true
		attr.Sys.Foreground = true
		attr.Sys.Ctty = 0
	}
	return syscall.ForkExec(c.Path, c.Args, attr)
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// reap collects every child that has ended, without blocking. done is
// true once main is among them, with its exit status.
func reap(main int) (status int, done bool) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			// ECHILD: no child at all, which cannot be while main has not
			// been collected; 0: children remain, none has ended.
			return status, done
		}
		if pid == main {
			status, done = ExitStatus(ws), true
		}
	}
}

// ExitStatus is the status a shell reports for ws: the exit code, or
// 128+N for a process killed by signal N.
func ExitStatus(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
