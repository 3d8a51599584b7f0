// Package docker is the Docker Engine sandbox backend, on the engine's API
// through the official Go client.
//
// # Containers
//
// Every container has the same security settings: no network, a read-only
// root, no-new-privileges, every capability dropped, a pids limit, memory
// equal to memory+swap (no swap), a CFS period and quota, and a non-root
// user (Options.User). On top of it: a seccomp profile generated from the
// native backend's policy (NewProfile; the native ABI only, so 32-bit and
// x32 system calls kill the process, where Docker's default profile allows
// them; socket families other than AF_UNIX, AF_INET and AF_INET6 fail with
// EAFNOSUPPORT), tmpfs with size and inode caps for /workspace, /tmp and /dev/shm,
// /sys hidden, rlimits (core, fsize, nofile, stack), docker-init as PID 1,
// and no logging. A host workspace (a compile step, a session) is bound
// read-write at /workspace; other mounts of the spec that are not system or
// toolchain paths (a compiled program) are bound read-only; the image
// provides everything else.
//
// # Images
//
// A spec does not name its language; the backend recognises it by its
// program (a toolchain path such as /usr/bin/python3.11 or /opt/jdk/bin/java)
// or, for a compiled program, by the language environment it carries, and
// runs it in that language's image from the language table (the recipes'
// images by default, languages.<id>.image in the configuration).
// Images are pulled according to the pull policy (always, if_not_present,
// never); a missing image is an ErrSetup error naming it. The images that
// scripts/build-images.sh makes from Debian packages hold each toolchain at
// its Debian path and at the table's neutral paths (/opt/jdk, /opt/go,
// /opt/rust), so that the recipes' commands run unchanged.
//
// # A container per run, or per program
//
// Every run gets a container of its own, created and removed for it: a
// fresh PID namespace, IPC namespace, /dev/mqueue, /dev/shm, files and
// cgroup, so that no run can read anything an earlier one left, not even
// how many processes it started (its process ids). Creating and starting a
// container costs 200 to 300 ms, ten times a run of the native backend.
//
// Options.Reuse keeps a container per program (the same image, argv,
// environment, files, mounts and fixed limits: specKey) instead and runs
// each of its runs as a fresh process (docker exec) with its own limits,
// updated on the container when they differ. What a run left running is
// killed from the host as soon as it ends, when the engine runs on this
// machine (pidfds, checked to be the program's user in the container's
// cgroup), and the next run's prelude, in the process that then becomes
// the program, kills anything left again, empties /workspace, /tmp,
// /dev/shm and /dev/mqueue, removes SysV IPC objects (with the image's
// ipcrm) and unpacks the files from an archive only the keeper (the
// container's idle process, another user) can change. The container's PID
// namespace stays, so process ids tell a run how many processes the runs
// before it started: reuse is for runs that trust each other. Programs
// never share a container; a run stopped by a limit or by the caller, or
// one with a host workspace, has its container removed. A run with a host
// workspace returns only once its container has stopped: the caller gets
// the directory back with nothing of the run left to write in it. Idle
// containers go after Options.IdleTimeout; tools/sandboxbench measures
// both ways.
//
// # Warm containers
//
// Options.Warm keeps containers created and started ahead of need for
// each kind of run seen, so that a run of a new program costs neither a
// container's creation nor an exec; each still serves one run and is
// removed after it. The run's workspace is mounted into it from the host
// at take time, through a directory of its own in a shared tmpfs of the
// backend's that the container has at /workspace with slave propagation
// (pool.go). Its command is a launcher run by the image's /bin/sh, as
// the program's user, its streams attached before it starts: the run
// sends it one line, quoted by the backend, that runs the program with
// env -i, and the rest of the stream is the program's stdin; end marks
// on stdout and stderr carry the program's status, so that the run ends
// without waiting for the engine to tear the container down (launch.go).
//
// # When the engine goes away
//
// An engine that stops answering during a run (killed, restarting) ends
// the run with an ErrSetup error naming the engine; nothing waits on it
// beyond the client's own calls, which fail as soon as the socket does.
// The containers the backend then could not remove are kept as orphans
// and removed by the janitor once the engine answers again. Every
// container carries an owner label (the machine's boot, the PID namespace,
// the pid and the start time of the coderunner process that made it); a
// new backend removes, in the background, the containers of this machine
// whose process is gone (RemoveStale), so a CLI run that ended while the
// engine was down leaves its containers only to the next one.
//
// # Measurements
//
// CPU time, memory and peak memory, and OOM kills come from the kernel's
// counters of the container's cgroup, which the engine locates (the pid of
// its init): the engine's stats endpoint answers in about a second per call,
// too slow for a CPU-time limit watched at the native backend's pace. The
// peak is reset before each run (memory.max_usage_in_bytes on v1,
// memory.peak through a held descriptor on v2). On an engine of another
// machine the engine's stats and events are used, and the container state's
// OOMKilled flag always counts.
package docker
