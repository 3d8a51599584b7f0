// Package cgroup gives each sandboxed run a control group of its own, which
// limits its memory, process count and CPU bandwidth, measures what it
// used, and kills every process it started, including those that left the
// process tree.
//
// # Where the groups live
//
// Detect reads /proc/self/mountinfo and /proc/self/cgroup and creates the
// groups beneath the cgroup we are already in, in a subdirectory named by
// Options.Prefix ("coderunner"), in every hierarchy used. It never creates
// anything at a hierarchy root we are not in: that tree belongs to whoever
// placed us, and under systemd or in a container it is not ours to write.
//
// An ordinary user on v1 creates groups only in a subtree root delegated
// to it: its own cgroup, or else a directory coderunner-<user name> (or
// coderunner-<uid>) found in its own cgroup or above it up to the top of
// the hierarchy, as root makes one with mkdir and chown -R. A directory
// counts only if it belongs to the user and the user may write its
// cgroup.procs and tasks; the Prefix directory goes inside it. The freezer
// is used only if it is delegated too.
//
// # v2 and v1
//
// A machine has the controllers on one interface or the other. Detect picks
// v1 when a v1 hierarchy holds the memory controller (a hybrid machine then
// has a cgroup2 tree without it), and v2 when only cgroup2 is mounted.
//
// On v2 there is one tree. A cgroup hands controllers to its children
// through cgroup.subtree_control, and only if its parent handed them to it
// (cgroup.controllers) — delegation, which systemd grants with
// Delegate=yes. Detect enables memory, pids and cpu in our cgroup and in
// the Prefix directory and says which are missing when they are not
// delegated. The kernel lets a cgroup that holds processes enable no
// controllers for its children (the "no internal processes" rule), so when
// we are the only process of our cgroup Detect moves us into a leaf beside
// the Prefix directory (Prefix + "-self"); when others share it Detect
// fails with that reason. A group gets memory.max, memory.swap.max=0,
// pids.max and cpu.max. v2 groups can be entered at clone time
// (CLONE_INTO_CGROUP, see Group.FD), so the child is limited from its
// first instruction; cgroup.kill (5.14) kills a group atomically.
//
// On v1 every hierarchy is a tree of its own — memory, pids, cpu, cpuacct
// and freezer may be mounted separately or together ("cpu,cpuacct") — so a
// group is one directory per hierarchy, a process joins each by a write to
// its cgroup.procs, and the controllers are named by the mount options.
// Swap is excluded by setting memory.memsw.limit_in_bytes equal to
// memory.limit_in_bytes. Without cgroup.kill, Kill freezes the group
// (freezer hierarchy, or cgroup.freeze on older v2 kernels) so that
// nothing forks and no pid is reused while it signals every pid listed,
// then thaws it so the signals take effect, and repeats until the group is
// empty.
//
// # Counting OOM kills
//
// A memory verdict must mean the kernel killed a process for memory, and
// only the oom_kill counters say that: "oom_kill" in memory.events on v2
// and in memory.oom_control on v1. The other counters count something
// else: memory.failcnt (v1) and the "max" and "oom" events (v2) grow each
// time usage touched the limit and the kernel reclaimed or tried to, which
// happens to programs that run to completion, and peak usage near the
// limit proves nothing either way.
//
// # Cost
//
// Create and Destroy run for every sandboxed program, so a run costs a
// handful of syscalls per hierarchy: a mkdir, an O_PATH open of the group
// directory, one open-write-close per limit relative to it, and on Destroy
// one read of cgroup.procs and an rmdir. Detect probes optional files once
// so that no per-run call stats anything, and Stats does not allocate.
package cgroup
