package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/coderunner/coderunner/internal/pid1"
)

const initAbout = `Run COMMAND as the child of a minimal init, for the first process of a
container (the coderunner/executor image's entrypoint is
"coderunner init -- coderunner"): it forwards SIGTERM, SIGINT, SIGHUP,
SIGQUIT, SIGUSR1 and SIGUSR2 to COMMAND, reaps every process left to it
(the sandboxes' orphans), and exits with COMMAND's status: its exit code,
or 128+N when signal N killed it (serve exits 143 after a SIGTERM).
Outside PID 1 it reaps as the subreaper of COMMAND's descendants.

A coderunner command started as PID 1 without it runs under it anyway: it
starts itself again as the init's child. It exits 127 when COMMAND does
not exist and 126 when it cannot be started.

Flags:
  --writable-cgroup
    	before starting COMMAND, remount read-write the cgroup file systems
    	the container runtime mounted read-only under /sys/fs/cgroup, so that
    	each sandboxed run gets a cgroup of its own (memory, processes, CPU)
    	beneath the container's. Needs CAP_SYS_ADMIN; run the container with
    	--cgroupns=private, so that the mounts show nothing above its own
    	cgroup. The container can then change its own cgroup's limits.
    	Without it (or where it fails, which stops the init with status 126)
    	the runs are limited by rlimits only (backend.allow_rlimits_only).`

// initCmd runs pid1 over the command in args. It takes no common flags:
// every argument after the optional "--" is the command's.
func (a *App) initCmd(_ context.Context, args []string) int {
	writableCgroup := false
flags:
	for len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help":
			fmt.Fprintf(a.Stdout, "Usage: coderunner init [--writable-cgroup] [--] COMMAND [ARGS...]\n\n%s\n", initAbout)
			return ExitOK
		case "--writable-cgroup", "-writable-cgroup":
			writableCgroup = true
			args = args[1:]
		case "--":
			args = args[1:]
			break flags
		default:
			if strings.HasPrefix(args[0], "-") {
				return a.fail("init", "unknown flag %s (see coderunner init -h)", args[0])
			}
			break flags
		}
	}
	if len(args) == 0 {
		return a.fail("init", "no command given (coderunner init -- COMMAND [ARGS...])")
	}
	if writableCgroup {
		if err := pid1.WritableCgroups(); err != nil {
			fmt.Fprintf(a.Stderr, "coderunner init: --writable-cgroup: %v\n", err)
			return pid1.ExitCannotRun
		}
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		fmt.Fprintf(a.Stderr, "coderunner init: %v\n", err)
		return pid1.ExitNotFound
	}
	return a.runInit(path, args)
}

// runInit runs path with argv args under the init, on the process's own
// streams and environment.
func (a *App) runInit(path string, args []string) int {
	status, err := pid1.Run(pid1.Command{
		Path:  path,
		Args:  args,
		Env:   os.Environ(),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
	})
	if err != nil {
		fmt.Fprintf(a.Stderr, "coderunner init: %v\n", err)
	}
	return status
}

// asInit runs args (a command line of this binary) as the child of an
// init, for a coderunner started as PID 1 without one: the server's
// sandboxes leave orphans to PID 1, and only a process of its own can reap
// them without taking the statuses os/exec waits for.
func (a *App) asInit(args []string) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(a.Stderr, "coderunner: started as PID 1, and unable to find its own executable to run under an init: %v\n", err)
		return ExitFailure
	}
	return a.runInit(self, append([]string{os.Args[0]}, args...))
}
