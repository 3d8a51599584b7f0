#!/usr/bin/env bash
# Runs every fuzz target of the module for the given time each (default 20s).
set -euo pipefail
cd "$(dirname "$0")/.."
GO="$(command -v go || echo /usr/local/go/bin/go)"
t="${1:-20s}"
for pkg in $("$GO" list ./...); do
	for f in $("$GO" test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
		echo "== $pkg $f"
		"$GO" test -run '^$' -fuzz "^$f\$" -fuzztime "$t" "$pkg"
	done
done
