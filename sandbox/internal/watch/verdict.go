package watch

import (
	"syscall"
	"time"

	"github.com/coderunner/coderunner/sandbox"
)

// Reason is why the backend stopped a run, in order of precedence.
type Reason int

// The reasons a run is stopped.
const (
	ReasonNone Reason = iota
	ReasonOutput
	ReasonWall
	ReasonCPU
	ReasonCancel
)

// maxSignal is the highest signal number (SIGRTMAX on Linux).
const maxSignal = 64

// DecodeExit turns an exit code that bwrap or the container runtime
// reports for the program into an exit code and signal. Both report a
// program killed by signal N as 128+N, so an exit code in 129..192 is read
// as that signal: a program that calls exit(137) is reported as killed by
// SIGKILL, as a shell would.
func DecodeExit(code int) (exit int, sig syscall.Signal) {
	if code > 128 && code <= 128+maxSignal {
		return -1, syscall.Signal(code - 128)
	}
	return code, 0
}

// Decide sets res.Status (and res.TimeLimit) from why the run was stopped
// and what the program did; res's exit code, signal, CPU time and OOM flag
// must be filled in. It is the one place where every backend's verdict is
// made, in this order: a limit the backend enforced first, then the rlimit
// backstop, then the OOM killer, then how the program ended. lost, when
// not nil, says how the program ended is not known (it reads as killed):
// unless a limit explains that, the run fails with lost's error.
func Decide(res *sandbox.Result, reason Reason, cpuLimit time.Duration, lost func() error) error {
	switch {
	case reason == ReasonOutput:
		res.Status = sandbox.StatusOutputLimit
	case reason == ReasonWall:
		res.Status, res.TimeLimit = sandbox.StatusTimeLimit, "wall"
	case reason == ReasonCPU:
		res.Status, res.TimeLimit = sandbox.StatusTimeLimit, "cpu"
	case res.Signal == syscall.SIGXCPU || (res.Signal == syscall.SIGKILL && res.CPUTime >= cpuLimit):
		// The rlimit backstop fired before the monitor did.
		res.Status, res.TimeLimit = sandbox.StatusTimeLimit, "cpu"
	case res.MemoryExceeded && res.Signal == syscall.SIGKILL:
		res.Status = sandbox.StatusMemoryLimit
	case lost != nil:
		return lost()
	case res.Signal != 0:
		res.Status = sandbox.StatusSignaled
	case res.ExitCode != 0:
		res.Status = sandbox.StatusNonzeroExit
	default:
		res.Status = sandbox.StatusOK
	}
	return nil
}

// Feed copies the program's input into w and closes w. A program that
// exits without reading all of it ends the copy with EPIPE.
func Feed(w interface {
	Write([]byte) (int, error)
	Close() error
}, src interface{ Read([]byte) (int, error) }) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	_ = w.Close()
}
