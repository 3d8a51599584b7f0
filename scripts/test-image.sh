#!/usr/bin/env bash
# Builds the executor image (make image), starts it with
# deploy/run-container.sh exactly, and drives it from outside, with a
# control plane stand-in on the host (on the docker bridge's address, which
# the container reaches and the sandboxes must not):
#
#   doctor    under Docker's defaults, it names each setting that is missing;
#             with run-container.sh's settings (and its unprivileged ones),
#             native and bwrap work, with a cgroup per run
#   run       `coderunner run` on each backend, in both settings
#   PID 1     coderunner init is PID 1; a serve started as PID 1 without it
#             runs under it anyway
#   ready     the ready callback reaches the control plane
#   /execute  a handler(event) run, its return value, and its result callback
#   /v1/run   every language of the table, a timeout, a memory limit
#             (memory_exceeded), network isolation (user code cannot reach
#             the control plane the executor reaches)
#   /v1/judge a C solution judged on two tests
#   cgroup    user code sees no /sys: the cgroup the init made writable is
#             the executor's alone
#   zombies   none in the container after the runs
#   SIGTERM   with an execution running, `docker stop`: the execution is
#             reported crashed, the exited callback says 143 and sigterm,
#             and the container exits 143 within the grace period (docker
#             stop would kill it, 137, past it)
#
# Usage: scripts/test-image.sh (make test-image). Needs what `make image`
# needs, curl and python3. Env: PORT (18680), CP_PORT (18681),
# TEST_IMAGE_SKIP_BUILD=1 to test the image already built.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${PORT:-18680}"
CP_PORT="${CP_PORT:-18681}"
image="${CODERUNNER_EXECUTOR_IMAGE:-coderunner/executor:latest}"
export CODERUNNER_EXECUTOR_IMAGE="$image"
name="coderunner-test-image-$$"
token="test-image-api-token"
tmp="$(mktemp -d)"
cp=""
start=$SECONDS

cleanup() {
	[ -z "$cp" ] || kill "$cp" 2>/dev/null || true
	docker rm -f "$name" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
	echo "test-image: FAIL: $*" >&2
	if docker inspect "$name" >/dev/null 2>&1; then
		echo "--- the executor's last log lines:" >&2
		docker logs "$name" 2>&1 | tail -20 >&2
	fi
	exit 1
}
pass() { echo "test-image: ok: $*"; }

# field JSON PATH: the value at PATH (dot-separated keys) of a JSON text.
field() {
	/usr/bin/python3 -c 'import json,sys
v = json.loads(sys.argv[1])
for k in sys.argv[2].split("."):
    v = v[k]
print(json.dumps(v) if not isinstance(v, str) else v)' "$1" "$2"
}

# calls PATH_SUFFIX: the bodies the control plane stand-in got on paths
# ending in PATH_SUFFIX, one a line.
calls() {
	/usr/bin/python3 -c 'import json,sys
for line in open(sys.argv[1]):
    c = json.loads(line)
    if c["path"].endswith(sys.argv[2]):
        print(json.dumps(c["body"]))' "$tmp/calls.jsonl" "$1"
}

# wait_for SECONDS CMD...: run CMD until it succeeds, at most SECONDS.
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.2
	done
}

post() { # post PATH BODY
	curl -sS --max-time 60 -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
		--data "$2" "http://127.0.0.1:$PORT$1"
}

if [ "${TEST_IMAGE_SKIP_BUILD:-}" != 1 ]; then
	build=$SECONDS
	scripts/build-executor-image.sh
	echo "test-image: the image built in $((SECONDS - build)) s"
else
	scripts/start-dockerd.sh
fi

# --- doctor
out="$(docker run --rm "$image" doctor 2>&1 || true)"
for want in "systempaths=unconfined" "seccomp=deploy/seccomp.json" "--backend auto: no backend works here"; do
	grep -qF -- "$want" <<<"$out" || fail "doctor under Docker's defaults does not say $want:
$out"
done
pass "doctor under Docker's defaults names the missing settings"
for unprivileged in 0 1; do
	out="$(CODERUNNER_CONTAINER_UNPRIVILEGED=$unprivileged deploy/run-container.sh --rm -- doctor 2>&1)" ||
		fail "doctor with run-container.sh's settings (unprivileged=$unprivileged) exited $?:
$out"
	want=("native: available" "bwrap: available" "--backend auto uses: native" "[ok  ] /proc: not masked" "[ok  ] user namespaces")
	[ "$unprivileged" = 1 ] || want+=("[ok  ] cgroups: cgroup v" "[ok  ] cgroup: mounted read-write")
	for w in "${want[@]}"; do
		grep -qF -- "$w" <<<"$out" || fail "doctor with run-container.sh's settings (unprivileged=$unprivileged) lacks $w:
$out"
	done
	for b in native bwrap; do
		res="$(echo 'print(6 * 7)' | CODERUNNER_CONTAINER_UNPRIVILEGED=$unprivileged deploy/run-container.sh --rm -i -- run --json --backend "$b" --lang python - 2>/dev/null)" ||
			fail "run --backend $b in the container (unprivileged=$unprivileged): $res"
		[ "$(field "$res" stdout)" = 42 ] && [ "$(field "$res" backend)" = "$b" ] || fail "run --backend $b (unprivileged=$unprivileged): $res"
	done
done
pass "doctor and run with run-container.sh's settings, and its unprivileged ones: native and bwrap work"

# --- PID 1 without init: serve started as PID 1 runs itself again under
# the init, so PID 1 has one child, serve, and docker stop ends in 143.
CODERUNNER_CONTAINER_UNPRIVILEGED=1 deploy/run-container.sh -d --name "$name" \
	--entrypoint /usr/local/bin/coderunner -e CODERUNNER_API_TOKEN="$token" -- serve --addr 0.0.0.0:8080 >/dev/null
wait_for 30 docker exec "$name" sh -c 'grep -q "^PPid:[[:space:]]*1$" /proc/[0-9]*/status' ||
	fail "serve as PID 1 started no child"
children="$(docker exec "$name" sh -c 'for s in /proc/[0-9]*/status; do
	grep -q "^PPid:[[:space:]]*1$" "$s" && tr "\0" " " <"${s%/status}/cmdline" && echo; done; true')"
[ "$(grep -c ' serve ' <<<"$children")" = 1 ] || fail "PID 1's children: $children"
docker stop -t 20 "$name" >/dev/null
status="$(docker inspect --format '{{.State.ExitCode}}' "$name")"
docker rm -f "$name" >/dev/null
[ "$status" = 143 ] || fail "serve as PID 1: exit $status after docker stop, want 143"
pass "serve started as PID 1 runs under the init (its child: $children), exit 143 on docker stop"

# --- the control plane stand-in, on the bridge's address
gw="$(docker network inspect bridge --format '{{(index .IPAM.Config 0).Gateway}}')"
[ -n "$gw" ] || fail "no address of the docker bridge"
: >"$tmp/calls.jsonl"
/usr/bin/python3 - "$gw" "$CP_PORT" "$tmp/calls.jsonl" <<'PY' &
import http.server, json, sys, threading
host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lock = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        ok = self.headers.get("Authorization") == "Bearer test-image-internal-token"
        with lock, open(path, "a") as f:
            f.write(json.dumps({"path": self.path, "auth": ok, "body": json.loads(body or b"null")}) + "\n")
        self.send_response(200 if ok else 401)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer((host, port), H).serve_forever()
PY
cp=$!

# --- the executor
deploy/run-container.sh -d --name "$name" -p "127.0.0.1:$PORT:8080" \
	-e CODERUNNER_API_TOKEN="$token" \
	-e CONTROL_PLANE_URL="http://$gw:$CP_PORT" -e INTERNAL_API_TOKEN=test-image-internal-token \
	-e CONTAINER_ID=test-image -e POD_NAME=test-image-pod >/dev/null
wait_for 60 curl -fsS "http://127.0.0.1:$PORT/health" || fail "the executor did not become healthy"
pass "healthy: $(curl -fsS "http://127.0.0.1:$PORT/health")"
wait_for 20 grep -q '/internal/containers/test-image/ready' "$tmp/calls.jsonl" || fail "no ready callback"
ready="$(calls /ready)"
[ "$(field "$ready" executor_port)" = 8080 ] && [ "$(field "$ready" pod_name)" = test-image-pod ] ||
	fail "ready callback $ready"
pass "ready callback: $ready"
pid1="$(docker exec "$name" cat /proc/1/cmdline | tr '\0' ' ')"
[[ "$pid1" == "/usr/local/bin/coderunner init "*"-- /usr/local/bin/coderunner serve "* ]] || fail "PID 1 is $pid1"
pass "PID 1: $pid1"

# --- /execute: a handler
res="$(post /execute '{"execution_id":"image-handler","language":"python","event":{"a":2,"b":3},"code":"def handler(event):\n    return {\"sum\": event[\"a\"] + event[\"b\"]}\n"}')"
[ "$(field "$res" status)" = success ] && [ "$(field "$res" return_value.sum)" = 5 ] || fail "/execute handler: $res"
wait_for 20 grep -q '/internal/executions/image-handler/result' "$tmp/calls.jsonl" || fail "no result callback for image-handler"
pass "/execute handler: return_value $(field "$res" return_value), result reported"

# --- /v1/run: a program, a timeout, a memory limit, the network
/usr/bin/python3 - "$PORT" "$token" <<'PY' || fail "/v1/run: a language failed"
import json, sys, urllib.request
programs = {
    "python": "print(42)", "python3": "print(42)", "javascript": "console.log(42)", "bash": "echo 42",
    "c": "#include <stdio.h>\nint main(void) { printf(\"42\\n\"); return 0; }\n",
    "cpp": "#include <iostream>\nint main() { std::cout << 42 << std::endl; }\n",
    "java": "public class Main { public static void main(String[] a) { System.out.println(42); } }\n",
    "go": "package main\nimport \"fmt\"\nfunc main() { fmt.Println(42) }\n",
    "rust": "fn main() { println!(\"42\"); }\n",
}
port, token = sys.argv[1], sys.argv[2]
failed = 0
for lang, code in programs.items():
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/run", data=json.dumps({"language": lang, "code": code}).encode(),
                                 headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    r = json.load(urllib.request.urlopen(req, timeout=120))
    ok = r["status"] == "success" and r["stdout"] == "42\n" and r["backend"] == "native"
    failed += not ok
    print(f"test-image:     {lang}: {r['status']} in {r['execution_time']} s" + ("" if ok else f" FAILED: {r['error_message']} {r['stderr'][:400]}"))
sys.exit(1 if failed else 0)
PY
pass "/v1/run: all nine languages"
res="$(post /v1/run '{"language":"python","code":"while True:\n    pass\n","timeout":1}')"
[ "$(field "$res" status)" = timeout ] || fail "/v1/run timeout: $res"
pass "/v1/run timeout: $(field "$res" error_message)"
res="$(post /v1/run '{"language":"python","code":"b = bytearray(256 * 1024 * 1024)\nprint(\"allocated\", len(b))\n","limits":{"memory_limit":64}}')"
[ "$(field "$res" status)" = execution_error ] && [ "$(field "$res" memory_exceeded)" = true ] &&
	! grep -q allocated <<<"$(field "$res" stdout)" || fail "/v1/run over its memory limit: $res"
pass "/v1/run memory: 256 MB under a 64 MB limit: $(field "$res" error_message) (memory_exceeded true)"
res="$(post /v1/judge '{"request_id":"image-judge","language":"c","code":"#include <stdio.h>\nint main(void) { int a, b; scanf(\"%d %d\", &a, &b); printf(\"%d\\n\", a + b); return 0; }\n","test_cases":[{"id":"t1","input":"1 2\n","expected_output":"3\n"},{"id":"t2","input":"5 5","expected_output":"10"}]}')"
[ "$(field "$res" status)" = all_passed ] || fail "/v1/judge: $res"
pass "/v1/judge: C on two tests, $(field "$res" status)"
code="import socket
s = socket.socket()
s.settimeout(5)
try:
    s.connect((\"$gw\", $CP_PORT))
    print(\"connected\")
except OSError as e:
    print(\"refused:\", e)
"
res="$(post /v1/run "$(/usr/bin/python3 -c 'import json,sys; print(json.dumps({"language": "python", "code": sys.argv[1]}))' "$code")")"
out="$(field "$res" stdout)"
grep -q '^refused:' <<<"$out" && ! grep -q connected <<<"$out" || fail "user code reached the control plane at $gw:$CP_PORT: $res"
pass "network: user code cannot reach $gw:$CP_PORT, which the executor reaches ($out)"

# --- the cgroup the init made writable is the executor's, not user code's
res="$(post /v1/run '{"language":"python","code":"import os\nprint(os.path.exists(\"/sys/fs/cgroup\"), os.path.exists(\"/sys\"))\n"}')"
[ "$(field "$res" stdout)" = "False False" ] || fail "user code sees the cgroup file system: $res"
pass "user code sees no /sys, so no cgroup file system"

# --- no orphan left a zombie: whatever a sandbox leaves when it ends comes
# to PID 1, the init, which must reap it (at once; 10 s is a bound, not a
# measure). Zombies of other parents are listed, not judged: after a judge
# the sandbox it keeps for its next test was seen holding one exited child
# of its own init, which is the native backend's to reap.
zombies() {
	docker exec "$name" sh -c 'for s in /proc/[0-9]*/status; do
		grep -q "^State:[[:space:]]*Z" "$s" 2>/dev/null || continue
		pp=$(sed -n "s/^PPid:[[:space:]]*//p" "$s")
		echo "$(sed -n "s/^Pid:[[:space:]]*//p" "$s") ($(sed -n "s/^Name:[[:space:]]*//p" "$s")), child of $pp: $(tr "\0" " " <"/proc/$pp/cmdline")"
	done; true'
}
orphans() { zombies | grep -q ', child of 1: ' && return 1 || return 0; }
wait_for 10 orphans || fail "zombies the init did not reap: $(zombies)"
pass "no zombie of the init's (others: $(zombies | wc -l)$(zombies | sed 's/^/; /' | tr -d '\n'))"

# --- SIGTERM with an execution running
post /execute '{"execution_id":"image-sigterm","language":"python","timeout":120,"code":"import time\ndef handler(event):\n    time.sleep(120)\n"}' >"$tmp/sigterm.json" 2>&1 &
running=$!
wait_for 30 sh -c "curl -fsS http://127.0.0.1:$PORT/health | grep -q '\"active_executions\":1'" || fail "the long execution did not start"
stop=$SECONDS
docker stop -t 20 "$name" >/dev/null
took=$((SECONDS - stop))
wait "$running" 2>/dev/null || true
status="$(docker inspect --format '{{.State.ExitCode}}' "$name")"
[ "$status" = 143 ] || fail "exit status $status after SIGTERM, want 143 (137: killed after the grace period)"
pass "SIGTERM: exit 143 in $took s (grace period 20 s)"
crashed="$(calls /executions/image-sigterm/result)"
[ "$(field "$crashed" status)" = crashed ] || fail "the running execution was reported as: $crashed"
pass "SIGTERM: the running execution reported $(field "$crashed" status)"
exited="$(calls /internal/containers/test-image/exited)"
[ "$(field "$exited" exit_code)" = 143 ] && [ "$(field "$exited" exit_reason)" = sigterm ] || fail "exited callback: $exited"
pass "SIGTERM: exited callback $exited"
grep -q '"auth": false' "$tmp/calls.jsonl" && fail "a callback without the internal token"

echo "test-image: ok in $((SECONDS - start)) s"
