package executor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// instancePrefix names the directory, under the work directory, that
// holds one process's workspaces. The process holds an exclusive flock on
// it while it lives: a directory nobody holds was left by a process that
// died (killed in the middle of runs, say), and the next Check removes it
// with the tmpfs mounted on each of its workspaces.
const instancePrefix = "coderunner-exec-i-"

// claimInstance removes the instances of dead processes, then makes and
// locks this process's own, where its workspaces go from now on.
func (e *Executor) claimInstance() error {
	e.removeStale()
	dir, err := os.MkdirTemp(e.workDir, instancePrefix)
	if err != nil {
		return err
	}
	f, err := os.Open(dir)
	if err == nil {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	if err != nil {
		if f != nil {
			_ = f.Close()
		}
		_ = os.Remove(dir)
		return fmt.Errorf("unable to lock %s: %w", dir, err)
	}
	e.mu.Lock()
	e.instance, e.instanceLock = dir, f
	e.mu.Unlock()
	return nil
}

// removeStale removes the instance directories no live process holds:
// each workspace in them is unmounted (without following a link), then
// the tree is removed (os.RemoveAll follows no link either).
func (e *Executor) removeStale() {
	ents, err := os.ReadDir(e.workDir)
	if err != nil {
		return
	}
	for _, ent := range ents {
		if !ent.IsDir() || !strings.HasPrefix(ent.Name(), instancePrefix) {
			continue
		}
		dir := filepath.Join(e.workDir, ent.Name())
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
			_ = unix.Close(fd) // a live process's
			continue
		}
		ws, _ := os.ReadDir(dir)
		unmounted := 0
		for _, w := range ws {
			if unix.Unmount(filepath.Join(dir, w.Name()), unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW) == nil {
				unmounted++
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			e.log.Warn("unable to remove the workspaces of a process that died", "path", dir, "error", err)
		} else {
			e.log.Info("removed the workspaces of a process that died", "event", "stale_workspaces_removed",
				"path", dir, "workspaces", len(ws), "unmounted", unmounted)
		}
		_ = unix.Close(fd)
	}
}
