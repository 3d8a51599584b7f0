package native

import (
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// staleCgroupAge is the least age of a group removed at start: a process
// in another PID namespace names its groups with PIDs that mean nothing
// here, and a group of its is empty for a moment after it made it.
const staleCgroupAge = 10 * time.Second

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
