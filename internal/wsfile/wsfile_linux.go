package wsfile

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/multifile"
)

// beneath resolves names inside the workspace only, never through a link
// or into another mount.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// uploadPrefix starts the name a file is written under before it is
// renamed into place.
const uploadPrefix = ".coderunner-upload-"

// Root is an open workspace. Close it when done.
type Root struct {
	fd int
	// uid and gid own the workspace's root: the sandbox's user once a
	// run was handed the workspace. What Write creates is given to them,
	// so that the next run may change it.
	uid, gid int
	chown    bool
}

// Open opens the workspace dir, refusing a link at dir.
func Open(dir string) (*Root, error) {
	fd, err := unix.Open(dir, dirFlags, 0)
	if err != nil {
		return nil, fmt.Errorf("unable to open the workspace: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("unable to inspect the workspace: %w", err)
	}
	r := &Root{fd: fd, uid: int(st.Uid), gid: int(st.Gid)}
	r.chown = os.Geteuid() == 0 && (r.uid != 0 || r.gid != 0)
	return r, nil
}

// Close releases the workspace's descriptor. It is safe to call twice.
func (r *Root) Close() error {
	if r.fd < 0 {
		return nil
	}
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}

// classify maps the errors of the kernel to the package's classes, naming
// p.
func classify(p string, err error) error {
	switch {
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("%w: %s", ErrNotFound, p)
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EXDEV):
		return fmt.Errorf("%w: %s: no link is followed", ErrLink, p)
	case errors.Is(err, unix.EISDIR):
		return fmt.Errorf("%w: %s", ErrIsDir, p)
	case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.EDQUOT):
		return fmt.Errorf("%w: %s", ErrNoSpace, p)
	case errors.Is(err, unix.ENXIO):
		return fmt.Errorf("%w: %s", ErrNotRegular, p)
	}
	return fmt.Errorf("%s: %w", p, err)
}

// parent opens the directory of p, creating the missing ones when create
// is set, and returns it with p's last name.
func (r *Root) parent(p string, create bool) (fd int, name string, err error) {
	if err := CheckPath(p); err != nil {
		return -1, "", err
	}
	dir, name := path.Split(p)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		fd, err = unix.Dup(r.fd)
		if err != nil {
			return -1, "", err
		}
		return fd, name, nil
	}
	if !create {
		fd, err = unix.Openat2(r.fd, dir, &unix.OpenHow{Flags: dirFlags, Resolve: beneath})
		if err != nil {
			return -1, "", fmt.Errorf("%s: %w", p, classify(dir, err))
		}
		return fd, name, nil
	}
	cur := r.fd
	done := ""
	for _, part := range strings.Split(dir, "/") {
		done = path.Join(done, part)
		err := unix.Mkdirat(cur, part, 0o755)
		created := err == nil
		if err != nil && !errors.Is(err, unix.EEXIST) {
			if cur != r.fd {
				_ = unix.Close(cur)
			}
			return -1, "", fmt.Errorf("%s: %w", p, classify(done, err))
		}
		next, err := unix.Openat2(cur, part, &unix.OpenHow{Flags: dirFlags, Resolve: beneath})
		if cur != r.fd {
			_ = unix.Close(cur)
		}
		if err != nil {
			return -1, "", fmt.Errorf("%s: %w", p, classify(done, err))
		}
		if created && r.chown {
			if err := unix.Fchown(next, r.uid, r.gid); err != nil {
				_ = unix.Close(next)
				return -1, "", fmt.Errorf("%s: %w", done, err)
			}
		}
		cur = next
	}
	return cur, name, nil
}

// Write makes p a regular file holding what src gives, at most max bytes,
// and returns its size. Missing directories are made. The content goes to
// a new file, renamed over whatever stood at p (a file, a link) only once
// it is whole: a link is replaced, never written through, and a failed
// write leaves the old file as it was. The file keeps the permission bits
// of the regular file it replaces (0644 for a new one) and is owned by
// the owner of the workspace's root.
func (r *Root) Write(p string, src io.Reader, max int64) (int64, error) {
	dirfd, name, err := r.parent(p, true)
	if err != nil {
		return 0, err
	}
	defer unix.Close(dirfd)
	mode := uint32(0o644)
	var st unix.Stat_t
	switch err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return 0, fmt.Errorf("%w: %s", ErrIsDir, p)
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG:
		mode = st.Mode & 0o777
	case err != nil && !errors.Is(err, unix.ENOENT):
		return 0, classify(p, err)
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := uploadPrefix + hex.EncodeToString(rnd[:])
	fd, err := unix.Openat2(dirfd, tmp, &unix.OpenHow{
		Flags:   unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Mode:    0o600,
		Resolve: beneath,
	})
	if err != nil {
		return 0, classify(p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	n, err := r.fill(f, src, max, mode)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = classify(p, cerr)
	}
	if err == nil {
		err = unix.Renameat(dirfd, tmp, dirfd, name)
		if err != nil {
			err = classify(p, err)
		}
	}
	if err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return 0, err
	}
	return n, nil
}

// fill copies at most max bytes of src into f and gives f its owner and
// mode.
func (r *Root) fill(f *os.File, src io.Reader, max int64, mode uint32) (int64, error) {
	n, err := io.Copy(f, io.LimitReader(src, max+1))
	switch {
	case err != nil && (errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT)):
		return 0, fmt.Errorf("%w: %s", ErrNoSpace, f.Name())
	case err != nil:
		return 0, err
	case n > max:
		return 0, fmt.Errorf("%w: %s: more than %d bytes", ErrTooLarge, f.Name(), max)
	}
	if r.chown {
		if err := f.Chown(r.uid, r.gid); err != nil {
			return 0, err
		}
	}
	if err := f.Chmod(os.FileMode(mode)); err != nil {
		return 0, err
	}
	return n, nil
}

// OpenFile opens the regular file p for reading and returns it with its
// size. Anything else at p is refused unopened or, for a FIFO, opened
// without blocking and refused: ErrNotRegular (ErrIsDir for a
// directory), ErrNotFound, ErrLink.
func (r *Root) OpenFile(p string) (*os.File, int64, error) {
	if err := CheckPath(p); err != nil {
		return nil, 0, err
	}
	fd, err := unix.Openat2(r.fd, p, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOFOLLOW | unix.O_NOCTTY | unix.O_CLOEXEC,
		Resolve: beneath,
	})
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, 0, r.whyLoop(p)
		}
		return nil, 0, classify(p, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, 0, classify(p, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return os.NewFile(uintptr(fd), p), st.Size, nil
	case unix.S_IFDIR:
		_ = unix.Close(fd)
		return nil, 0, fmt.Errorf("%w: %s", ErrIsDir, p)
	}
	_ = unix.Close(fd)
	return nil, 0, fmt.Errorf("%w: %s is a %s", ErrNotRegular, p, kind(st.Mode))
}

// whyLoop tells a link at p's last name (not a regular file) from a link
// on the way to it.
func (r *Root) whyLoop(p string) error {
	dirfd, name, err := r.parent(p, false)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return fmt.Errorf("%w: %s is a symbolic link, which is never followed", ErrNotRegular, p)
	}
	return classify(p, unix.ELOOP)
}

// kind names a file type for messages.
func kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return "symbolic link"
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "device"
	case unix.S_IFDIR:
		return "directory"
	}
	return "special file"
}

// Remove removes what stands at p unless it is a directory (ErrIsDir): a
// link is removed itself, never followed.
func (r *Root) Remove(p string) error {
	dirfd, name, err := r.parent(p, false)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	if err := unix.Unlinkat(dirfd, name, 0); err != nil {
		return classify(p, err)
	}
	return nil
}

// Entry is one regular file of a listing.
type Entry struct {
	// Path is relative to the workspace.
	Path string `json:"path"`
	// Size is its length in bytes.
	Size int64 `json:"size"`
	// SHA256 is the hex SHA-256 of its content.
	SHA256 string `json:"sha256"`
}

// List returns the regular files beneath the workspace, sorted by path,
// with their sizes and SHA-256 digests. Links and other special files are
// neither followed nor listed; nor are names that no path could name
// (CheckPath) or that lie deeper than MaxDepth. It visits at most
// maxEntries names and reads at most maxBytes of content (ErrTooMany
// beyond either).
func (r *Root) List(maxEntries int, maxBytes int64) ([]Entry, error) {
	// A new open file description: a duplicate would share its
	// directory offset with r's, where an earlier listing left it.
	fd, err := unix.Openat(r.fd, ".", dirFlags, 0)
	if err != nil {
		return nil, err
	}
	l := &lister{max: maxEntries, left: maxEntries, bytes: maxBytes, out: []Entry{}}
	if err := l.dir(fd, "", 1); err != nil {
		return nil, err
	}
	slices.SortFunc(l.out, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return l.out, nil
}

type lister struct {
	max   int
	left  int
	bytes int64
	out   []Entry
}

// dir lists the directory fd (which it closes) at rel, depth levels down.
func (l *lister) dir(fd int, rel string, depth int) error {
	d := os.NewFile(uintptr(fd), rel)
	defer d.Close()
	for {
		names, err := d.Readdirnames(256)
		for _, name := range names {
			if l.left--; l.left < 0 {
				return fmt.Errorf("%w: more than the %d names a listing visits", ErrTooMany, l.max)
			}
			p := path.Join(rel, name)
			if strings.HasPrefix(name, uploadPrefix) || multifile.CheckPath(p) != nil {
				continue
			}
			var st unix.Stat_t
			if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if errors.Is(err, unix.ENOENT) {
					continue
				}
				return classify(p, err)
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFREG:
				e, err := l.file(fd, name, p)
				if err != nil {
					return err
				}
				if e != nil {
					l.out = append(l.out, *e)
				}
			case unix.S_IFDIR:
				if depth >= MaxDepth {
					continue
				}
				sub, err := unix.Openat2(fd, name, &unix.OpenHow{Flags: dirFlags, Resolve: beneath})
				if err != nil {
					if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOENT) {
						continue
					}
					return classify(p, err)
				}
				if err := l.dir(sub, p, depth+1); err != nil {
					return err
				}
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

// file digests the regular file name of dirfd; nil when it is no longer
// a regular file.
func (l *lister) file(dirfd int, name, p string) (*Entry, error) {
	fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOFOLLOW | unix.O_NOCTTY | unix.O_CLOEXEC,
		Resolve: beneath,
	})
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENXIO) {
			return nil, nil
		}
		return nil, classify(p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, classify(p, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, nil
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, l.bytes+1))
	if err != nil {
		return nil, classify(p, err)
	}
	if l.bytes -= n; l.bytes < 0 {
		return nil, fmt.Errorf("%w: the files hold more bytes than a listing reads", ErrTooMany)
	}
	return &Entry{Path: p, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}
