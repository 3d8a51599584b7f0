// Package bwrap is the Bubblewrap sandbox backend: every run is a fresh bwrap with --unshare-all
// --die-with-parent --new-session --cap-drop ALL, read-only system
// directories, a private size-capped /workspace, fresh /proc, /dev and
// /tmp, a clean environment, no_new_privs and the project's seccomp filter
// (--seccomp, the same program the native backend installs).
//
// Bubblewrap has no resource limits of its own. The backend puts each run
// in a cgroup of its own (internal/cgroup, v1 or v2) before the program
// starts: bwrap is started with --json-status-fd and --block-fd, so that
// it reports the pid of its sandbox child and then waits; the backend
// moves bwrap and that child into the run's cgroup (on v2 bwrap is cloned
// into it directly), sets the child's rlimits with prlimit, and only then
// lets it go. Wall time, CPU time (watched on the cgroup at a pace set by
// the time left) and output caps are enforced exactly as on the native
// backend, and the same measurements are reported.
//
// Whether a run that bwrap ended by itself was the program's or a failure
// to build the sandbox is decided by bwrap's status stream alone: bwrap
// reports the child's exit code there only if it executed the program.
// The program shares bwrap's stderr and could print bwrap's messages, but
// it has no descriptor of the status stream; its stderr is only the
// reason given when the program never ran.
//
// As root, bwrap itself runs as an unprivileged host uid (HostUIDBase+1000)
// and creates its own user namespace, in which user code is uid 1000: user
// code never runs as host root. The private /workspace, /tmp and /dev/shm
// are tmpfs mounted by the backend with a size and an inode cap and bound
// into the sandbox; unprivileged, bwrap's own --size tmpfs are used and the
// inode count is bounded by the memory cgroup only. Unprivileged, the
// cgroup must be one delegated to the user (see internal/cgroup): without
// it every run is refused (sandbox.ErrNoCgroup) unless
// Options.AllowRlimitsOnly lets it go ahead, with a warning, under rlimits
// alone.
//
// bwrap reports a program killed by signal N as exit status 128+N; the
// backend reads such a status back as the signal (see watch.DecodeExit).
package bwrap
