//go:build unix

package controlplane

import "syscall"

// openFlags keep a spool read from following a link planted in place of a
// stored result.
const openFlags = syscall.O_NOFOLLOW
