package native

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// deadOwner reports whether name is one of the cgroups this backend makes
// ("run-PID-N" for runs and warm sandboxes, "probe-PID") and its process
// is gone: such a group was left by a process that was killed.
func deadOwner(name string) bool {
	rest, ok := strings.CutPrefix(name, "run-")
	if !ok {
		if rest, ok = strings.CutPrefix(name, "probe-"); !ok {
			return false
		}
	}
	pidText, _, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return unix.Kill(pid, 0) == unix.ESRCH
}
