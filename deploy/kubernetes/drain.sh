#!/bin/bash
# drain.sh SECONDS [PORT]: the executor container's preStop hook.
#
# Kubernetes runs it when the pod is to stop (scale-down, rollout, node
# drain, eviction) and sends SIGTERM only once it returns. On SIGTERM the
# executor reports every running execution as crashed; waiting here first
# lets them end on their own and their results reach the control plane.
# The pod is already out of the Service's endpoints, so no new request
# comes through it.
#
# It returns 0 once the executor is idle twice in a row, one second apart:
# no execution running or queued (GET /health) and no result waiting for
# the control plane (coderunner_spool_results in GET /metrics). It also
# returns 0 when nothing answers on the port: nothing is left to drain.
# It returns 1 when the executor is still busy after SECONDS seconds.
#
# Only bash and sleep are needed: the request goes through bash's
# /dev/tcp, so the image needs no HTTP client.
set -u

limit=${1:-}
port=${2:-8080}
if [[ ! $limit =~ ^[0-9]+$ || ! $port =~ ^[0-9]+$ ]]; then
	echo "usage: drain.sh SECONDS [PORT]" >&2
	exit 2
fi
deadline=$((SECONDS + limit))

# get PATH prints the answer (headers and body) of GET PATH on the
# executor; it fails when nothing listens there.
get() {
	local line
	exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
	printf 'GET %s HTTP/1.0\r\nHost: localhost\r\nConnection: close\r\n\r\n' "$1" >&3
	while IFS= read -r -t 10 line || [[ -n $line ]]; do
		printf '%s\n' "${line%$'\r'}"
	done <&3
	exec 3<&-
}

# state prints "idle", "busy: ..." or "gone".
state() {
	local health metrics spool=0
	if ! health=$(get /health 2>/dev/null); then
		echo gone
		return
	fi
	if [[ ! $health =~ \"active_executions\":([0-9]+) ]]; then
		echo "busy: /health did not answer with a count of executions"
		return
	fi
	local active=${BASH_REMATCH[1]}
	if [[ ! $health =~ \"queued_executions\":([0-9]+) ]]; then
		echo "busy: /health did not answer with a count of queued executions"
		return
	fi
	local queued=${BASH_REMATCH[1]}
	if ! metrics=$(get /metrics 2>/dev/null); then
		echo gone
		return
	fi
	# Absent without a control plane: then nothing is ever waiting.
	if [[ $metrics =~ (^|$'\n')coderunner_spool_results\ ([0-9]+) ]]; then
		spool=${BASH_REMATCH[2]}
	fi
	if ((active == 0 && queued == 0 && spool == 0)); then
		echo idle
		return
	fi
	echo "busy: $active running, $queued queued, $spool results waiting for the control plane"
}

idle=0
while :; do
	s=$(state)
	case $s in
	gone)
		echo "drain: the executor does not answer on port $port; nothing to wait for"
		exit 0
		;;
	idle)
		idle=$((idle + 1))
		if ((idle >= 2)); then
			echo "drain: idle"
			exit 0
		fi
		;;
	*)
		idle=0
		;;
	esac
	if ((SECONDS >= deadline)); then
		echo "drain: still ${s#busy: } after $limit s; stopping anyway" >&2
		exit 1
	fi
	sleep 1
done
