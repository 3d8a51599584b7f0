#!/usr/bin/env bash
# First one interleaved table: bare fork/exec, native (sandboxes kept
# between runs, and one per request), bwrap, docker (a
# container per run) and docker with a warm pool taking turns in small
# batches, for a trivial run, a Python hello-world and a C hello-world:
# c=1 p50/p95, c=2 runs/s and the
# CPU per run with its ratio to bare. Then a trivial docker run from the
# warm pool, with its launcher and with docker exec, next to a bare
# docker exec (sandboxbench -docker-launch). Then latency (p50/p95/p99) and
# runs/s of sandboxed runs next to a bare fork/exec of the same programs,
# measured in the same process at the same time, at concurrency 1 and 2, back to back and with 20 ms between requests; then
# the three backends side by side (native, bwrap, docker reusing a
# container per program, docker with a container per run:
# a trivial run, a Python hello-world, a 10-test Python judge; p50/p95 and
# the ratio to native); then the go test benchmarks. Needs root and gcc; the
# comparison also needs bwrap, dockerd and the local image (make images).
# Usage: scripts/bench.sh [runs per row, default 300]
set -euo pipefail
cd "$(dirname "$0")/.."
GO="$(command -v go || echo /usr/local/go/bin/go)"
n="${1:-300}"
"$GO" build -o bin/sandboxbench ./tools/sandboxbench
scripts/start-dockerd.sh
scripts/build-images.sh core
bin/sandboxbench -table native,native-per-request,bwrap,docker-per-run,docker-warm -n "$((n / 3 > 10 ? n / 3 : 10))"
echo
# A docker warm run with its launcher next to one with docker exec, and
# a bare exec.
bin/sandboxbench -docker-launch -n "$((n / 3 > 10 ? n / 3 : 10))"
echo
bin/sandboxbench -n "$n" -c 1,2
echo
# As a server sees requests: with a pause between them, in which sandboxes
# started ahead of need are made ready.
bin/sandboxbench -n "$n" -c 1 -gap 20ms
echo
bin/sandboxbench -backends native,bwrap,docker,docker-per-run -n "$((n / 3 > 10 ? n / 3 : 10))" -judges 20
"$GO" test -run '^$' -bench . -benchtime "${n}x" ./sandbox/native
