//go:build unix && !linux

package execute

import "syscall"

// openFlags keep the host from following a symbolic link, or blocking on
// a FIFO, that replaced a file between the listing and the open.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
