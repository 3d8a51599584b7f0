#!/usr/bin/env bash
# Fault: SIGKILL of `coderunner serve` in the middle of runs, then a
# restart. A fake control plane on loopback refuses results (503) at first,
# so that four /execute results are spooled in RESULTS_DIR; two long runs
# are in flight when serve is killed with SIGKILL. The script then counts
# what is left on the host (processes in serve's cgroups, run cgroups,
# mounts and files under its work directory), turns the control plane on,
# restarts serve on the same directories and checks that the spooled
# results are re-sent and that nothing of the old runs is left.
# Env: PORT (18590), CP_PORT (18591), NICE (10). Exit 0 when all holds.
source "$(dirname "$0")/loadserve.sh"
CP_PORT="${CP_PORT:-18591}"
PORT="${PORT:-18590}"
start_control_plane fault-kill

# leftovers: processes in serve's cgroups, run cgroups, mounts and files
# under the temporary root (the work directory and RESULTS_DIR).
leftovers() {
	local procs=0 groups=0
	for d in "${CGDIRS[@]}"; do
		procs=$((procs + $(find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | wc -l)))
		[ -d "$d/coderunner" ] && groups=$((groups + $(find "$d/coderunner" -mindepth 1 -type d | wc -l)))
	done
	local mounts files results
	mounts=$(awk -v p="$TMPROOT/work" 'index($5, p) == 1' /proc/self/mountinfo | wc -l)
	files=$(find "$TMPROOT/work" -mindepth 1 | wc -l)
	results=$(find "$TMPROOT/results" -name '*.json' | wc -l)
	echo "processes=$procs cgroups=$groups mounts=$mounts work_files=$files spooled_results=$results"
}
post() {
	curl -sS -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -H "Authorization: Bearer $CODERUNNER_API_TOKEN" \
		--data "$1" "http://127.0.0.1:$PORT/execute"
}

start_server
at_start="$(leftovers)"
echo "at start:        $at_start"
for i in 1 2 3 4; do
	code=$(post "{\"execution_id\":\"spooled-$i\",\"language\":\"python\",\"code\":\"def handler(e):\\n    return $i\\n\"}")
	[ "$code" = 200 ] || { echo "spooled-$i: HTTP $code" >&2; exit 1; }
done
for i in 1 2; do
	post "{\"execution_id\":\"killed-$i\",\"language\":\"python\",\"timeout\":60,\"code\":\"import time\\ndef handler(e):\\n    time.sleep(60)\\n\"}" >/dev/null 2>&1 &
done
for _ in $(seq 1 100); do
	curl -fsS "http://127.0.0.1:$PORT/health" | grep -q '"active_executions":2' && break
	sleep 0.1
done
sleep 1
echo "two runs active: $(leftovers)"
kill -KILL "$SERVER"
wait "$SERVER" 2>/dev/null || true
# A starting server spares run cgroups younger than 10 s (a group another
# process has just made is empty for a moment).
sleep 10
after_kill="$(leftovers)"
echo "after SIGKILL:   $after_kill"

echo 200 >"$cpdir/status"
start_server
for _ in $(seq 1 300); do
	[ "$(find "$TMPROOT/results" -name '*.json' | wc -l)" = 0 ] && break
	sleep 0.1
done
sleep 2
after_restart="$(leftovers)"
echo "after restart:   $after_restart"
resent=$(sort -u "$cpdir/results" 2>/dev/null | grep -c spooled- || true)
echo "spooled results re-sent after the restart: $resent of 4"
ok=true
[ "$resent" = 4 ] || ok=false
# The restarted server holds what the first one held at its start (its
# warm sandboxes), nothing of the killed runs, and no spooled result.
[ "$after_restart" = "$at_start" ] || ok=false
$ok && echo "fault-kill: ok" || { echo "fault-kill: FAILED"; exit 1; }
