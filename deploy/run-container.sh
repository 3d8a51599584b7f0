#!/usr/bin/env bash
# Starts the executor image (make image) with the least privilege its
# sandboxes need, listening on 8080 inside the container:
#
#   deploy/run-container.sh [docker run options...] [-- COMMAND ARGS...]
#
# The options go to `docker run` after this script's own, so they add to them
# (-d, -p 8080:8080, -e CODERUNNER_API_TOKEN=..., --name, -v) or, for a
# setting given once (--memory, --pids-limit, -e of the same variable),
# replace them. After "--" comes the coderunner command the image runs
# instead of "serve --addr 0.0.0.0:8080", e.g. `-- doctor`.
#
# The settings, each the least that works (README, "Deploy"):
#   --user 10001:10001         the image's own user: no root, in or out
#   --cap-drop ALL             no capability: the sandboxes are made in user
#                              namespaces of that user
#   no-new-privileges          nothing in the container gains privileges on exec
#   seccomp=deploy/seccomp.json  Docker's default profile, plus unshare, clone
#                              with namespace flags, mount, pivot_root and the
#                              new mount API (the default allows them only
#                              with CAP_SYS_ADMIN)
#   systempaths=unconfined     /proc without Docker's masks: the kernel lets a
#                              new PID namespace mount its own /proc only where
#                              no part of /proc is covered
#   --read-only, --tmpfs       a read-only root; /tmp and the user's home
#                              (configuration, compile cache, state) on tmpfs
#   --pids-limit               a cap on the processes of the whole executor
#   CODERUNNER_BACKEND_ALLOW_RLIMITS_ONLY=true
#                              a container sees its cgroup read-only (always on
#                              cgroup v1), so each run is limited by rlimits;
#                              the container's --memory and --pids-limit
#                              bound the executor as a whole
#
# Environment: CODERUNNER_EXECUTOR_IMAGE (coderunner/executor:latest).
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)"
image="${CODERUNNER_EXECUTOR_IMAGE:-coderunner/executor:latest}"

opts=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	opts+=("$1")
	shift
done
[ "${1:-}" != "--" ] || shift

exec docker run \
	--user 10001:10001 \
	--cap-drop ALL \
	--security-opt no-new-privileges \
	--security-opt "seccomp=$dir/seccomp.json" \
	--security-opt systempaths=unconfined \
	--read-only \
	--tmpfs /tmp:rw,nosuid,nodev,size=1g \
	--tmpfs /var/lib/coderunner:rw,nosuid,nodev,size=1g,uid=10001,gid=10001,mode=0700 \
	--pids-limit 4096 \
	-e CODERUNNER_BACKEND_ALLOW_RLIMITS_ONLY=true \
	"${opts[@]}" \
	"$image" "$@"
