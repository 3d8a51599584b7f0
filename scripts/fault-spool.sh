#!/usr/bin/env bash
# Fault: the control plane down during load. serve reports to a control
# plane on loopback that answers 503 to everything, with a spool of
# SPOOL (default 20) results. N (default 60) /execute requests, C at a time
# (default 4): the first get 200 and their results wait in the spool, the
# rest 503 spool_full with Retry-After; /metrics says so and RESULTS_DIR
# holds no more than the bound plus the runs in flight. Then the control
# plane comes back: the spool drains to 0 and /execute runs again.
# Env: PORT (18592), CP_PORT (18593), SPOOL, N, C, NICE (10).
source "$(dirname "$0")/loadserve.sh"
CP_PORT="${CP_PORT:-18593}"
PORT="${PORT:-18592}"
SPOOL="${SPOOL:-20}"
N="${N:-60}"
C="${C:-4}"
start_control_plane fault-spool
export CODERUNNER_CONTROL_PLANE_MAX_SPOOL_RESULTS="$SPOOL"
start_server
spool_metrics() {
	curl -fsS "http://127.0.0.1:$PORT/metrics" | grep -E '^coderunner_spool_(results|full|rejections_total) ' | tr '\n' ' '
}
rss() { awk '/^VmRSS/ { print $2 " KiB" }' "/proc/$SERVER/status"; }
echo "before: $(spool_metrics) rss $(rss)"
seq 1 "$N" | xargs -P "$C" -I{} curl -sS -o /dev/null -D - -H 'Content-Type: application/json' -H "Authorization: Bearer $CODERUNNER_API_TOKEN" \
	--data '{"execution_id":"spool-{}","language":"python","code":"def handler(e):\n    return {}\n"}' \
	"http://127.0.0.1:$PORT/execute" | awk '
	/^HTTP\// { code = $2; if (code == 200) ok++; if (code == 503) refused++ }
	tolower($1) == "retry-after:" && code == 503 { retry++ }
	END { printf "answers: %d x 200, %d x 503 (%d with Retry-After)\n", ok, refused, retry }'
stored=$(find "$TMPROOT/results" -name '*.json' | wc -l)
echo "with the control plane down: $(spool_metrics) rss $(rss), $stored results in RESULTS_DIR"
echo 200 >"$cpdir/status"
for _ in $(seq 1 300); do
	curl -fsS "http://127.0.0.1:$PORT/metrics" | grep -q '^coderunner_spool_results 0$' && break
	sleep 0.1
done
code=$(curl -sS -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -H "Authorization: Bearer $CODERUNNER_API_TOKEN" \
	--data '{"execution_id":"after","language":"python","code":"def handler(e):\n    return 1\n"}' "http://127.0.0.1:$PORT/execute")
echo "control plane back: $(spool_metrics) rss $(rss), $(find "$TMPROOT/results" -name '*.json' | wc -l) results in RESULTS_DIR, /execute $code"
[ "$stored" -le $((SPOOL + C)) ] && [ "$code" = 200 ] && echo "fault-spool: ok" || { echo "fault-spool: FAILED"; exit 1; }
