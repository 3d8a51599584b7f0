package hostws

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/coderunner/coderunner/sandbox"
)

const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// Prepare opens the workspace dir (refusing a symbolic link), gives it to
// uid when chown is set, and writes files into it owned by uid.
func Prepare(dir string, files []sandbox.File, uid int, chown bool) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("unable to open workspace %s: %w", dir, err)
	}
	defer unix.Close(fd)
	if chown {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("unable to inspect workspace %s: %w", dir, err)
		}
		if err := unix.Fchown(fd, uid, uid); err != nil {
			return fmt.Errorf("unable to hand the workspace to the sandbox user: %w", err)
		}
		if int(st.Uid) != uid {
			// Handed to a sandbox user for the first time: what the
			// host put there before (a session's uploaded files) becomes
			// that user's too, so that the program may change it.
			if err := handOver(fd, int(st.Uid), uid, 0); err != nil {
				return fmt.Errorf("unable to hand the workspace's files to the sandbox user: %w", err)
			}
		}
	}
	for _, f := range files {
		if err := writeBeneath(fd, f, uid, chown); err != nil {
			return fmt.Errorf("unable to write %s into the workspace: %w", f.Path, err)
		}
	}
	return nil
}

// writeBeneath creates f under the directory dirfd. Whatever stood at its
// name is unlinked first, so that a link planted by an earlier run is
// replaced, never written through.
func writeBeneath(dirfd int, f sandbox.File, uid int, chown bool) error {
	parent := dirfd
	if dir := path.Dir(f.Path); dir != "." {
		var err error
		parent, err = mkdirBeneath(dirfd, dir, uid, chown)
		if err != nil {
			return err
		}
		defer unix.Close(parent)
	}
	name := path.Base(f.Path)
	if err := unix.Unlinkat(parent, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		if !errors.Is(err, unix.EISDIR) {
			return err
		}
		return fmt.Errorf("a directory stands at %s", f.Path)
	}
	mode := uint32(f.Mode.Perm())
	if mode == 0 {
		mode = 0o644
	}
	fd, err := unix.Openat2(parent, name, &unix.OpenHow{
		Flags:   unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Mode:    uint64(mode),
		Resolve: beneath,
	})
	if err != nil {
		return err
	}
	file := os.NewFile(uintptr(fd), f.Path)
	defer file.Close()
	if _, err := file.Write(f.Content); err != nil {
		return err
	}
	if chown {
		if err := file.Chown(uid, uid); err != nil {
			return err
		}
	}
	return file.Chmod(os.FileMode(mode))
}

// mkdirBeneath creates every directory of rel under dirfd and returns a
// descriptor of the last one.
func mkdirBeneath(dirfd int, rel string, uid int, chown bool) (int, error) {
	cur := dirfd
	for _, part := range strings.Split(rel, "/") {
		err := unix.Mkdirat(cur, part, 0o755)
		created := err == nil
		if err != nil && !errors.Is(err, unix.EEXIST) {
			if cur != dirfd {
				_ = unix.Close(cur)
			}
			return -1, err
		}
		next, err := unix.Openat2(cur, part, &unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: beneath,
		})
		if cur != dirfd {
			_ = unix.Close(cur)
		}
		if err != nil {
			return -1, err
		}
		if created && chown {
			if err := unix.Fchown(next, uid, uid); err != nil {
				_ = unix.Close(next)
				return -1, err
			}
		}
		cur = next
	}
	return cur, nil
}

// handOverDepth bounds how deep handOver descends; the host writes no
// deeper than this (wsfile.MaxDepth).
const handOverDepth = 32

// handOver gives to uid every entry beneath the directory dirfd that from
// owns, without following a link (AT_SYMLINK_NOFOLLOW; directories
// opened beneath, RESOLVE_NO_SYMLINKS) and no deeper than handOverDepth.
func handOver(dirfd, from, uid, depth int) error {
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(fd), "")
	defer d.Close()
	for {
		names, rerr := d.Readdirnames(256)
		for _, name := range names {
			var st unix.Stat_t
			if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if errors.Is(err, unix.ENOENT) {
					continue
				}
				return err
			}
			if int(st.Uid) == from {
				if err := unix.Fchownat(fd, name, uid, uid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					return err
				}
			}
			if st.Mode&unix.S_IFMT != unix.S_IFDIR || depth+1 >= handOverDepth {
				continue
			}
			sub, err := unix.Openat2(fd, name, &unix.OpenHow{
				Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
				Resolve: beneath,
			})
			if err != nil {
				return err
			}
			err = handOver(sub, from, uid, depth+1)
			_ = unix.Close(sub)
			if err != nil {
				return err
			}
		}
		if len(names) == 0 || errors.Is(rerr, io.EOF) {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}
