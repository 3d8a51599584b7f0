// Package kquota holds the caps every backend puts on the kernel's
// per-user counts a sandboxed program can hold: pending signals, POSIX
// message queue bytes, inotify instances and watches. The kernel charges
// each of them to the program's user and to the owner of every user
// namespace above it, up to the host. Backends therefore never let host
// root own a sandbox's user namespace (native as root starts each sandbox
// as a host uid of its own; bwrap runs as a non-root uid): with root as
// the owner, 128 inotify instances held in sandboxes made root's own
// inotify_init1 fail with EMFILE. The caps keep one sandbox from taking
// all of its owner's quota (128 inotify instances, 819200 message queue
// bytes and about one pending signal per 2 pages of memory by default).
package kquota

const (
	// SigPending is RLIMIT_SIGPENDING: signals queued at once.
	SigPending = 64
	// MsgQueueBytes is RLIMIT_MSGQUEUE: the bytes of POSIX message
	// queues (a queue of 4 messages of 1 KiB costs about 4.3 KiB).
	MsgQueueBytes = 16 << 10
	// InotifyInstances caps inotify instances, set in the sandbox's own
	// user namespace where the backend creates one.
	InotifyInstances = 8
	// InotifyWatches caps inotify watches, likewise.
	InotifyWatches = 1024
)

// UserNamespaceMax are the /proc/sys/user entries (user.max_*) a backend
// that creates the sandbox's user namespace sets inside it: they limit
// that namespace and everything below it. The sandbox's program needs no
// fanotify group nor user namespace of its own (seccomp refuses new
// namespaces anyway); the sandbox's init makes a PID, IPC and mount
// namespace per run, so those are left alone.
var UserNamespaceMax = []struct {
	Name  string
	Value int
}{
	{"max_inotify_instances", InotifyInstances},
	{"max_inotify_watches", InotifyWatches},
	{"max_fanotify_groups", 0},
	{"max_fanotify_marks", 0},
	{"max_user_namespaces", 0},
}
