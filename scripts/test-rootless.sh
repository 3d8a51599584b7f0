#!/usr/bin/env bash
# Runs coderunner as an ordinary user, twice, and checks what holds.
#
# As root it creates the user ROOTLESS_USER (coderunner-ci) if missing,
# lets ordinary users create user namespaces if the kernel or AppArmor
# stops them (Debian's kernel.unprivileged_userns_clone, Ubuntu's
# kernel.apparmor_restrict_unprivileged_userns; both restored at exit),
# builds bin/coderunner and the test binaries (go test -c -race, sharing
# make test's build cache) of the packages whose behaviour depends on who
# runs them:
#
#   internal/cgroup  finding a delegated subtree; its kernel tests run as
#                    the user inside the subtree delegated in pass 2
#   sandbox/native   TestUnprivileged: a run without a cgroup is refused,
#   sandbox/bwrap    allowed with rlimits by the opt-out, limited by the
#                    cgroup once one is delegated
#   session          sessions are refused without root, and say why
#
# and runs them as the user with CI=true CODERUNNER_TEST_ROOTLESS=1 (the
# tests that need root skip, every other requirement fails), from a copy
# of the source tree the user can read (their testdata). Then it drives
# the built binary as the user: run, judge, serve (POST /v1/run on
# loopback) and mcp (execute_code over stdio), and doctor.
#
#   pass 1, no delegated cgroup: every run is refused (exit 125, naming
#     both ways out) until --allow-rlimits-only or
#     CODERUNNER_BACKEND_ALLOW_RLIMITS_ONLY=true allows rlimits alone;
#     doctor says so; a session is refused.
#   pass 2, a delegated cgroup v1 subtree (mkdir coderunner-USER at the
#     top of the memory, pids, cpu, cpuacct and freezer hierarchies,
#     chown -R USER): runs go ahead without the opt-out, and 400 MB
#     under --memory 128 is memory_exceeded.
#
# Pass 2 needs a cgroup v1 host (on a cgroup v2 host delegation is a
# systemd Delegate=yes unit; DELEGATED=0 runs pass 1 only). Everything it
# made is removed at exit, the user apart. Env: ROOTLESS_USER, WORK
# (/tmp/coderunner-rootless), DELEGATED (1).
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-$(command -v go 2>/dev/null || echo /usr/local/go/bin/go)}"
USER_NAME="${ROOTLESS_USER:-coderunner-ci}"
WORK="${WORK:-/tmp/coderunner-rootless}"
DELEGATED="${DELEGATED:-1}"
PKGS=(internal/cgroup sandbox/native sandbox/bwrap session)
# The fixed loopback port serve listens on as the user.
PORT="${PORT:-18613}"

say() { echo "test-rootless: $*" >&2; }
fail() {
	say "FAIL: $*"
	exit 1
}

if [ "$(id -u)" != 0 ]; then
	say "needs root (it creates the user and delegates a cgroup to it)"
	exit 1
fi
command -v runuser >/dev/null || fail "needs runuser (util-linux)"
command -v curl >/dev/null || fail "needs curl (apt-get install curl)"
command -v pgrep >/dev/null || fail "needs pgrep (apt-get install procps)"
started=$SECONDS

# --- cleanup -----------------------------------------------------------
restore=()
delegated_dirs=()
serve_pid=
cleanup() {
	if [ -n "$serve_pid" ]; then
		kill "$serve_pid" 2>/dev/null || true
		wait "$serve_pid" 2>/dev/null || true
	fi
	undelegate
	for r in "${restore[@]}"; do
		sysctl -q -w "$r" >/dev/null || true
	done
	rm -rf "$WORK"
}
trap cleanup EXIT

# --- user namespaces ---------------------------------------------------
# sysctl_set KEY VALUE sets a sysctl if it exists and differs, and
# remembers the old value for the exit.
sysctl_set() {
	local file="/proc/sys/${1//.//}" old
	[ -f "$file" ] || return 0
	old=$(cat "$file")
	[ "$old" = "$2" ] && return 0
	say "setting $1=$2 (was $old) for the run"
	sysctl -q -w "$1=$2" >/dev/null
	restore+=("$1=$old")
}
sysctl_set kernel.unprivileged_userns_clone 1
sysctl_set kernel.apparmor_restrict_unprivileged_userns 0
if [ "$(cat /proc/sys/user/max_user_namespaces)" = 0 ]; then
	sysctl_set user.max_user_namespaces 15000
fi

# --- the user ----------------------------------------------------------
if ! id "$USER_NAME" >/dev/null 2>&1; then
	say "creating the user $USER_NAME"
	useradd --system --create-home --shell /usr/sbin/nologin "$USER_NAME"
fi
uid=$(id -u "$USER_NAME")
home=$(getent passwd "$USER_NAME" | cut -d: -f6)
[ "$uid" != 0 ] || fail "$USER_NAME is root"

# as_user CMD... runs CMD as the user with a clean environment (and any
# NAME=VALUE words before CMD).
as_user() {
	runuser -u "$USER_NAME" -- env -i HOME="$home" PATH=/usr/local/bin:/usr/bin:/bin TMPDIR=/tmp \
		CI=true CODERUNNER_TEST_ROOTLESS=1 "$@"
}

# --- build -------------------------------------------------------------
rm -rf "$WORK"
mkdir -p "$WORK/bin" "$WORK/src"
"$GO" build -o "$WORK/bin/coderunner" ./cmd/coderunner
for p in "${PKGS[@]}"; do
	"$GO" test -c -race -o "$WORK/bin/$(basename "$p").test" "./$p"
done
# The test binaries run in their package directories, for testdata.
tar --exclude=.git --exclude=./bin -cf - . | tar -xf - -C "$WORK/src"
mkdir -p "$WORK/e2e"
cp examples/hello.py "$WORK/e2e/hello.py"
printf 'a, b = map(int, input().split())\nprint(a + b)\n' >"$WORK/e2e/sum.py"
printf '[{"id": "a", "input": "1 2\\n", "expected_output": "3\\n"}, {"id": "b", "input": "5 5", "expected_output": "10"}]\n' >"$WORK/e2e/tests.json"
printf 'b = bytearray(400 << 20)\nprint(len(b))\n' >"$WORK/e2e/bomb.py"
chmod -R a+rX "$WORK"
say "built in $((SECONDS - started)) s"

# --- delegation --------------------------------------------------------
# v1mount CONTROLLER prints the mount point of a cgroup v1 hierarchy.
v1mount() {
	awk -v c="$1" '{
		for (i = 1; i <= NF; i++) if ($i == "-") break
		if ($(i + 1) != "cgroup") next
		n = split($(i + 3), o, ",")
		for (j = 1; j <= n; j++) if (o[j] == c) { print $5; exit }
	}' /proc/self/mountinfo
}
undelegate() {
	local d
	for d in "${delegated_dirs[@]}"; do
		[ -d "$d" ] || continue
		find "$d" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true
		rmdir "$d" 2>/dev/null || say "could not remove $d"
	done
	delegated_dirs=()
}
# delegate makes coderunner-USER in every v1 hierarchy coderunner uses
# and chowns it to the user, as the README tells root to.
delegate() {
	local c m d
	for c in memory pids cpu cpuacct freezer; do
		m=$(v1mount "$c")
		[ -n "$m" ] || fail "no cgroup v1 $c hierarchy is mounted"
		d="$m/coderunner-$USER_NAME"
		mkdir -p "$d"
		chown -R "$USER_NAME" "$d"
		delegated_dirs+=("$d")
	done
}
# Leftovers of an earlier run would make pass 1 find a cgroup.
for c in memory pids cpu cpuacct freezer; do
	m=$(v1mount "$c")
	[ -n "$m" ] && [ -d "$m/coderunner-$USER_NAME" ] && delegated_dirs+=("$m/coderunner-$USER_NAME")
done
undelegate

# --- the test binaries -------------------------------------------------
# tests PASS-NAME [NAME=VALUE...] runs every test binary as the user.
tests() {
	local pass=$1 p bin
	shift
	for p in "${PKGS[@]}"; do
		bin="$WORK/bin/$(basename "$p").test"
		say "$pass: $p"
		(cd "$WORK/src/$p" && as_user "$@" "$bin" -test.count=1 -test.timeout=5m) >"$WORK/test.log" 2>&1 || {
			tail -40 "$WORK/test.log" >&2
			fail "$pass: $p failed as $USER_NAME"
		}
		grep -E '^(--- FAIL|FAIL|PASS|ok)' "$WORK/test.log" | tail -1 >&2
	done
}

# --- the binary, end to end --------------------------------------------
cr() { (cd "$WORK/e2e" && as_user "$@"); }

# expect NAME WANT OUTPUT: OUTPUT must contain WANT.
expect() {
	case "$3" in
	*"$2"*) ;;
	*) fail "$1: output lacks \"$2\": $3" ;;
	esac
}

# serve_run [NAME=VALUE...] starts serve as the user, POSTs a program to
# /v1/run and prints the answer's status and body; serve is stopped.
serve_run() {
	(cd "$WORK/e2e" && as_user "$@" "$WORK/bin/coderunner" serve --addr "127.0.0.1:$PORT" --log-level error) &
	serve_pid=$!
	local i
	for i in $(seq 300); do
		curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
		kill -0 "$serve_pid" 2>/dev/null || fail "serve exited at start"
		sleep 0.1
	done
	curl -sS -w '\nHTTP %{http_code}\n' -H 'Content-Type: application/json' \
		-d '{"language": "python", "code": "print(6 * 7)"}' "http://127.0.0.1:$PORT/v1/run" || true
	# serve is the child of runuser, the child of our subshell: it drains
	# on SIGTERM and exits, and runuser and the subshell with it.
	local ru pid
	for ru in $(pgrep -P "$serve_pid"); do
		for pid in $(pgrep -P "$ru"); do
			kill -TERM "$pid" 2>/dev/null || true
		done
	done
	wait "$serve_pid" 2>/dev/null || true
	serve_pid=
}

# mcp_call [NAME=VALUE...] calls execute_code over stdio and prints the
# answer to the call, keeping stdin open until it came.
mcp_call() {
	local line
	coproc MCP { cd "$WORK/e2e" && as_user "$@" "$WORK/bin/coderunner" mcp --log-level error 2>/dev/null; }
	printf '%s\n' \
		'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"ci","version":"1"}}}' \
		'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
		'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"print(6 * 7)"}}}' >&"${MCP[1]}"
	while IFS= read -r -t 60 line <&"${MCP[0]}"; do
		case "$line" in
		*'"id":2'*)
			echo "$line"
			break
			;;
		esac
	done
	exec {MCP[1]}>&-
	wait "$MCP_PID" 2>/dev/null || true
}

e2e_refused() {
	local out code
	out=$(cr "$WORK/bin/coderunner" run hello.py 2>&1) && fail "run without a cgroup nor the opt-out succeeded: $out"
	code=$(cr "$WORK/bin/coderunner" run hello.py >/dev/null 2>&1 || echo $?)
	[ "$code" = 125 ] || fail "run without a cgroup nor the opt-out: exit $code, want 125"
	expect "refused run" "no usable cgroup" "$out"
	expect "refused run" "--allow-rlimits-only" "$out"
	expect "refused run" "coderunner-$USER_NAME" "$out"

	out=$(cr "$WORK/bin/coderunner" run --allow-rlimits-only hello.py 2>&1) || fail "run --allow-rlimits-only: $out"
	expect "run --allow-rlimits-only" "Hello, World!" "$out"
	expect "run --allow-rlimits-only" "rlimits only" "$out"
	out=$(cr CODERUNNER_BACKEND_ALLOW_RLIMITS_ONLY=true "$WORK/bin/coderunner" run --json --memory 128 bomb.py 2>/dev/null) || true
	expect "rlimit memory" '"status": "execution_error"' "$out"
	expect "rlimit memory" "MemoryError" "$out"

	out=$(cr "$WORK/bin/coderunner" doctor 2>&1) || fail "doctor: $out"
	expect doctor "native: available, but every run is refused" "$out"
	expect doctor "bwrap: available, but every run is refused" "$out"
	out=$(cr "$WORK/bin/coderunner" doctor --json 2>&1) || fail "doctor --json: $out"
	expect "doctor --json" '"runs_refused": "sandbox backend unavailable: no usable cgroup' "$out"

	out=$(cr "$WORK/bin/coderunner" run --allow-rlimits-only --session s1 hello.py 2>&1) && fail "a session as $USER_NAME started: $out"
	expect "run --session" "run coderunner as root" "$out"

	out=$(cr "$WORK/bin/coderunner" judge --tests tests.json sum.py 2>&1) && fail "judge without a cgroup nor the opt-out succeeded: $out"
	expect "refused judge" "no usable cgroup" "$out"
	out=$(cr "$WORK/bin/coderunner" judge --allow-rlimits-only --tests tests.json sum.py 2>&1) || fail "judge --allow-rlimits-only: $out"
	expect "judge --allow-rlimits-only" "all_passed" "$out"

	# A sandbox failure is a result (status setup_error), as the API says.
	out=$(serve_run)
	expect "serve, refused" "HTTP 200" "$out"
	expect "serve, refused" '"status":"setup_error"' "$out"
	expect "serve, refused" "no usable cgroup" "$out"
	out=$(serve_run CODERUNNER_BACKEND_ALLOW_RLIMITS_ONLY=true)
	expect "serve --allow-rlimits-only" "HTTP 200" "$out"
	expect "serve --allow-rlimits-only" '"stdout":"42\n"' "$out"
	expect "serve --allow-rlimits-only" "rlimits only" "$out"

	out=$(mcp_call)
	expect "mcp, refused" "no usable cgroup" "$out"
	out=$(mcp_call CODERUNNER_BACKEND_ALLOW_RLIMITS_ONLY=true)
	expect "mcp, allowed" '42\\n' "$out"
	say "pass 1: run, judge, serve, mcp and doctor as $USER_NAME: refused, then allowed"
}

e2e_delegated() {
	local out
	out=$(cr "$WORK/bin/coderunner" run hello.py 2>&1) || fail "run with a delegated cgroup: $out"
	expect "run, delegated" "Hello, World!" "$out"
	case "$out" in *"rlimits only"*) fail "run with a delegated cgroup warns of rlimits: $out" ;; esac
	out=$(cr "$WORK/bin/coderunner" run --json --memory 128 bomb.py 2>/dev/null) || true
	expect "memory bomb, delegated" '"memory_exceeded": true' "$out"
	out=$(cr "$WORK/bin/coderunner" doctor 2>&1) || fail "doctor: $out"
	expect "doctor, delegated" "[ok  ] cgroups: cgroup v1 (memory, pids, cpu, cpuacct, freezer) at memory:$(v1mount memory)/coderunner-$USER_NAME/coderunner" "$out"
	out=$(cr "$WORK/bin/coderunner" judge --tests tests.json sum.py 2>&1) || fail "judge, delegated: $out"
	expect "judge, delegated" "all_passed" "$out"
	out=$(serve_run)
	expect "serve, delegated" "HTTP 200" "$out"
	expect "serve, delegated" '"stdout":"42\n"' "$out"
	out=$(mcp_call)
	expect "mcp, delegated" '42\\n' "$out"
	say "pass 2: run, judge, serve, mcp and doctor as $USER_NAME with a delegated cgroup: limits hold"
}

# --- pass 1 ------------------------------------------------------------
tests "pass 1 (no delegated cgroup)"
e2e_refused

# --- pass 2 ------------------------------------------------------------
if [ "$DELEGATED" = 1 ]; then
	[ -n "$(v1mount memory)" ] || fail "pass 2 delegates a cgroup v1 subtree, and this host has no cgroup v1 memory hierarchy (DELEGATED=0 runs pass 1 only)"
	delegate
	tests "pass 2 (delegated cgroup v1 subtree)" CODERUNNER_TEST_DELEGATED_CGROUP=1
	e2e_delegated
	undelegate
fi
say "passed in $((SECONDS - started)) s"
