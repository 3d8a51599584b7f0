#!/usr/bin/env bash
# Starts the executor image (make image) with the least privilege its
# sandboxes need, listening on 8080 inside the container:
#
#   deploy/run-container.sh [docker run options...] [-- COMMAND ARGS...]
#
# The options go to `docker run` after this script's own, so they add to them
# (-d, -p 8080:8080, -e CODERUNNER_API_TOKEN=..., --name, -v, --memory) or,
# for a setting given once (--pids-limit, -e of the same variable), replace
# them. After "--" comes the coderunner command the image runs instead of
# "serve --addr 0.0.0.0:8080", e.g. `-- doctor`.
#
# Every setting is the least that works, found by taking each away in turn
# (README, "Deploy"):
#   --cap-drop ALL, then only
#     SYS_ADMIN       mount each run's size-capped workspace (a tmpfs), and
#                     remount the container's cgroup read-write (coderunner
#                     init --writable-cgroup) so each run gets a cgroup of
#                     its own beneath the container's
#     SETUID, SETGID  start each sandbox as a host uid of its own
#     CHOWN, FOWNER   hand the workspace and the files in it to that uid
#     DAC_OVERRIDE    run /proc/self/exe and reach the work directory as that uid
#     SYS_PTRACE      open /proc/<sandbox init>/root, owned by that uid
#     SYS_NICE        give a warm sandbox (started ahead of need at the lowest
#                     priority) its priority back when a run takes it;
#                     without it warm sandboxes start at the normal priority
#   --user 0:0        root in the container for those capabilities; user code
#                     never runs as uid 0: each sandbox maps it to an
#                     unprivileged host uid of its own
#   --cgroupns=private  the container's cgroup is the root of what it sees,
#                     so the read-write remount reaches nothing above it
#   no-new-privileges nothing in the container gains privileges on exec
#   seccomp=deploy/seccomp.json  Docker's default profile, plus unshare, clone
#                     with namespace flags, mount, umount2, pivot_root,
#                     open_tree, move_mount, mount_setattr and sethostname,
#                     which the default allows only with CAP_SYS_ADMIN
#                     (the sandboxes' own filter is stricter still)
#   systempaths=unconfined  /proc without Docker's masks: the kernel lets a new
#                     PID namespace mount its own /proc only where no part of
#                     /proc is covered
#   --read-only, --tmpfs  a read-only root; /tmp, /run (the sandboxes' roots),
#                     /var/cache (the compile cache, whose builds the sandboxes
#                     execute: exec) and /var/lib/coderunner on tmpfs
#   --pids-limit      a cap on the processes of the whole executor
# The executor (not the code it runs) can change the container's own cgroup
# limits: bound the container from outside (--memory, --cpus) all the same.
#
# CODERUNNER_CONTAINER_UNPRIVILEGED=1 runs it as uid 10001 with no
# capability at all instead. Then a compiled language's workspace comes
# from the native backend's workspace keeper, and no cgroup is writable,
# so each run is limited by rlimits alone
# (CODERUNNER_BACKEND_ALLOW_RLIMITS_ONLY=true, set here): the address space
# stands for memory, which runtimes that reserve address space ahead
# (Node.js, the JVM, Go, rustc) do not survive, and the process limit
# counts every process of the uid, the executor's threads included.
# python, bash, c and cpp run.
#
# Environment: CODERUNNER_EXECUTOR_IMAGE (coderunner/executor:latest),
# CODERUNNER_CONTAINER_UNPRIVILEGED (0).
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)"
image="${CODERUNNER_EXECUTOR_IMAGE:-coderunner/executor:latest}"

opts=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	opts+=("$1")
	shift
done
[ "${1:-}" != "--" ] || shift

if [ "${CODERUNNER_CONTAINER_UNPRIVILEGED:-0}" = 1 ]; then
	mode=(--user 10001:10001
		--tmpfs /var/lib/coderunner:rw,nosuid,nodev,size=1g,uid=10001,gid=10001,mode=0700
		-e CODERUNNER_BACKEND_ALLOW_RLIMITS_ONLY=true)
else
	mode=(--user 0:0 --cgroupns=private)
	for c in SYS_ADMIN SETUID SETGID CHOWN FOWNER DAC_OVERRIDE SYS_PTRACE SYS_NICE; do
		mode+=(--cap-add "$c")
	done
	mode+=(--tmpfs /var/lib/coderunner:rw,nosuid,nodev,size=1g,mode=0755
		--tmpfs /run:rw,nosuid,nodev,size=64m --tmpfs /var/cache:rw,exec,nosuid,nodev,size=1g
		--entrypoint /usr/local/bin/coderunner)
	# The image's command, under an init that first makes the cgroup writable.
	[ $# -gt 0 ] || set -- serve --addr 0.0.0.0:8080
	set -- init --writable-cgroup -- /usr/local/bin/coderunner "$@"
fi

exec docker run \
	--cap-drop ALL \
	"${mode[@]}" \
	--security-opt no-new-privileges \
	--security-opt "seccomp=$dir/seccomp.json" \
	--security-opt systempaths=unconfined \
	--read-only \
	--tmpfs /tmp:rw,nosuid,nodev,size=1g \
	--pids-limit 4096 \
	"${opts[@]}" \
	"$image" "$@"
