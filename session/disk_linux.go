package session

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/capws"
	"github.com/coderunner/coderunner/internal/mountpoint"
)

// dirFlags open a directory without following a link at its name.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// ensureDir creates dir and checks that only this user controls it: a
// directory another user could write to, or a link planted in its place,
// would let them swap a workspace for a path of their choosing.
func ensureDir(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("sessions directory %q is not an absolute path", dir)
	}
	if err := os.MkdirAll(dir, 0o711); err != nil { //nolint:forbidigo // the configured sessions directory, checked next
		return fmt.Errorf("unable to create the sessions directory: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("unable to inspect the sessions directory: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return fmt.Errorf("sessions directory %s must be a directory owned by uid %d that no one else can write to", dir, os.Geteuid())
	}
	return nil
}

// lockInstance creates and locks the lock file of the instance name. The
// file is locked under a temporary name and only then renamed, so that a
// Store cleaning stale instances never sees an instance lock it could
// take before its owner does.
func lockInstance(dir, name string) (lock *os.File, path string, err error) {
	tmp := filepath.Join(dir, ".tmp-"+name)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600) //nolint:forbidigo // a lock file in the sessions directory, O_NOFOLLOW
	if err != nil {
		return nil, "", fmt.Errorf("unable to create the sessions lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = os.Remove(tmp) //nolint:forbidigo // a lock file in the sessions directory
		_ = f.Close()
		return nil, "", fmt.Errorf("unable to lock the sessions directory: %w", err)
	}
	final := filepath.Join(dir, name+".lock")
	if err := os.Rename(tmp, final); err != nil { //nolint:forbidigo // lock files in the sessions directory
		_ = os.Remove(tmp) //nolint:forbidigo // a lock file in the sessions directory
		_ = f.Close()
		return nil, "", fmt.Errorf("unable to create the sessions lock: %w", err)
	}
	return f, final, nil
}

// cleanStale removes what Stores of dead processes left under dir: their
// tmpfs mounts, their workspaces and their lock files. An instance whose
// lock a live Store holds is left alone.
func cleanStale(dir string, log *slog.Logger) {
	entries, err := os.ReadDir(dir) //nolint:forbidigo // the sessions directory, listed by name only
	if err != nil {
		log.Warn("unable to list the sessions directory", "path", dir, "error", err)
		return
	}
	names := make(map[string]bool, len(entries))
	for _, e := range entries {
		names[e.Name()] = true
	}
	for _, e := range entries {
		name := e.Name()
		var inst, lockName string
		switch {
		case strings.HasPrefix(name, "i-") && strings.HasSuffix(name, ".lock"):
			inst, lockName = strings.TrimSuffix(name, ".lock"), name
		case strings.HasPrefix(name, "i-") && !names[name+".lock"]:
			// A workspace whose lock is gone: its Store died while
			// removing it.
			inst = name
		case strings.HasPrefix(name, ".tmp-i-"):
			lockName = name
		default:
			continue
		}
		var lock *os.File
		if lockName != "" {
			lock = tryLock(filepath.Join(dir, lockName))
			if lock == nil {
				continue // held by a live Store
			}
		}
		if inst != "" {
			p := filepath.Join(dir, inst)
			unmountBelow(p, log)
			if err := removeTree(p); err != nil && !errors.Is(err, unix.ENOENT) {
				log.Warn("unable to remove stale session workspaces", "path", p, "error", err)
			}
		}
		if lock != nil {
			_ = os.Remove(lock.Name()) //nolint:forbidigo // a lock file in the sessions directory
			_ = lock.Close()
		}
	}
}

// tryLock opens and locks path, or returns nil when another process holds
// it or it cannot be opened.
func tryLock(path string) *os.File {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0) //nolint:forbidigo // a lock file in the sessions directory, O_NOFOLLOW
	if err != nil {
		return nil
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		return nil
	}
	return f
}

// unmountBelow lazily unmounts every mount at or below dir, deepest first.
func unmountBelow(dir string, log *slog.Logger) {
	points, err := mountpoint.Beneath(dir)
	if err != nil {
		return
	}
	for _, p := range points {
		if err := unmount(p); err != nil {
			log.Warn("unable to unmount a stale session workspace", "path", p, "error", err)
		}
	}
}

// mountTmpfs mounts a tmpfs of size bytes and inodes files on dir. No
// device files, no set-uid; executables are allowed, since compiled
// programs are built into the workspace and run from it.
func mountTmpfs(dir string, size int64, inodes int) error {
	err := capws.Mount(dir, size, inodes)
	if errors.Is(err, capws.ErrUnsupported) {
		// Without root a session's disk cap cannot hold: sessions are
		// refused rather than given an uncapped directory.
		return fmt.Errorf("%w without root: a session keeps its files between runs in a workspace capped in size and files, a tmpfs that only root (CAP_SYS_ADMIN) can mount on the host; run coderunner as root to use sessions (%w)", ErrDisabled, err)
	}
	return err
}

// isMountPoint reports whether dir is the root of a mount. dir itself is
// never followed if it is a link.
func isMountPoint(dir string) bool {
	is, _ := mountpoint.Is(dir)
	return is
}

// unmount detaches the mount at dir; the kernel frees the tmpfs when the
// last sandbox using it is gone. UMOUNT_NOFOLLOW: dir is never a link to
// follow.
func unmount(dir string) error {
	err := unix.Unmount(dir, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unable to unmount %s: %w", dir, err)
	}
	return nil
}

// fsUsage is the space used on the filesystem mounted at dir.
func fsUsage(dir string) (int64, error) {
	fd, err := unix.Open(dir, dirFlags, 0)
	if err != nil {
		return 0, fmt.Errorf("unable to open the workspace: %w", err)
	}
	defer unix.Close(fd)
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return 0, fmt.Errorf("unable to measure the workspace: %w", err)
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize, nil
}

// errTooLarge: a tree has more entries or depth than the walk visits.
var errTooLarge = errors.New("workspace holds too many files or is nested too deep")

// treeUsage sums the allocated size of everything under dir, counting each
// inode once, visiting at most maxEntries entries and maxDepth levels.
// Every step is relative to an open directory and never follows a link.
func treeUsage(dir string, maxEntries, maxDepth int) (int64, error) {
	fd, err := unix.Open(dir, dirFlags, 0)
	if err != nil {
		return 0, fmt.Errorf("unable to open the workspace: %w", err)
	}
	w := &walker{left: maxEntries, maxDepth: maxDepth, seen: make(map[[2]uint64]bool)}
	err = w.dir(fd, 0)
	return w.total, err
}

type walker struct {
	total    int64
	left     int
	maxDepth int
	seen     map[[2]uint64]bool
}

// dir walks the directory fd, which it closes.
func (w *walker) dir(fd, depth int) error {
	f := os.NewFile(uintptr(fd), "")
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	w.add(&st)
	for {
		names, err := f.Readdirnames(256)
		for _, name := range names {
			if w.left--; w.left < 0 {
				return errTooLarge
			}
			if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if errors.Is(err, unix.ENOENT) {
					continue
				}
				return err
			}
			if st.Mode&unix.S_IFMT != unix.S_IFDIR {
				w.add(&st)
				continue
			}
			if depth+1 > w.maxDepth {
				return errTooLarge
			}
			sub, err := unix.Openat(fd, name, dirFlags, 0)
			if err != nil {
				return err
			}
			if err := w.dir(sub, depth+1); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) || len(names) == 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (w *walker) add(st *unix.Stat_t) {
	key := [2]uint64{st.Dev, st.Ino}
	if w.seen[key] {
		return
	}
	w.seen[key] = true
	w.total += st.Blocks * 512
}

// removeDepth is the depth from which removeTree moves a subtree up to the
// top before descending into it, so that it never holds more than this
// many directory descriptors open.
const removeDepth = 64

// removeTree removes path and everything below it without following any
// link: each name is unlinked relative to an open directory descriptor,
// and directories are opened with O_NOFOLLOW. A directory nested deeper
// than removeDepth is renamed into path's parent and removed from there.
func removeTree(path string) error {
	parent, err := unix.Open(filepath.Dir(path), dirFlags, 0)
	if err != nil {
		return fmt.Errorf("unable to open %s: %w", filepath.Dir(path), err)
	}
	defer unix.Close(parent)
	r := &remover{top: parent, prefix: ".rm-" + filepath.Base(path) + "-"}
	err = r.remove(parent, filepath.Base(path), 0)
	for len(r.pending) > 0 && err == nil {
		name := r.pending[0]
		r.pending = r.pending[1:]
		err = r.remove(parent, name, 0)
	}
	return err
}

type remover struct {
	top     int
	prefix  string
	seq     int
	pending []string
}

// remove removes name in dirfd.
func (r *remover) remove(dirfd int, name string, depth int) error {
	err := unix.Unlinkat(dirfd, name, 0)
	switch {
	case err == nil, errors.Is(err, unix.ENOENT):
		return nil
	case !errors.Is(err, unix.EISDIR):
		return fmt.Errorf("unable to remove %s: %w", name, err)
	}
	if depth >= removeDepth {
		r.seq++
		moved := fmt.Sprintf("%s%d", r.prefix, r.seq)
		if err := unix.Renameat(dirfd, name, r.top, moved); err != nil {
			return fmt.Errorf("unable to move a deep directory up: %w", err)
		}
		r.pending = append(r.pending, moved)
		return nil
	}
	fd, err := openDirForRemoval(dirfd, name)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	for {
		// Read a batch, remove it and read again from the start: reading
		// on while entries are unlinked may skip some.
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		names, err := f.Readdirnames(1024)
		if len(names) == 0 {
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			break
		}
		for _, n := range names {
			if err := r.remove(fd, n, depth+1); err != nil {
				return err
			}
		}
	}
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unable to remove directory %s: %w", name, err)
	}
	return nil
}

// openDirForRemoval opens the directory name in dirfd and makes it
// writable by its owner, so that a program that made a directory
// read-only or unreadable cannot keep its files on the host. The mode is
// changed through the descriptor, never through a path.
func openDirForRemoval(dirfd int, name string) (int, error) {
	fd, err := unix.Openat(dirfd, name, dirFlags, 0)
	if errors.Is(err, unix.EACCES) {
		// Unreadable directory: change its mode through an O_PATH
		// descriptor (which opening cannot refuse), via /proc/self/fd,
		// which names that very inode.
		pfd, perr := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if perr != nil {
			return -1, fmt.Errorf("unable to open directory %s: %w", name, perr)
		}
		perr = unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", pfd), 0o700)
		_ = unix.Close(pfd)
		if perr != nil {
			return -1, fmt.Errorf("unable to open directory %s: %w", name, perr)
		}
		fd, err = unix.Openat(dirfd, name, dirFlags, 0)
	}
	if err != nil {
		return -1, fmt.Errorf("unable to open directory %s: %w", name, err)
	}
	if err := unix.Fchmod(fd, 0o700); err != nil {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("unable to make directory %s writable: %w", name, err)
	}
	return fd, nil
}
