#!/usr/bin/env bash
# coderunner next to go-judge and bare fork/exec, over HTTP on loopback, in
# one interleaved run (sandboxbench -peers): a trivial bash script, a Python
# print(1), a C hello-world compiled once, and a 50-test C judge with its
# compile; c=1 p50/p95, c=2 requests/s and whole-machine CPU per request,
# with the ratios coderunner/go-judge and each/bare.
#
# Both servers run warm with the same parallelism (one run per core):
#   coderunner serve --addr 127.0.0.1:$CR_PORT --max-concurrent $CORES
#     (two sandboxes started ahead, as serve always has)
#   $GOJUDGE -http-addr 127.0.0.1:$GJ_PORT -parallelism $CORES
#     -pre-fork $CORES -silent
#     (started in an empty directory, so that its default mounts apply)
# go-judge is optional: without GOJUDGE the table says it is missing.
# Needs root (both sandboxes), gcc and /usr/bin/python3.
# Env: GOJUDGE (path to the go-judge binary), N (requests per row at c=1,
# default 100), JUDGE_N (judge requests per row, default N/10, at least 5),
# CR_PORT (18590), GJ_PORT (18591).
set -euo pipefail
cd "$(dirname "$0")/.."
GO="$(command -v go || echo /usr/local/go/bin/go)"
CR_PORT="${CR_PORT:-18590}"
GJ_PORT="${GJ_PORT:-18591}"
N="${N:-100}"
CORES="$(nproc)"
"$GO" build -o bin/coderunner ./cmd/coderunner
"$GO" build -o bin/sandboxbench ./tools/sandboxbench

TMPROOT="$(mktemp -d /tmp/coderunner-peers.XXXXXX)"
mkdir -p "$TMPROOT/work" "$TMPROOT/results" "$TMPROOT/gojudge"
CR=""
GJ=""
stop() { # stop PID: TERM, then KILL after 10 s
	[ -n "$1" ] || return 0
	kill -TERM "$1" 2>/dev/null || return 0
	for _ in $(seq 1 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
	kill -KILL "$1" 2>/dev/null || true
}
cleanup() {
	stop "$CR"
	stop "$GJ"
	rm -rf "$TMPROOT"
}
trap cleanup EXIT

# wait_up NAME PID URL LOG: until URL answers, or fail with the log.
wait_up() {
	for _ in $(seq 1 300); do
		if curl -fsS -o /dev/null "$3" 2>/dev/null; then
			return 0
		fi
		if ! kill -0 "$2" 2>/dev/null; then
			echo "$1 exited:" >&2
			cat "$4" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "$1 did not answer at $3" >&2
	cat "$4" >&2
	return 1
}

env CODERUNNER_BACKEND_WORK_DIR="$TMPROOT/work" RESULTS_DIR="$TMPROOT/results" \
	bin/coderunner serve --addr "127.0.0.1:$CR_PORT" --max-concurrent "$CORES" 2>"$TMPROOT/serve.log" &
CR=$!
wait_up "coderunner serve" "$CR" "http://127.0.0.1:$CR_PORT/health" "$TMPROOT/serve.log"
args=(-peers -coderunner "http://127.0.0.1:$CR_PORT" -n "$N")
if [ -n "${JUDGE_N:-}" ]; then
	args+=(-judge-n "$JUDGE_N")
fi

if [ -n "${GOJUDGE:-}" ]; then
	if [ ! -x "$GOJUDGE" ]; then
		echo "GOJUDGE=$GOJUDGE is not an executable file" >&2
		exit 1
	fi
	gj="$(realpath "$GOJUDGE")"
	(cd "$TMPROOT/gojudge" && exec "$gj" -http-addr "127.0.0.1:$GJ_PORT" -parallelism "$CORES" \
		-pre-fork "$CORES" -silent) 2>"$TMPROOT/gojudge.log" &
	GJ=$!
	wait_up go-judge "$GJ" "http://127.0.0.1:$GJ_PORT/version" "$TMPROOT/gojudge.log"
	echo "go-judge: $(curl -fsS "http://127.0.0.1:$GJ_PORT/version")"
	args+=(-gojudge "http://127.0.0.1:$GJ_PORT")
else
	echo "go-judge: missing (set GOJUDGE=/path/to/go-judge; README, Performance, tells how to build it)"
fi
echo "coderunner: $(bin/coderunner version 2>/dev/null | head -1), $(curl -fsS "http://127.0.0.1:$CR_PORT/health")"
bin/sandboxbench "${args[@]}"
