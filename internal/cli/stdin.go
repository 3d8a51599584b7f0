package cli

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pollableInput returns r to read coderunner mcp's messages from. When r
// is a pipe or a socket (as an MCP host gives), it is a new descriptor
// of it in non-blocking mode, which the Go runtime's poller waits on: a
// message is then read by the goroutine that handles it, without the
// hand-off to another thread that a blocking read needs (0.07 ms a call
// measured on 2 cores), and closing it ends a Read blocked on it.
// restore gives the open file back the flags it had, as
// the file is shared with whoever started the command. Anything else (a
// terminal, a regular file, a reader that is not a file) is returned as
// it is, never closed.
func pollableInput(r io.Reader) (_ io.ReadCloser, restore func()) {
	unchanged := func() (io.ReadCloser, func()) { return io.NopCloser(r), func() {} }
	f, ok := r.(*os.File)
	if !ok {
		return unchanged()
	}
	raw, err := f.SyscallConn()
	if err != nil {
		return unchanged()
	}
	var fd, flags int
	var ctlErr error
	err = raw.Control(func(u uintptr) {
		var st unix.Stat_t
		if ctlErr = unix.Fstat(int(u), &st); ctlErr != nil {
			return
		}
		if kind := st.Mode & unix.S_IFMT; kind != unix.S_IFIFO && kind != unix.S_IFSOCK {
			ctlErr = unix.ENOTSUP
			return
		}
		if flags, ctlErr = unix.FcntlInt(u, unix.F_GETFL, 0); ctlErr != nil {
			return
		}
		fd, ctlErr = unix.FcntlInt(u, unix.F_DUPFD_CLOEXEC, 0)
	})
	if err != nil || ctlErr != nil {
		return unchanged()
	}
	if flags&unix.O_NONBLOCK != 0 {
		return os.NewFile(uintptr(fd), f.Name()), func() {}
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return unchanged()
	}
	// The flags belong to the open file, shared by f: they are put back
	// through f, which outlives the new descriptor.
	return os.NewFile(uintptr(fd), f.Name()), func() {
		_ = raw.Control(func(u uintptr) { _, _ = unix.FcntlInt(u, unix.F_SETFL, flags) })
	}
}
