package bwrap

import (
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/mountpoint"
)

// staleRunAge is the least age of a run directory removed at start: a
// process in another PID namespace names its directories with PIDs that
// mean nothing here, and a directory of its is new for a moment after it
// made it.
const staleRunAge = 10 * time.Second

// runPrefix starts the name of a run's directory in the state directory;
// the PID of the process that made it follows ("run-PID-…").
const runPrefix = "run-"

// sweepRuns removes the run directories in dir that processes which died
// left behind (a server killed in the middle of runs): their mounts (the
// scratch tmpfs, the staged sources, bound from the host), deepest first,
// then, once nothing is mounted beneath, the directories. It returns how
// many it removed.
func sweepRuns(dir string, log *slog.Logger) int {
	ents, err := os.ReadDir(dir) //nolint:forbidigo // the backend's state directory, root's, listed by name only
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), runPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || unix.Kill(pid, 0) != unix.ESRCH {
			continue
		}
		run := filepath.Join(dir, e.Name())
		var st unix.Stat_t
		if err := unix.Lstat(run, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() ||
			time.Since(time.Unix(st.Mtim.Unix())) < staleRunAge {
			continue
		}
		if err := unmountBeneath(run); err != nil {
			log.Warn("a dead process's run directory is left in place: a mount in it stays", "path", run, "error", err)
			continue
		}
		if err := os.RemoveAll(run); err != nil { //nolint:forbidigo // root's run directory, nothing mounted beneath: RemoveAll follows no link
			log.Warn("unable to remove a dead process's run directory", "path", run, "error", err)
			continue
		}
		n++
	}
	return n
}

// unmountBeneath unmounts every mount at or beneath dir, deepest first,
// and fails unless none is left.
func unmountBeneath(dir string) error {
	for range 3 {
		points, err := mountpoint.Beneath(dir)
		if err != nil {
			return err
		}
		if len(points) == 0 {
			return nil
		}
		for _, p := range points {
			_ = unix.Unmount(p, unix.MNT_DETACH)
		}
	}
	points, err := mountpoint.Beneath(dir)
	if err == nil && len(points) > 0 {
		err = &os.PathError{Op: "unmount", Path: points[0], Err: unix.EBUSY}
	}
	return err
}
