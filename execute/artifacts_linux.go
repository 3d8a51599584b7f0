package execute

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// beneath keeps every open of the scan inside the directory it starts
// from: no symbolic link (even one pointing inside), no magic link such as
// /proc/self/root, no other mount. The host following a path the sandbox
// controls is how the Judge0 escapes (CVE-2024-28185, CVE-2024-28189)
// happened.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// scan walks dir through directory descriptors.
func (s *scanner) scan(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("unable to open workspace: %w", &os.PathError{Op: "open", Path: dir, Err: err})
	}
	return s.walk(fd, "", 0)
}

// scanRoot walks the directory open at root, which stays open.
func (s *scanner) scanRoot(root *os.File) error {
	fd, err := unix.FcntlInt(root.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("unable to open workspace: %w", err)
	}
	return s.walk(fd, "", 0)
}

// walk lists the directory open at fd, which it closes, whose path
// relative to the workspace is rel ("" for the workspace itself).
func (s *scanner) walk(fd int, rel string, depth int) error {
	d := os.NewFile(uintptr(fd), rel)
	defer d.Close()
	var ents []fs.DirEntry
	for {
		batch, err := d.ReadDir(1024)
		for range batch {
			if err := s.entry(); err != nil {
				return err
			}
		}
		ents = append(ents, batch...)
		if err != nil || len(batch) == 0 {
			// io.EOF ends the listing; another error (a directory the
			// program made unreadable) costs only its own entries.
			break
		}
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		p := path.Join(rel, name)
		typ := e.Type()
		if typ&fs.ModeType == fs.ModeIrregular {
			// The file system did not say (DT_UNKNOWN): ask without
			// following a link.
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			typ = modeType(st.Mode)
		}
		switch {
		case typ.IsDir():
			if depth+1 >= s.lim.MaxDepth {
				continue
			}
			sub, err := openBeneath(fd, name, unix.O_DIRECTORY)
			if err != nil {
				continue // swapped for something else, or unreadable
			}
			if err := s.walk(sub, p, depth+1); err != nil {
				return err
			}
		case typ.IsRegular():
			if !s.wanted(p) {
				continue
			}
			if len(s.out) >= s.lim.MaxFiles {
				return errScanFull
			}
			a, err := s.open(fd, name, p)
			if err != nil {
				continue // it vanished, was swapped or is unreadable
			}
			s.out = append(s.out, a)
		}
		// Symbolic links, FIFOs, sockets and devices are not artifacts.
	}
	return nil
}

// open describes the regular file name in the directory dirfd.
func (s *scanner) open(dirfd int, name, rel string) (Artifact, error) {
	// O_NONBLOCK: a FIFO swapped in since the listing must not block the
	// host; Stat then refuses it.
	fd, err := openBeneath(dirfd, name, unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return Artifact{}, err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	return s.describe(f, rel)
}

// openBeneath opens name, one path element, in dirfd for reading.
func openBeneath(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{
			Flags:   uint64(unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC | flags),
			Resolve: beneath,
		})
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			// EAGAIN: openat2 asks for a retry when a rename raced it.
			continue
		}
		return fd, err
	}
}

// modeType converts the type bits of a stat mode.
func modeType(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFREG:
		return 0
	case unix.S_IFLNK:
		return fs.ModeSymlink
	default:
		return fs.ModeIrregular
	}
}
