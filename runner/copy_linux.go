package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// beneath resolves a name inside a directory that sandboxed code wrote:
// no symbolic link, no magic link, no way out of it. The host never
// follows a path the sandbox controls (the Judge0 escapes,
// CVE-2024-28185 and CVE-2024-28189, were the host following one).
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// copyOut copies the regular files and directories under src, a directory
// a sandbox wrote, into dst, a directory of ours. Symbolic links, devices,
// FIFOs and sockets are left behind; names for which skip returns true
// (slash-separated, relative to src) are not copied. Files are made
// read-only (0444, or 0555 when any execute bit was set) and directories
// 0755. It fails with errTooLarge beyond lim.
func copyOut(src, dst string, skip func(rel string) bool, lim copyLimits) error {
	fd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("unable to open %s: %w", src, err)
	}
	c := &copier{lim: lim, skip: skip}
	return c.dir(fd, dst, "", 0)
}

type copier struct {
	lim   copyLimits
	skip  func(string) bool
	bytes int64
	files int
}

// dir copies the directory open as fd (which it closes) into dst.
func (c *copier) dir(fd int, dst, rel string, depth int) error {
	d := os.NewFile(uintptr(fd), rel)
	defer d.Close()
	if depth > c.lim.maxDepth {
		return fmt.Errorf("%w: directories nested deeper than %d", errTooLarge, c.lim.maxDepth)
	}
	for {
		names, err := d.Readdirnames(256)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("unable to list %s: %w", rel, err)
		}
		for _, name := range names {
			r := path.Join(rel, name)
			if c.skip != nil && c.skip(r) {
				continue
			}
			if c.files++; c.files > c.lim.maxFiles {
				return fmt.Errorf("%w: more than %d files", errTooLarge, c.lim.maxFiles)
			}
			if err := c.entry(fd, name, filepath.Join(dst, name), r, depth); err != nil {
				return err
			}
		}
	}
}

// entry copies the entry name of the directory dirfd.
func (c *copier) entry(dirfd int, name, dst, rel string, depth int) error {
	// O_NONBLOCK: opening a FIFO does not wait for a writer.
	fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC,
		Resolve: beneath,
	})
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENXIO) {
		// A symbolic link, a mount point or a socket: not part of a program.
		return nil
	}
	if err != nil {
		return fmt.Errorf("unable to open %s: %w", rel, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return fmt.Errorf("unable to stat %s: %w", rel, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if err := os.Mkdir(dst, 0o755); err != nil { //nolint:forbidigo // dst is in the staged entry, host-owned; the source is read through openat2
			_ = unix.Close(fd)
			return err
		}
		return c.dir(fd, dst, rel, depth+1)
	case unix.S_IFREG:
		f := os.NewFile(uintptr(fd), rel)
		defer f.Close()
		return c.file(f, dst, rel, st.Mode&0o111 != 0)
	default:
		_ = unix.Close(fd)
		return nil
	}
}

// file copies the regular file f to dst, within the byte budget.
func (c *copier) file(f *os.File, dst, rel string, exec bool) error {
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) //nolint:forbidigo // dst is in the staged entry, host-owned; the source is read through openat2
	if err != nil {
		return err
	}
	left := c.lim.maxBytes - c.bytes
	n, err := io.Copy(out, io.LimitReader(f, left+1))
	c.bytes += n
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("unable to copy %s: %w", rel, err)
	}
	if n > left {
		return fmt.Errorf("%w: more than %d MB", errTooLarge, c.lim.maxBytes>>20)
	}
	mode := os.FileMode(0o444)
	if exec {
		mode = 0o555
	}
	return os.Chmod(dst, mode) //nolint:forbidigo // dst is the file just created with O_EXCL
}
