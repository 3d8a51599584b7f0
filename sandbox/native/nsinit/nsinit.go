// Package nsinit is the first code that runs inside a native sandbox.
//
// Importing it links a C constructor into the binary. When the binary is
// started with argv[0] equal to ArgV0 (the native backend does this through
// /proc/self/exe), the constructor takes over before the Go runtime starts:
// it reads the setup operations from fd 3, builds the sandbox's root
// filesystem, forks the user program with every privilege dropped, and
// reports the program's wait status on fd 4. Otherwise it returns at once and
// the program starts as usual.
//
// The wire format is in nsinit.h; package native encodes it.
package nsinit

// #cgo CFLAGS: -O2 -Wall -Wextra -Wno-unused-parameter -fstack-protector-strong -D_FORTIFY_SOURCE=2
// #include "nsinit.h"
import "C"

// ArgV0 is the argv[0] that makes the binary act as the sandbox init.
const ArgV0 = C.NSINIT_ARGV0

// Operation codes of the setup stream; see nsinit.h.
const (
	OpRoot          = C.OP_ROOT
	OpMkdir         = C.OP_MKDIR
	OpBind          = C.OP_BIND
	OpSymlink       = C.OP_SYMLINK
	OpTmpfs         = C.OP_TMPFS
	OpFile          = C.OP_FILE
	OpProc          = C.OP_PROC
	OpHostname      = C.OP_HOSTNAME
	OpLoopback      = C.OP_LOOPBACK
	OpCgroupNS      = C.OP_CGROUPNS
	OpRlimit        = C.OP_RLIMIT
	OpUser          = C.OP_USER
	OpCwd           = C.OP_CWD
	OpSeccomp       = C.OP_SECCOMP
	OpArgv          = C.OP_ARGV
	OpEnv           = C.OP_ENV
	OpDev           = C.OP_DEV
	OpStdinNull     = C.OP_STDIN_NULL
	OpPreopen       = C.OP_PREOPEN
	OpKeep          = C.OP_KEEP
	OpUsernsMax     = C.OP_USERNS_MAX
	OpAttach        = C.OP_ATTACH
	OpGiven         = C.OP_GIVEN
	OpSendWorkspace = C.OP_SEND_WORKSPACE
)

// ConfigFD and StatusFD are the descriptors the init reads its setup from
// and writes its report to.
const (
	ConfigFD = C.NSINIT_CONFIG_FD
	StatusFD = C.NSINIT_STATUS_FD
	// MaxConfig is the largest setup stream the init accepts.
	MaxConfig = C.NSINIT_MAX_CONFIG
	// MaxGiven is the most bind sources the first phase may come with.
	MaxGiven = C.NSINIT_MAX_GIVEN
)
