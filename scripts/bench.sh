#!/usr/bin/env bash
# Latency (p50/p95/p99) and runs/s of sandboxed runs next to a bare fork/exec
# of the same programs, measured in the same process at the same time, at
# concurrency 1 and 2; then the go test benchmarks. Needs root and gcc.
# Usage: scripts/bench.sh [runs per row, default 300]
set -euo pipefail
cd "$(dirname "$0")/.."
GO="$(command -v go || echo /usr/local/go/bin/go)"
n="${1:-300}"
"$GO" build -o bin/sandboxbench ./tools/sandboxbench
bin/sandboxbench -n "$n" -c 1,2
"$GO" test -run '^$' -bench . -benchtime "${n}x" ./sandbox/native
