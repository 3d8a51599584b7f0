#!/usr/bin/env bash
# Runs the executor image with the settings of a pod of
# deploy/kubernetes/deployment.yaml, as far as Docker can give them, and
# drives it from outside:
#
#   scripts/test-pod-settings.sh [default|unprivileged]
#
# default       root with the Deployment's seven capabilities (those of
#               deploy/run-container.sh but SYS_NICE), its command
#               (coderunner init --writable-cgroup -- coderunner serve), no
#               rlimits opt-out: every language of /v1/run, a memory limit
#               reported as memory_exceeded (a cgroup per run), a C
#               solution judged on two tests, /execute in Python and
#               JavaScript
# unprivileged  the variant deploy/kubernetes/unprivileged: uid 10001, no
#               capability, the opt-out: Python, shell, C and C++ run (a C
#               solution judged too); JavaScript, Java, Go and Rust fail
#               under the address-space rlimit
#
# Both: the pod's seccomp profile (deploy/seccomp.json), an unmasked /proc
# (procMount: Unmasked), AppArmor unconfined, no_new_privs, a read-only
# root, writable /tmp, /run, /var/cache and /var/lib/coderunner/results as
# the pod's emptyDirs (mode 0777), config.yaml and drain.sh mounted at
# /etc/coderunner, the pod's variables, its memory and CPU limits, and a
# private cgroup namespace, as runtimes give on cgroup v2. What Docker does
# not give is the pod's user namespace: here root is the host's root, with
# those capabilities (deploy/kubernetes/README.md says what a user
# namespace changes). manifests_test.go holds the manifests to the same
# settings.
#
# Needs a Docker engine, the image (make image), curl and python3.
# Env: CODERUNNER_EXECUTOR_IMAGE (coderunner/executor:latest), PORT (18690).
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-default}"
image="${CODERUNNER_EXECUTOR_IMAGE:-coderunner/executor:latest}"
PORT="${PORT:-18690}"
name="coderunner-pod-settings-$$"
token="pod-settings-api-token"
start=$SECONDS

cleanup() { docker rm -f "$name" >/dev/null 2>&1 || true; }
trap cleanup EXIT

fail() {
	echo "test-pod-settings ($mode): FAIL: $*" >&2
	docker logs "$name" 2>&1 | tail -20 >&2 || true
	exit 1
}
pass() { echo "test-pod-settings ($mode): ok: $*"; }

bin=/usr/local/bin/coderunner
case "$mode" in
default)
	user=0:0
	caps=()
	for c in SYS_ADMIN SETUID SETGID CHOWN FOWNER DAC_OVERRIDE SYS_PTRACE; do
		caps+=(--cap-add "$c")
	done
	init=(init --writable-cgroup -- "$bin")
	extra=()
	;;
unprivileged)
	user=10001:10001
	caps=()
	init=(init -- "$bin")
	extra=(-e CODERUNNER_BACKEND_ALLOW_RLIMITS_ONLY=true -e XDG_CACHE_HOME=/tmp/cache)
	;;
*)
	echo "usage: scripts/test-pod-settings.sh [default|unprivileged]" >&2
	exit 2
	;;
esac

# The pod's CPU limit, or as many CPUs as there are.
cpus=$(($(nproc) < 4 ? $(nproc) : 4))
scripts/start-dockerd.sh
docker run -d --name "$name" -p "127.0.0.1:$PORT:8080" \
	--user "$user" --cap-drop ALL "${caps[@]}" \
	--security-opt no-new-privileges \
	--security-opt "seccomp=$PWD/deploy/seccomp.json" \
	--security-opt systempaths=unconfined \
	--security-opt apparmor=unconfined \
	--cgroupns=private \
	--read-only \
	--tmpfs /tmp:rw,exec,size=8g,mode=0777 \
	--tmpfs /run:rw,exec,size=64m,mode=0777 \
	--tmpfs /var/cache:rw,exec,size=1g,mode=0777 \
	--tmpfs /var/lib/coderunner/results:rw,exec,size=512m,mode=0777 \
	-v "$PWD/deploy/kubernetes/config.yaml:/etc/coderunner/config.yaml:ro" \
	-v "$PWD/deploy/kubernetes/drain.sh:/etc/coderunner/drain.sh:ro" \
	--memory 6g --cpus "$cpus" \
	-e CODERUNNER_CONFIG=/etc/coderunner/config.yaml \
	-e CODERUNNER_API_TOKEN="$token" -e INTERNAL_API_TOKEN=pod-settings-internal-token \
	-e POD_NAME=pod-settings -e CONTAINER_ID=pod-settings \
	-e RESULTS_DIR=/var/lib/coderunner/results \
	-e CONTROL_PLANE_URL=http://127.0.0.1:9 \
	"${extra[@]}" \
	--entrypoint "$bin" "$image" "${init[@]}" serve >/dev/null

for _ in $(seq 300); do
	curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
	[ "$(docker inspect --format '{{.State.Running}}' "$name")" = true ] || fail "the executor exited"
	sleep 0.2
done
curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null || fail "the executor did not become healthy"
pass "healthy as $(docker exec "$name" id -u) under $(docker exec "$name" cat /proc/1/cmdline | tr '\0' ' ')"

/usr/bin/python3 - "$PORT" "$token" "$mode" <<'PY' || fail "a request did not do what the mode promises"
import json, sys, urllib.request
port, token, mode = sys.argv[1], sys.argv[2], sys.argv[3]

def post(path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=180))

programs = {
    "python": "print(42)", "python3": "print(42)", "bash": "echo 42", "javascript": "console.log(42)",
    "c": "#include <stdio.h>\nint main(void) { printf(\"42\\n\"); return 0; }\n",
    "cpp": "#include <iostream>\nint main() { std::cout << 42 << std::endl; }\n",
    "java": "public class Main { public static void main(String[] a) { System.out.println(42); } }\n",
    "go": "package main\nimport \"fmt\"\nfunc main() { fmt.Println(42) }\n",
    "rust": "fn main() { println!(\"42\"); }\n",
}
# What the mode promises runs. Under rlimits alone the address space
# stands for memory, which Node.js, the JVM and Go do not survive and
# rustc survives only now and then (whether its libraries' mappings fit
# varies): those may go either way, and are reported, not judged.
runs = set(programs) if mode == "default" else {"python", "python3", "bash", "c", "cpp"}
failed = 0
for lang, code in programs.items():
    r = post("/v1/run", {"language": lang, "code": code})
    ok = r["status"] == "success" and r["stdout"] == "42\n"
    want = lang in runs
    failed += want and not ok
    print(f"test-pod-settings ({mode}):     {lang}: {r['status']} in {r['execution_time']} s"
          + ("" if ok or not want else f" UNEXPECTED (want success): {r['error_message']} {r['stderr'][:300]}")
          + ("" if want else " (may go either way under rlimits alone)"))

r = post("/v1/run", {"language": "python", "code": "b = bytearray(256 * 1024 * 1024)\nprint(len(b))\n",
                     "limits": {"memory_limit": 64}})
if mode == "default":
    ok = r["memory_exceeded"] is True
else:
    ok = r["status"] != "success"
failed += not ok
print(f"test-pod-settings ({mode}):     256 MB under a 64 MB limit: {r['status']}, memory_exceeded {r['memory_exceeded']}"
      + ("" if ok else " UNEXPECTED"))

r = post("/v1/judge", {"request_id": "pod-settings-judge", "language": "c",
                       "code": "#include <stdio.h>\nint main(void) { int a, b; scanf(\"%d %d\", &a, &b); printf(\"%d\\n\", a + b); return 0; }\n",
                       "test_cases": [{"id": "t1", "input": "1 2\n", "expected_output": "3\n"},
                                      {"id": "t2", "input": "5 5", "expected_output": "10"}]})
ok = r["status"] == "all_passed"
failed += not ok
print(f"test-pod-settings ({mode}):     /v1/judge c: {r['status']}" + ("" if ok else f" UNEXPECTED: {r}"))

handlers = {"python": "def handler(event):\n    return {\"sum\": event[\"a\"] + event[\"b\"]}\n",
            "javascript": "function handler(event) { return {sum: event.a + event.b}; }\n"}
for lang, code in handlers.items():
    r = post("/execute", {"execution_id": f"pod-settings-{lang}", "language": lang, "event": {"a": 2, "b": 3}, "code": code})
    ok = r["status"] == "success" and (r.get("return_value") or {}).get("sum") == 5
    want = mode == "default" or lang == "python"
    failed += ok != want
    print(f"test-pod-settings ({mode}):     /execute {lang}: {r['status']}"
          + ("" if ok == want else f" UNEXPECTED: {r.get('error_message')} {str(r.get('stderr'))[:300]}"))
sys.exit(1 if failed else 0)
PY
pass "requests"

docker stop -t 20 "$name" >/dev/null
status="$(docker inspect --format '{{.State.ExitCode}}' "$name")"
[ "$status" = 143 ] || fail "exit status $status after SIGTERM, want 143"
pass "SIGTERM: exit 143"
echo "test-pod-settings ($mode): ok in $((SECONDS - start)) s"
