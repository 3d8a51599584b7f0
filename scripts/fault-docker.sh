#!/usr/bin/env bash
# Fault: the Docker engine killed (SIGKILL) in the middle of a judge, then
# restarted. The script starts a private engine of its own (its own
# socket, data root, exec root and containerd; no bridge, no iptables:
# the shared engine is never touched), imports into it a 5 MB image made
# from the host's bash, dash and a few coreutils, and starts `coderunner
# serve --backend docker` on it. A /v1/judge of TESTS bash tests (each
# sleeps 1 s, two at a time) is sent; once a container of it runs, dockerd
# is killed with SIGKILL. The script times the judge's answer, checks its
# verdict (sandbox_error naming the engine, never a hang, a panic or
# accepted), restarts the engine, times the first judge that passes
# again through the same serve, and counts what is left: containers of
# the killed judge once the backend had time to clean up, processes
# in serve's cgroups, mounts and files under its work directory. The
# engine is stopped and its data root removed at exit, whatever happens.
# Env: PORT (18594), TESTS (6), NICE (10), BOUND (60: seconds the judge
# may take to answer after the kill). Exit 0 when all holds.
source "$(dirname "$0")/loadserve.sh"
PORT="${PORT:-18594}"
TESTS="${TESTS:-6}"
BOUND="${BOUND:-60}"
SOCK=/run/docker-fault.sock
ENGINE="unix://$SOCK"
DATA=/var/lib/docker-fault
EXEC=/run/docker-fault
PIDFILE=/run/docker-fault.pid
IMAGE=coderunner-fault/bash:1
ENGINE_PID=""
dk() { docker -H "$ENGINE" "$@"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f s", b - a }'; }

start_engine() {
	dockerd --host "$ENGINE" --data-root "$DATA" --exec-root "$EXEC" --pidfile "$PIDFILE" \
		--bridge none --iptables=false --ip6tables=false >>"$TMPROOT/dockerd.log" 2>&1 &
	ENGINE_PID=$!
	disown "$ENGINE_PID"
	for _ in $(seq 1 300); do
		dk version >/dev/null 2>&1 && return 0
		kill -0 "$ENGINE_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "the private engine did not start:" >&2
	tail -5 "$TMPROOT/dockerd.log" >&2
	return 1
}

# engine_procs: the pids of every process of the private engine (dockerd,
# its containerd, the shims and what runs in the containers), found by
# the engine's own paths in their command lines and by parentage.
engine_procs() {
	local p pids=()
	for p in /proc/[0-9]*; do
		{ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -qE "($SOCK|$EXEC/)" && pids+=("${p#/proc/}")
	done
	for p in "${pids[@]}"; do
		echo "$p"
		ps -o pid= --ppid "$p" 2>/dev/null || true
	done | sort -un
}

# stray_shims: containerd shims of the private engine whose container the
# engine no longer knows (its containerd was killed under them).
stray_shims() {
	local known p id n=0
	known=$(dk ps -aq --no-trunc 2>/dev/null || true)
	for p in $(engine_procs); do
		id=$({ tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | sed -n 's/.*containerd-shim.* -id \([0-9a-f]*\) .*/\1/p')
		[ -n "$id" ] && ! grep -qx "$id" <<<"$known" && n=$((n + 1))
	done
	echo "$n"
}

stop_engine() {
	if dk version >/dev/null 2>&1; then
		ids=$(dk ps -aq)
		[ -z "$ids" ] || dk rm -f $ids >/dev/null 2>&1 || true
	fi
	if [ -n "$ENGINE_PID" ] && kill -0 "$ENGINE_PID" 2>/dev/null; then
		kill -TERM "$ENGINE_PID" 2>/dev/null || true
		for _ in $(seq 1 200); do kill -0 "$ENGINE_PID" 2>/dev/null || break; sleep 0.1; done
	fi
	# A killed engine leaves its containerd's shims (and what they hold).
	for p in $(engine_procs); do kill -KILL "$p" 2>/dev/null || true; done
	awk -v d="$DATA" -v e="$EXEC" 'index($5, d) == 1 || index($5, e) == 1 { print $5 }' /proc/self/mountinfo |
		sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
	rm -rf "$DATA" "$EXEC" "$PIDFILE" "$SOCK"
}
trap 'cleanup; stop_engine' EXIT

# Nothing of an earlier run of this script may be about.
if [ -e "$SOCK" ] || [ -e "$DATA" ] || [ -e "$EXEC" ]; then
	echo "$SOCK, $DATA or $EXEC exists: another run of this script? remove them first" >&2
	trap - EXIT
	cleanup
	exit 1
fi

# The image: bash, dash as /bin/sh, and what the backend's prelude and
# the tests use, with their libraries, from the host.
t=$(now)
root="$TMPROOT/rootfs"
mkdir -p "$root"/usr/bin "$root"/usr/lib "$root"/usr/lib64 "$root"/etc "$root"/tmp "$root"/workspace
ln -s usr/bin "$root/bin"
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
for p in bash dash env sleep cat rm tar true; do
	f=$(readlink -f "$(type -P "$p")")
	cp "$f" "$root/usr/bin/$p"
	for l in $(ldd "$f" | grep -o '/[^ ]*'); do cp -n --parents -L "$l" "$root"; done
done
ln -s dash "$root/usr/bin/sh"
echo 'root:x:0:0::/:/bin/sh' >"$root/etc/passwd"
start_engine
tar -C "$root" -c . | dk import - "$IMAGE" >/dev/null
echo "private engine and image: $(since "$t"), image $(dk image inspect -f '{{.Size}}' "$IMAGE" | awk '{ printf "%.1f MB", $1 / 1e6 }')"

cat >"$TMPROOT/config.yaml" <<EOF
docker:
  host: $ENGINE
  pull_policy: never
languages:
  bash: {image: "$IMAGE"}
EOF
export CODERUNNER_CONFIG="$TMPROOT/config.yaml"
start_server --backend docker

leftovers() {
	local procs=0
	for d in "${CGDIRS[@]}"; do
		procs=$((procs + $(find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u | grep -vx "$SERVER" | wc -l)))
	done
	local mounts files containers
	mounts=$(awk -v p="$TMPROOT/work" 'index($5, p) == 1' /proc/self/mountinfo | wc -l)
	files=$(find "$TMPROOT/work" -mindepth 1 | wc -l)
	containers=$(dk ps -aq --filter label=coderunner.backend=docker 2>/dev/null | wc -l) || containers="?"
	dk version >/dev/null 2>&1 || containers="?"
	echo "containers=$containers processes_beside_serve=$procs work_mounts=$mounts work_files=$files"
}
# judge_body N: a judge of N bash tests, each reads a number, sleeps 1 s
# and prints its double.
judge_body() {
	/usr/bin/python3 - "$1" <<'PY'
import json, sys
n = int(sys.argv[1])
print(json.dumps({"language": "bash", "code": "read x\nsleep 1\necho $((x * 2))\n",
    "timeout_ms": 10000, "total_timeout_ms": 120000,
    "test_cases": [{"id": str(i), "input": f"{i}\n", "expected_output": f"{2 * i}\n"} for i in range(1, n + 1)]}))
PY
}
judge() {
	curl -sS -m $((BOUND + 60)) -o "$1" -w '%{http_code}' -H 'Content-Type: application/json' \
		--data "$(judge_body "$TESTS")" "http://127.0.0.1:$PORT/v1/judge"
}
verdict() {
	/usr/bin/python3 - "$1" <<'PY'
import json, sys, collections
r = json.load(open(sys.argv[1]))
c = collections.Counter(t["status"] for t in r.get("test_results") or [])
e = (r.get("error_info") or {}).get("message", "")
print(f'status={r["status"]} tests={dict(c)} error_info={e[:160]!r}')
for t in r.get("test_results") or []:
    if t["status"] != "passed":
        print(f'  test {t["test_id"]}: {t["status"]} output {t.get("actual_output")!r} error {(t.get("error_message") or "")[:300]!r}')
PY
}

t=$(now)
code=$(judge "$TMPROOT/warm.json")
echo "judge before the fault: HTTP $code in $(since "$t"), $(verdict "$TMPROOT/warm.json")"
# Containers are removed in the background once their run ended.
for _ in $(seq 1 100); do
	[ -z "$(dk ps -aq --filter label=coderunner.backend=docker)" ] && break
	sleep 0.1
done
at_start="$(leftovers)"
echo "at start:        $at_start"

judge "$TMPROOT/killed.json" >"$TMPROOT/killed.code" &
JUDGE=$!
for _ in $(seq 1 200); do
	[ -n "$(dk ps -q --filter label=coderunner.backend=docker --filter status=running)" ] && break
	sleep 0.05
done
sleep 1.5
echo "before the kill: $(dk ps -a --filter label=coderunner.backend=docker --format '{{.Status}}' | sort | uniq -c | awk '{ $1 = $1; printf "%s; ", $0 }')"
killed_at=$(now)
kill -KILL "$(cat "$PIDFILE")"
answered=""
for _ in $(seq 1 $((BOUND * 10))); do
	kill -0 "$JUDGE" 2>/dev/null || { answered=$(since "$killed_at"); break; }
	sleep 0.1
done
if [ -z "$answered" ]; then
	echo "the judge did not answer within $BOUND s of the kill" >&2
	kill "$JUDGE" 2>/dev/null || true
	echo "fault-docker: FAILED"
	exit 1
fi
wait "$JUDGE" || true
code=$(cat "$TMPROOT/killed.code")
v=$(verdict "$TMPROOT/killed.json")
echo "judge answered $answered after the kill: HTTP $code, $v"
kill -0 "$SERVER" 2>/dev/null && serve_alive=yes || serve_alive=no
panics=$(grep -c -E 'panic|goroutine [0-9]+ \[' "$TMPROOT/serve.log" || true)
echo "serve alive: $serve_alive, panics in its log: $panics"
echo "engine down:     $(leftovers)"
ENGINE_PID=""
echo "engine processes left by the kill: $(engine_procs | wc -l) (containerd shims and what they hold)"

t=$(now)
start_engine
echo "engine restarted in $(since "$t"): $(dk ps -a --filter label=coderunner.backend=docker --format '{{.Status}}' | sort | uniq -c | awk '{ $1 = $1; printf "%s; ", $0 }')"
recovered=""
attempts=0
for _ in $(seq 1 30); do
	attempts=$((attempts + 1))
	c=$(judge "$TMPROOT/after.json")
	if [ "$c" = 200 ] && grep -q '"status": *"all_passed"' "$TMPROOT/after.json"; then
		recovered=$(since "$t")
		break
	fi
	sleep 1
done
echo "first passing judge after the restart: ${recovered:-none} from the restart (attempt $attempts), $(verdict "$TMPROOT/after.json")"
# The backend removes what it could not while the engine was down.
for _ in $(seq 1 100); do
	[ -z "$(dk ps -aq --filter label=coderunner.backend=docker)" ] && break
	sleep 0.1
done
after="$(leftovers)"
echo "after recovery:  $after"
echo "engine's own leftovers: $(stray_shims) containerd shim(s) of containers the restarted engine no longer knows"

ok=true
[ "$code" = 200 ] || ok=false
echo "$v" | grep -q '^status=sandbox_error ' || ok=false
echo "$v" | grep -q 'Docker engine at' || ok=false
echo "$v" | grep -qE "'(failed|wrong_answer)'" && ok=false
[ "$serve_alive" = yes ] && [ "$panics" = 0 ] || ok=false
[ -n "$recovered" ] || ok=false
# Nothing of the killed judge: what serve held after its first judge.
[ "$after" = "$at_start" ] || ok=false
$ok && echo "fault-docker: ok" || { echo "fault-docker: FAILED"; exit 1; }
