//go:build unix

package execute

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// signalName is "SIGKILL" for 9, or "" when unknown.
func signalName(s syscall.Signal) string { return unix.SignalName(s) }
