#!/usr/bin/env bash
# Solutions judged per second by coderunner judge --batch: N distinct
# solutions (each a source new to the compile cache, so each compiles) of
# a 10-test problem in Python and in C++, with the tests of one solution
# sharing a kept sandbox (the default) and with a sandbox per test
# (backend.sandbox_per_test). Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-40}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
"$GO" build -o bin/coderunner ./cmd/coderunner
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/sets"

# make LANG writes $work/LANG.jsonl: N solutions never compiled before.
make_batch() {
	python3 - "$work" "$N" "$1" <<'PY'
import json, sys, uuid
work, n, lang = sys.argv[1], int(sys.argv[2]), sys.argv[3]
run = uuid.uuid4().hex
tests = [{"id": f"t{i}", "input": f"{i} {i * 7}\n", "expected_output": f"{i + i * 7}\n"} for i in range(10)]
json.dump(tests, open(f"{work}/sets/sum.json", "w"))
with open(f"{work}/{lang}.jsonl", "w") as f:
    for i in range(n):
        if lang == "python":
            code = f"# sample {i} {run}\na, b = map(int, input().split())\nprint(a + b)\n"
        else:
            code = f"// sample {i} {run}\n#include <cstdio>\nint main() {{ long long a, b; scanf(\"%lld %lld\", &a, &b); printf(\"%lld\\n\", a + b); }}\n"
        f.write(json.dumps({"request_id": f"{lang}{i}", "problem_id": "sum", "language": lang, "code": code, "test_set": "sum"}) + "\n")
PY
}

printf '%-8s %-10s %10s %14s\n' language sandboxes seconds solutions/s
for lang in python cpp; do
	for mode in kept per-test; do
		make_batch "$lang"
		if [ "$mode" = per-test ]; then export CODERUNNER_BACKEND_SANDBOX_PER_TEST=true; else unset CODERUNNER_BACKEND_SANDBOX_PER_TEST; fi
		bin/coderunner judge --batch "$work/$lang.jsonl" --test-sets "$work/sets" --summary "$work/summary.json" >/dev/null 2>"$work/err" || { cat "$work/err"; exit 1; }
		python3 - "$work/summary.json" "$lang" "$mode" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["passed"] == s["judged"], s
print(f"{sys.argv[2]:<8} {sys.argv[3]:<10} {s['seconds']:>10.2f} {s['per_second']:>14.2f}")
PY
	done
done
