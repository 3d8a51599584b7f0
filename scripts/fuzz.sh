#!/usr/bin/env bash
# Runs every fuzz target of the module, one after the other, for DURATION
# each (default 20s), and prints each one's last line of progress
# (executions and executions per second). With -list it only lists them,
# as "PACKAGE TARGET". A PATTERN (a regular expression) keeps the targets
# whose "PACKAGE TARGET" matches it.
#   scripts/fuzz.sh [-list] [DURATION] [PATTERN]
# Env: FUZZ_PARALLEL (workers per target; default: go test's, one per CPU),
# FUZZ_NICE (nice level, default 0), FUZZ_TIMEOUT (go test's -timeout, default
# 24h: it must outlast DURATION). A crash stops the script with go test's
# report; the crashing input is kept in the package's testdata/fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
GO="$(command -v go || echo /usr/local/go/bin/go)"
list=false
if [ "${1:-}" = "-list" ]; then
	list=true
	shift
fi
t="${1:-20s}"
pattern="${2:-.}"
mod="$(awk '$1 == "module" { print $2 }' go.mod)"
targets() {
	grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+' . |
		while IFS=: read -r file fn; do
			dir="$(dirname "$file")"
			echo "$mod${dir#.} ${fn#func }"
		done | sort -u
}
if $list; then
	targets | grep -E -- "$pattern"
	exit 0
fi
# inputs counts the inputs kept in a corpus directory (0 when there is none).
inputs() {
	if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi
}
par=()
[ -n "${FUZZ_PARALLEL:-}" ] && par=(-parallel "$FUZZ_PARALLEL")
targets | grep -E -- "$pattern" | while read -r pkg f; do
	echo "== $pkg $f ($t)"
	log="$(mktemp)"
	corpus="$("$GO" list -f '{{.Dir}}' "$pkg")/testdata/fuzz/$f"
	before="$(inputs "$corpus")"
	# go test's own -timeout (10m by default) must outlast the fuzzing.
	if ! nice -n "${FUZZ_NICE:-0}" "$GO" test -run '^$' -fuzz "^$f\$" -fuzztime "$t" -timeout "${FUZZ_TIMEOUT:-24h}" "${par[@]}" "$pkg" >"$log" 2>&1; then
		after="$(inputs "$corpus")"
		# Go 1.26's fuzzing coordinator can report its own deadline as a
		# failure when -fuzztime ends mid-input (go.dev/issue/75804): that
		# writes no failing input. Anything else, or a new input, fails.
		if [ "$after" = "$before" ] && grep -q '^    context deadline exceeded$' "$log" &&
			[ "$(grep -c -- '^--- FAIL' "$log")" = 1 ]; then
			echo "(ended at its deadline with no failing input written: the Go fuzzing coordinator's own race, go.dev/issue/75804)"
		else
			cat "$log"
			rm -f "$log"
			exit 1
		fi
	fi
	# The last progress line, and the average rate over the whole run.
	grep -E '^fuzz: elapsed' "$log" | tail -1 | awk '{
		el = $3; sub(/,$/, "", el); n = $5; sub(/,$/, "", n)
		s = 0; t = el
		if (match(t, /[0-9]+h/)) { s += substr(t, RSTART, RLENGTH - 1) * 3600 }
		if (match(t, /[0-9]+m/)) { s += substr(t, RSTART, RLENGTH - 1) * 60 }
		if (match(t, /[0-9.]+s/)) { s += substr(t, RSTART, RLENGTH - 1) }
		printf "%d executions in %s, %d per second on average, no crash\n", n, el, (s > 0 ? n / s : n)
	}'
	tail -1 "$log"
	rm -f "$log"
done
