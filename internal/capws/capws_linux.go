package capws

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/internal/mountpoint"
)

// MaxInodes is the inode cap of a workspace made with New: the backends'
// own tmpfs mounts have the same.
const MaxInodes = 16384

// maxCheckedInodes is the most inodes Check accepts: a session's
// workspace may be given more files than a run's (DefaultMaxFiles of the
// session package), never an unbounded number.
const maxCheckedInodes = 1 << 20

// ErrUnsupported is wrapped by the errors of New and Mount when this
// process cannot mount a tmpfs (it is not root, or lacks CAP_SYS_ADMIN).
var ErrUnsupported = errors.New("a size-capped workspace needs root (CAP_SYS_ADMIN) to mount a tmpfs")

// ErrUncapped is wrapped by the errors of Check.
var ErrUncapped = errors.New("host workspace is not a size-capped tmpfs")

// Supported reports whether this process may try to mount workspaces.
func Supported() bool { return os.Geteuid() == 0 }

// Dir is a size-capped workspace made by New.
type Dir struct {
	// Path is the directory, the root of its tmpfs.
	Path string

	// host and keeper are set for a workspace the keeper holds
	// (NewKept without root): the directory on the host the tmpfs is
	// mounted on in the keeper's namespace, and the keeper.
	host   string
	keeper *keeper
	// spares, when set, takes the directory back on Remove; removed is
	// set once Remove has run, after which the directory may be another
	// workspace's.
	spares  *Spares
	removed bool
}

// Spares keeps the directories of removed workspaces, unmounted and with
// nothing beneath, for later workspaces of one parent and prefix to be
// mounted on: on a disk file system, making and removing a directory for
// every workspace (a block allocated and freed through the journal) costs
// as much as the mount. Close removes the directories it keeps; those of
// a process that died go to Sweep like its workspaces. Without root there
// is nothing to keep (the keeper mounts its workspaces), and New is
// NewKept's.
type Spares struct {
	parent, prefix string

	mu     sync.Mutex
	dirs   []string
	closed bool
}

// maxSpares bounds the directories a Spares keeps.
const maxSpares = 32

// NewSpares keeps directories for workspaces in parent named prefix, as
// New names them.
func NewSpares(parent, prefix string) *Spares {
	if parent == "" {
		parent = os.TempDir()
	}
	return &Spares{parent: parent, prefix: prefix}
}

// New makes a workspace as NewKept does, on a kept directory when there is
// one; its Remove gives the directory back.
func (s *Spares) New(size int64, inodes int) (*Dir, error) {
	if !Supported() {
		return InKeeper(s.parent, s.prefix, size, inodes)
	}
	dir := s.take()
	if dir == "" {
		d, err := New(s.parent, s.prefix, size, inodes)
		if d != nil {
			d.spares = s
		}
		return d, err
	}
	if err := Mount(dir, size, inodes); err != nil {
		_ = os.Remove(dir) //nolint:forbidigo // a kept directory of this process's, empty and unmounted
		return nil, err
	}
	return &Dir{Path: dir, spares: s}, nil
}

// take returns a kept directory that is still an empty directory of this
// process's user and no mount, or "".
func (s *Spares) take() string {
	for {
		s.mu.Lock()
		if len(s.dirs) == 0 {
			s.mu.Unlock()
			return ""
		}
		dir := s.dirs[len(s.dirs)-1]
		s.dirs = s.dirs[:len(s.dirs)-1]
		s.mu.Unlock()
		if emptyOwnDir(dir) {
			return dir
		}
		_ = os.RemoveAll(dir) //nolint:forbidigo // a kept directory of this process's, unmounted; RemoveAll follows no link
	}
}

// put keeps dir, unmounted, if it is empty and there is room.
func (s *Spares) put(dir string) bool {
	if !emptyOwnDir(dir) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.dirs) >= maxSpares {
		return false
	}
	s.dirs = append(s.dirs, dir)
	return true
}

// Close removes the kept directories; workspaces removed later remove
// their own. It is safe to call more than once.
func (s *Spares) Close() error {
	s.mu.Lock()
	dirs := s.dirs
	s.dirs, s.closed = nil, true
	s.mu.Unlock()
	var errs []error
	for _, dir := range dirs {
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) { //nolint:forbidigo // a kept directory of this process's, empty and unmounted
			errs = append(errs, fmt.Errorf("unable to remove the workspace directory %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// emptyOwnDir reports whether dir (never followed if it is a link) is a
// directory of this process's user that holds nothing and is not a mount.
func emptyOwnDir(dir string) bool {
	if m, err := mountpoint.Is(dir); err != nil || m {
		return false
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || int(st.Uid) != os.Geteuid() {
		return false
	}
	var buf [512]byte
	for {
		n, err := unix.Getdents(fd, buf[:])
		if err != nil {
			return false
		}
		if n == 0 {
			return true
		}
		// ParseDirent leaves out "." and "..".
		if _, _, names := unix.ParseDirent(buf[:n], 1, nil); len(names) > 0 {
			return false
		}
	}
}

// New creates a fresh directory in parent, named prefix, this process's
// id, "-" and a random string, and mounts on it a tmpfs of at most size
// bytes and inodes files (MaxInodes when zero). The caller removes it
// with Remove; Sweep removes those of processes that died first.
func New(parent, prefix string, size int64, inodes int) (*Dir, error) {
	if !Supported() {
		return nil, fmt.Errorf("%w: not running as root", ErrUnsupported)
	}
	if parent == "" {
		parent = os.TempDir()
	}
	dir, err := os.MkdirTemp(parent, prefix+strconv.Itoa(os.Getpid())+"-") //nolint:forbidigo // parent is the host's work directory, not a sandbox's
	if err != nil {
		return nil, fmt.Errorf("unable to create the workspace: %w", err)
	}
	if err := Mount(dir, size, inodes); err != nil {
		_ = os.Remove(dir) //nolint:forbidigo // the directory just made, before any mount or sandbox
		return nil, err
	}
	return &Dir{Path: dir}, nil
}

// Mount mounts a tmpfs of at most size bytes and inodes files (MaxInodes
// when zero) on the existing directory dir, mode 0700, owned by this
// process's user; the backend hands it to the sandbox's user. dir is
// never followed if it is a symbolic link.
func Mount(dir string, size int64, inodes int) error {
	if size <= 0 {
		return fmt.Errorf("workspace size %d must be positive", size)
	}
	if inodes <= 0 {
		inodes = MaxInodes
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("unable to open the workspace %s: %w", dir, err)
	}
	defer unix.Close(fd)
	// Through the descriptor: a link swapped in at dir since it was
	// opened is not followed.
	target := "/proc/self/fd/" + strconv.Itoa(fd)
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0700", size, inodes)
	// The source name is what a sandbox's /proc/self/mountinfo shows of
	// the mount: nothing of the host or of the product.
	if err := unix.Mount("workspace", target, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("%w: mounting a tmpfs on %s: %w", ErrUnsupported, dir, err)
		}
		return fmt.Errorf("unable to mount a size-capped tmpfs on the workspace %s: %w", dir, err)
	}
	return nil
}

// Unmount detaches the tmpfs at dir; the kernel frees its pages once no
// sandbox and no open file uses them. A dir that is no longer a mount is
// not an error. dir is never followed if it is a symbolic link.
func Unmount(dir string) error {
	err := unix.Unmount(dir, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
	if errors.Is(err, unix.EPERM) && !Supported() {
		// Without root nothing is mounted on the host's side (a kept
		// workspace's mount lives in its keeper's namespace): a
		// directory that is not a mount has nothing to unmount.
		if m, merr := mountpoint.Is(dir); merr != nil || !m {
			return nil
		}
	}
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unable to unmount the workspace %s: %w", dir, err)
	}
	return nil
}

// Remove unmounts the workspace and removes its directory. What the
// program wrote goes with the tmpfs: nothing of it is walked or followed
// on the host. It is safe to call more than once (but not at once).
func (d *Dir) Remove() error {
	if d.keeper == nil {
		if v, ok := kept.Load(d.Path); ok {
			d = v.(*Dir)
		}
	}
	if d.keeper != nil {
		return d.removeKept()
	}
	if d.removed {
		return nil
	}
	if err := Unmount(d.Path); err != nil {
		return err
	}
	// Nothing was ever beneath the mount: the directory can serve
	// another workspace.
	if d.spares != nil && d.spares.put(d.Path) {
		d.removed = true
		return nil
	}
	// The directory beneath the mount was never written to; a removal
	// that still finds entries (the mount went missing) removes them
	// without following links.
	if err := os.Remove(d.Path); err != nil && !errors.Is(err, os.ErrNotExist) { //nolint:forbidigo // the workspace's own directory, unmounted: unlink follows no link
		if err := os.RemoveAll(d.Path); err != nil { //nolint:forbidigo // under the unmounted tmpfs nothing ran; RemoveAll follows no link
			return fmt.Errorf("unable to remove the workspace %s: %w", d.Path, err)
		}
	}
	d.removed = true
	return nil
}

// Check returns nil when dir (never followed if it is a link) is the root
// of a tmpfs capped at most size bytes (rounded up to a page) and a
// bounded number of inodes; otherwise an error wrapping ErrUncapped that
// says why. It costs an open and two stat calls.
func Check(dir string, size int64) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUncapped, dir, err)
	}
	defer unix.Close(fd)
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUncapped, dir, err)
	}
	page := int64(os.Getpagesize())
	capacity := int64(st.Blocks) * st.Bsize //nolint:gosec // block counts of a tmpfs fit
	switch {
	case st.Type != unix.TMPFS_MAGIC:
		return fmt.Errorf("%w: %s is on a file system of type %#x", ErrUncapped, dir, st.Type)
	case st.Blocks == 0:
		return fmt.Errorf("%w: %s has no size limit", ErrUncapped, dir)
	case capacity > (size+page-1)/page*page:
		return fmt.Errorf("%w: %s holds up to %d bytes, more than the workspace cap of %d", ErrUncapped, dir, capacity, size)
	case st.Files == 0 || st.Files > maxCheckedInodes:
		return fmt.Errorf("%w: %s has no inode limit", ErrUncapped, dir)
	}
	root, err := mountpoint.Is(dir)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUncapped, dir, err)
	}
	if !root {
		return fmt.Errorf("%w: %s is not the root of its mount", ErrUncapped, dir)
	}
	return nil
}

// Sweep unmounts and removes the workspaces New made in parent with
// prefix for processes that are gone (killed before they could remove
// them): a tmpfs outlives its process and would hold its memory until the
// machine restarts. Only directories owned by this user are touched; a
// workspace of a live process is left alone. It returns how many it
// removed.
func Sweep(parent, prefix string) int {
	if parent == "" {
		parent = os.TempDir()
	}
	ents, err := os.ReadDir(parent) //nolint:forbidigo // the host's work directory, listed by name only
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || alive(pid) {
			continue
		}
		p := filepath.Join(parent, e.Name())
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		if int(st.Uid) != os.Geteuid() {
			// A backend gives a workspace's root to the sandbox's user;
			// a mount on it is still one only root could have made.
			if m, err := mountpoint.Is(p); err != nil || !m {
				continue
			}
		}
		if (&Dir{Path: p}).Remove() == nil {
			n++
		}
	}
	return n
}

// alive reports whether a process pid exists and has not exited: a
// zombie (killed, not yet reaped by its parent) holds nothing any more,
// and its workspaces are as dead as those of a process gone for good.
func alive(pid int) bool {
	if err := unix.Kill(pid, 0); err != nil && !errors.Is(err, unix.EPERM) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat") //nolint:forbidigo // a file of procfs, host-owned
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// The state follows the command name, which is in parentheses and
	// may hold any byte: read it after the last ')'.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}
