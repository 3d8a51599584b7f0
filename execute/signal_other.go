//go:build !unix

package execute

import "syscall"

func signalName(s syscall.Signal) string { return s.String() }
