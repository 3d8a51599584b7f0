package capws

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Without root no tmpfs can be mounted in the host's mount namespace, but
// a process in a user and mount namespace of its own may mount one with
// size= and nr_inodes=, and the kernel enforces those caps as it does
// root's. The keeper is such a process: this binary started again under
// the name keeperName in a new user namespace (this user as its root, no
// other id mapped) and a new mount namespace, a copy of the host's. It
// mounts a capped tmpfs on a directory the host made, and hands a
// detached clone of that mount to a sandbox that asks (the native backend
// attaches it on /workspace, as it attaches root's workspaces). The host
// reaches the mount through /proc/<keeper>/root, a path that never passes
// through anything a sandbox controls; every name beneath it is resolved
// by the callers as for root's workspaces (openat2, no link followed).
//
// One keeper serves a process, started at the first workspace it needs;
// it ends when the process does (its end of the socket closes), and its
// mounts go with its mount namespace.

// keeperName is argv[0] of a keeper: the binary's init runs keep instead
// of the program.
const keeperName = "coderunner-wskeeper"

// The keeper's operations, the first byte of a request.
const (
	opMount   = 'M' // size, inodes, dir
	opClone   = 'C' // dir
	opUnmount = 'U' // dir
)

func init() {
	if len(os.Args) > 0 && os.Args[0] == keeperName {
		os.Exit(keep(3))
	}
}

// keep serves the requests of the process that started this keeper on
// the socket fd until it closes. Each request gets one answer: an empty
// one for success, with a mount's descriptor for a clone, or the error's
// text.
func keep(fd int) int {
	buf := make([]byte, 8192)
	for {
		n, _, _, _, err := unix.Recvmsg(fd, buf, nil, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			return 0
		}
		var rights []byte
		var answer []byte
		tree, err := serve(buf[:n])
		if err != nil {
			// Never empty: an empty answer would read as success.
			answer = []byte("failed: " + err.Error())
		}
		if tree >= 0 {
			rights = unix.UnixRights(tree)
		}
		if len(answer) == 0 {
			answer = []byte{0}
		}
		serr := unix.Sendmsg(fd, answer, rights, nil, 0)
		if tree >= 0 {
			_ = unix.Close(tree)
		}
		if serr != nil {
			return 1
		}
	}
}

// serve carries out one request: fields separated by NUL bytes after the
// operation's byte. It returns a descriptor to send (-1 for none).
func serve(req []byte) (int, error) {
	if len(req) < 2 {
		return -1, errors.New("empty request")
	}
	f := bytes.Split(req[1:], []byte{0})
	switch {
	case req[0] == opMount && len(f) == 3:
		size, err1 := strconv.ParseInt(string(f[0]), 10, 64)
		inodes, err2 := strconv.Atoi(string(f[1]))
		if err1 != nil || err2 != nil {
			return -1, errors.New("malformed mount request")
		}
		return -1, Mount(string(f[2]), size, inodes)
	case req[0] == opClone && len(f) == 1:
		tree, err := cloneMount(string(f[0]))
		if err != nil {
			return -1, err
		}
		return tree, nil
	case req[0] == opUnmount && len(f) == 1:
		return -1, Unmount(string(f[0]))
	}
	return -1, errors.New("unknown request")
}

// cloneMount returns a detached clone of the mount whose root is dir:
// that mount alone, nosuid, nodev and private, so that nothing mounted on
// either side propagates to the other. dir is not followed if it is a
// link and must be the root of its mount.
func cloneMount(dir string) (int, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("unable to open %s: %w", dir, err)
	}
	defer unix.Close(fd)
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS, &stx); err != nil {
		return -1, fmt.Errorf("unable to stat %s: %w", dir, err)
	}
	if stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 || stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		return -1, fmt.Errorf("%s is not the root of its mount", dir)
	}
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return -1, fmt.Errorf("open_tree: %w", err)
	}
	attr := &unix.MountAttr{
		Attr_set:    unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
		Propagation: unix.MS_PRIVATE,
	}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, attr); err != nil {
		_ = unix.Close(tree)
		return -1, fmt.Errorf("mount_setattr: %w", err)
	}
	return tree, nil
}

// keeper is the host's end of a running keeper.
type keeper struct {
	mu   sync.Mutex // one request at a time
	sock int
	pid  int
	dead bool
}

var (
	keeperMu  sync.Mutex
	theKeeper *keeper

	// kept maps the Path of each workspace a keeper holds to the
	// directory on the host it is mounted on.
	kept sync.Map
)

// startKeeper returns this process's keeper, started at the first call
// and again if it ended (its workspaces went with it); an error (user
// namespaces not allowed here) wraps ErrUnsupported.
func startKeeper() (*keeper, error) {
	keeperMu.Lock()
	defer keeperMu.Unlock()
	if theKeeper != nil && !theKeeper.ended() {
		return theKeeper, nil
	}
	k, err := spawnKeeper()
	if err != nil {
		return nil, err
	}
	theKeeper = k
	return k, nil
}

// ended reports whether the keeper was found gone.
func (k *keeper) ended() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.dead
}

// fail marks the keeper gone and closes its socket. k.mu is held.
func (k *keeper) fail() {
	if !k.dead {
		k.dead = true
		_ = unix.Close(k.sock)
	}
}

func spawnKeeper() (*keeper, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("unable to start the workspace keeper: %w", err)
	}
	theirs := os.NewFile(uintptr(fds[1]), "keeper")
	defer theirs.Close()
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{keeperName},
		Env:        []string{},
		ExtraFiles: []*os.File{theirs},
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
		},
	}
	if err := cmd.Start(); err != nil {
		_ = unix.Close(fds[0])
		return nil, fmt.Errorf("%w: the workspace keeper cannot start in a user namespace of its own: %w", ErrUnsupported, err)
	}
	// Never reaped: it ends only with this process (its socket closes),
	// or by a fault, and then it stays a zombie, whose /proc/<pid>/root
	// leads nowhere; its pid, which the workspaces' paths name, is never
	// another process's.
	return &keeper{sock: fds[0], pid: cmd.Process.Pid}, nil
}

// call sends a request and returns the answer's descriptor (-1 if none).
func (k *keeper) call(op byte, fields ...string) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dead {
		return -1, errors.New("the workspace keeper has ended")
	}
	req := []byte{op}
	for i, f := range fields {
		if i > 0 {
			req = append(req, 0)
		}
		req = append(req, f...)
	}
	if err := unix.Sendmsg(k.sock, req, nil, nil, 0); err != nil {
		k.fail()
		return -1, fmt.Errorf("the workspace keeper is gone: %w", err)
	}
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(k.sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			k.fail()
			return -1, fmt.Errorf("the workspace keeper is gone: %w", err)
		}
		if n == 0 {
			k.fail()
			return -1, errors.New("the workspace keeper is gone")
		}
		fd := -1
		if oobn > 0 {
			msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err == nil && len(msgs) == 1 {
				if got, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(got) == 1 {
					fd = got[0]
				}
			}
		}
		if n == 1 && buf[0] == 0 {
			return fd, nil
		}
		if fd >= 0 {
			_ = unix.Close(fd)
		}
		return -1, errors.New(string(buf[:n]))
	}
}

// NewKept is New for a process with or without root: as root it is New;
// otherwise the tmpfs is mounted by this process's keeper, in a mount
// namespace of its own, and Path reaches it through the keeper
// (/proc/<keeper>/root followed by the directory). Only the native
// backend can put such a workspace in a sandbox (CloneKept); the others
// refuse it (Kept). Where user namespaces are not allowed the error
// wraps ErrUnsupported.
func NewKept(parent, prefix string, size int64, inodes int) (*Dir, error) {
	if Supported() {
		return New(parent, prefix, size, inodes)
	}
	return InKeeper(parent, prefix, size, inodes)
}

// InKeeper makes a workspace the keeper holds, whoever this process runs
// as (NewKept does so only without root; the tests, as root too).
func InKeeper(parent, prefix string, size int64, inodes int) (*Dir, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	dir, err := os.MkdirTemp(parent, prefix+strconv.Itoa(os.Getpid())+"-") //nolint:forbidigo // parent is the host's work directory, not a sandbox's
	if err != nil {
		return nil, fmt.Errorf("unable to create the workspace: %w", err)
	}
	d, err := MountKept(dir, size, inodes)
	if err != nil {
		_ = os.Remove(dir) //nolint:forbidigo // the directory just made, before any mount or sandbox
		return nil, err
	}
	return d, nil
}

// MountKept has the keeper mount a tmpfs of at most size bytes and inodes
// files (MaxInodes when zero) on the existing, empty directory dir, in
// the keeper's mount namespace only, and returns the workspace, whose
// Path reaches it. Remove unmounts it and removes dir. Where user
// namespaces are not allowed the error wraps ErrUnsupported.
func MountKept(dir string, size int64, inodes int) (*Dir, error) {
	if size <= 0 {
		return nil, fmt.Errorf("workspace size %d must be positive", size)
	}
	if inodes <= 0 {
		inodes = MaxInodes
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("unable to mount the workspace: %w", err)
	}
	k, err := startKeeper()
	if err != nil {
		return nil, err
	}
	if _, err := k.call(opMount, strconv.FormatInt(size, 10), strconv.Itoa(inodes), dir); err != nil {
		return nil, fmt.Errorf("%w: the workspace keeper could not mount a size-capped tmpfs on %s: %w", ErrUnsupported, dir, err)
	}
	d := &Dir{Path: "/proc/" + strconv.Itoa(k.pid) + "/root" + dir, host: dir, keeper: k}
	kept.Store(d.Path, d)
	return d, nil
}

// Kept reports whether path is the Path of a workspace this process's
// keeper holds (NewKept without root): one only CloneKept can put in a
// sandbox, since no bind mount reaches another mount namespace.
func Kept(path string) bool {
	_, ok := kept.Load(path)
	return ok
}

// ErrNotKept is returned by CloneKept for a path that is not a kept
// workspace.
var ErrNotKept = errors.New("not a workspace held by the keeper")

// CloneKept returns a detached clone of the kept workspace at path (that
// mount alone, nosuid, nodev, private), made by the keeper, which a
// sandbox's init attaches with move_mount. Each call makes a new clone:
// the compile step's sandbox and the run's each attach their own, and all
// share the one tmpfs and its caps.
func CloneKept(path string) (*os.File, error) {
	v, ok := kept.Load(path)
	if !ok {
		return nil, ErrNotKept
	}
	d := v.(*Dir)
	fd, err := d.keeper.call(opClone, d.host)
	if err != nil {
		return nil, fmt.Errorf("unable to clone the workspace's mount: %w", err)
	}
	if fd < 0 {
		return nil, errors.New("the workspace keeper sent no mount")
	}
	return os.NewFile(uintptr(fd), "workspace"), nil
}

// removeKept unmounts a kept workspace in the keeper's namespace and
// removes its directory on the host, which nothing was written to.
func (d *Dir) removeKept() error {
	// A keeper that ended took its mounts with it: only the directory
	// is left.
	if _, err := d.keeper.call(opUnmount, d.host); err != nil && !d.keeper.ended() {
		return fmt.Errorf("unable to unmount the workspace %s: %w", d.host, err)
	}
	kept.Delete(d.Path)
	if err := os.Remove(d.host); err != nil && !errors.Is(err, os.ErrNotExist) { //nolint:forbidigo // the host's directory under the keeper's mount: empty, no link followed
		return fmt.Errorf("unable to remove the workspace %s: %w", d.host, err)
	}
	return nil
}
