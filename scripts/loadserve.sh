# Sourced by burst.sh, soak.sh and the fault scripts: builds coderunner and the load tool,
# starts `coderunner serve` on loopback in cgroups of its own (so that its
# run groups are counted apart from any other process's) with its work
# directory and RESULTS_DIR in a fresh temporary directory, and stops and
# removes all of it on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
GO="$(command -v go || echo /usr/local/go/bin/go)"
"$GO" build -o bin/coderunner ./cmd/coderunner
"$GO" build -o bin/loadtest ./tools/loadtest

PORT="${PORT:-18580}"
TMPROOT="$(mktemp -d /tmp/coderunner-load.XXXXXX)"
mkdir -p "$TMPROOT/work" "$TMPROOT/results"
CGNAME="coderunner-load-$$"
CGDIRS=()
SERVER=""

# Own cgroups: a child of our own group in every v1 hierarchy.
if [ "$(id -u)" = 0 ] && [ ! -f /sys/fs/cgroup/cgroup.controllers ]; then
	while IFS=: read -r _ ctrl path; do
		case "$ctrl" in memory | pids | cpu | cpuacct | cpu,cpuacct | freezer) ;; *) continue ;; esac
		d="/sys/fs/cgroup/${ctrl%%,*}${path%/}/$CGNAME"
		mkdir -p "$d" && CGDIRS+=("$d")
	done </proc/self/cgroup
fi

cleanup() {
	if [ -n "$SERVER" ] && kill -0 "$SERVER" 2>/dev/null; then
		kill -TERM "$SERVER" 2>/dev/null || true
		for _ in $(seq 1 100); do kill -0 "$SERVER" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$SERVER" 2>/dev/null || true
	fi
	for d in "${CGDIRS[@]}"; do
		find "$d" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true
		rmdir "$d" 2>/dev/null || true
	done
	rm -rf "$TMPROOT"
}
trap cleanup EXIT

# start_control_plane ID: a fake control plane on loopback at CP_PORT,
# answering every POST with the status in $cpdir/status (503 at first;
# write 200 there to bring it back) and recording the paths of the results
# it accepts in $cpdir/results; serve is pointed at it with container id ID,
# and needs an API token then (CODERUNNER_API_TOKEN, which clients send).
start_control_plane() {
	cpdir="$TMPROOT/cp"
	mkdir -p "$cpdir"
	echo 503 >"$cpdir/status"
	/usr/bin/python3 - "$CP_PORT" "$cpdir" <<'PY' &
import http.server, sys, os
port, d = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        code = int(open(os.path.join(d, "status")).read())
        if code == 200 and self.path.endswith("/result"):
            with open(os.path.join(d, "results"), "a") as f:
                f.write(self.path + "\n")
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
PY
	CP=$!
	trap 'kill $CP 2>/dev/null; cleanup' EXIT
	export CONTROL_PLANE_URL="http://127.0.0.1:$CP_PORT" INTERNAL_API_TOKEN=fault-token CONTAINER_ID="$1" \
		CODERUNNER_API_TOKEN=fault-api-token
}

# start_server ARGS...: serve on 127.0.0.1:$PORT; sets SERVER to its pid.
start_server() {
	env CODERUNNER_BACKEND_WORK_DIR="$TMPROOT/work" RESULTS_DIR="$TMPROOT/results" \
		CGDIRS="${CGDIRS[*]}" nice -n "${NICE:-10}" sh -c '
		for d in $CGDIRS; do echo $$ >"$d/cgroup.procs"; done
		p=$1; shift; exec "$0" serve --addr "127.0.0.1:$p" "$@"' "$PWD/bin/coderunner" "$PORT" "$@" \
		2>"$TMPROOT/serve.log" &
	SERVER=$!
	for _ in $(seq 1 300); do
		if curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then
			echo "serve: pid $SERVER, $(curl -fsS "http://127.0.0.1:$PORT/health")" >&2
			return 0
		fi
		kill -0 "$SERVER" 2>/dev/null || { cat "$TMPROOT/serve.log" >&2; return 1; }
		sleep 0.1
	done
	echo "serve did not become healthy" >&2
	return 1
}
