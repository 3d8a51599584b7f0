#!/usr/bin/env bash
# Starts the Docker engine when none answers, for machines without an init
# system that does it (CI containers and VMs). Logs to /var/log/dockerd.log.
# Safe to run again.
set -euo pipefail
if docker info >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "start-dockerd: no Docker engine answers and only root can start one" >&2
	exit 1
fi
command -v dockerd >/dev/null || { echo "start-dockerd: dockerd is not installed (scripts/install-deps.sh)" >&2; exit 1; }
nohup dockerd >/var/log/dockerd.log 2>&1 &
for _ in $(seq 60); do
	if docker info >/dev/null 2>&1; then
		exit 0
	fi
	sleep 0.5
done
echo "start-dockerd: dockerd did not answer within 30 s:" >&2
tail -20 /var/log/dockerd.log >&2
exit 1
