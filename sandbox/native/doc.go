// Package native is coderunner's own sandbox engine.
//
// Every run of Backend.Run gets fresh user, PID, mount, network, IPC, UTS
// and cgroup namespaces, nothing of which is reused. The runs of a Series
// (the tests of one program) may share them: a sandbox whose program ended
// normally serves the series' next run, once everything the run left is
// killed and reaped, with new PID, IPC and mount namespaces (every run, the
// first included, has its own; /tmp and /workspace are new in each), new
// pipes and the cgroup's counters taken afresh (see Backend.Series). The binary starts itself again as
// the sandbox init (package nsinit, C code that runs before the Go runtime),
// which pivots into a read-only root assembled from bind mounts of the
// toolchain, a synthetic /etc (the host's /etc/alternatives bound in it
// read-only), a fresh /proc showing only the sandbox's
// processes, a minimal /dev and size-capped tmpfs for /tmp and /workspace.
// The program itself runs as an unprivileged user with every capability
// dropped, no_new_privs, a seccomp filter (internal/seccomp) and rlimits,
// inside a per-run cgroup (internal/cgroup, v1 or v2) that bounds its memory,
// processes and CPU.
//
// The parent enforces the wall-time limit with a timer and the CPU-time
// limit by watching the cgroup's CPU counter at a pace set by the time left,
// stops the run the moment an output stream passes its cap, and at the end
// kills the init: the kernel then kills everything left in the PID
// namespace, however it was forked.
//
// As root, user code runs as uid 1000 inside, mapped to an unprivileged host
// uid (HostUIDBase+1000); the init runs as root inside, mapped to
// HostUIDBase. Unprivileged, only the caller's own uid can be mapped: the
// program then runs as uid 0 inside with no capabilities and locked
// securebits, and limits come from a cgroup delegated to the user (see
// internal/cgroup); without one every run is refused (sandbox.ErrNoCgroup)
// unless Options.AllowRlimitsOnly lets it go ahead, with a warning, under
// rlimits alone.
package native
