package hostws

import (
	"errors"
	"fmt"
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
		if err := unix.Fchown(fd, uid, uid); err != nil {
			return fmt.Errorf("unable to hand the workspace to the sandbox user: %w", err)
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
