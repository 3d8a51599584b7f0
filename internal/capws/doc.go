// Package capws makes the host directories that sandboxes mount as a
// program's writable workspace, capped by the kernel: each is a tmpfs
// mounted with size= and nr_inodes=, so that a program cannot fill the
// host's disk through it, whatever it writes (many files, one big file,
// sparse files, fallocate, hard links, empty files by the million). The
// write that would pass the cap fails with ENOSPC while the program runs;
// nothing is measured afterwards.
//
// Every caller that lends a host directory to a sandbox (execute,
// executor, session, runner) makes it with New or Mount; the backends
// refuse a host workspace that Check does not accept, so that a caller
// that forgets cannot open the hole again.
//
// Mounting among the host's mounts needs CAP_SYS_ADMIN (root). Without it
// New fails with an error wrapping ErrUnsupported, and the caller uses the
// backend's private workspace (which the sandbox caps in its own
// namespaces) or refuses. NewKept, for the workspaces a compiled
// language's compile step and run share, has the tmpfs mounted instead by
// the workspace keeper, a process of this binary in a user and mount
// namespace of its own (keeper_linux.go): the caps are the kernel's as
// with New, the mount is in no namespace but the keeper's, and the native
// backend attaches a clone of it (CloneKept); other backends refuse it
// (Kept).
//
// The pages of a tmpfs are charged to the memory cgroup of the process
// that writes them: a run's workspace counts against the run's memory
// limit while it runs, and a program cannot use it to hold more memory
// than its limit. What a session's workspace holds stays in memory until
// the session ends, bounded by the session caps.
package capws
