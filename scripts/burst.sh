#!/usr/bin/env bash
# Burst: N mixed requests (hello, endless loop, fork bomb, memory hog; default
# 1000) at concurrency C (default 50) against `coderunner serve` on loopback.
# Every answer must be 200 with the right verdict or 503 with Retry-After;
# the clients honour Retry-After, so every request must end with a correct
# result. The server's RSS, fds, child processes, run cgroups, and the mounts
# and files under its work and results directories are measured before and
# after. Extra arguments go to serve (e.g. --queue-size 10).
# Env: N, C, PORT (18580), NICE (10). Prints the load tool's JSON report.
source "$(dirname "$0")/loadserve.sh"
start_server "$@"
bin/loadtest -url "http://127.0.0.1:$PORT" -pid "$SERVER" -dirs "$TMPROOT/work,$TMPROOT/results" -kept 16 \
	-n "${N:-1000}" -c "${C:-50}" -retry -sample 5s
