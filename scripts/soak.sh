#!/usr/bin/env bash
# Soak: mixed load (hello, endless loop, fork bomb, memory hog) at low
# concurrency (C, default 2) for a duration (first argument, default 30m)
# against `coderunner serve` on loopback, sampling the server's RSS and fds
# every SAMPLE (default 30s) and reporting their slope per hour; at the end
# it checks that no child process, run cgroup, mount, or file under the work
# and results directories is left, and that no tmpfs is left in the host's
# mount table under them. Extra arguments go to serve.
# Env: C, SAMPLE, PORT (18580), NICE (10).
soak_for="${1:-30m}"
shift || true
source "$(dirname "$0")/loadserve.sh"
start_server "$@"
bin/loadtest -url "http://127.0.0.1:$PORT" -pid "$SERVER" -dirs "$TMPROOT/work,$TMPROOT/results" -kept 16 \
	-duration "$soak_for" -c "${C:-2}" -retry -sample "${SAMPLE:-30s}"
