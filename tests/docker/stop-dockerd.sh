#!/bin/sh
# Stops the private dockerd started by start-dockerd.sh: removes any
# container left behind, sends SIGTERM, waits up to 20 s, then SIGKILL, and
# unmounts what the daemon leaves mounted.  The data root (with the imported
# test image) stays for the next run.
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
dir=${COLDSTART_DOCKER_DIR:-$here/build/docker/daemon}
pidfile=$dir/dockerd.pid
sock=$dir/docker.sock
DOCKER=${DOCKER:-docker}

[ -f "$pidfile" ] || exit 0
pid=$(cat "$pidfile")
if ! kill -0 "$pid" 2>/dev/null; then
	rm -f "$pidfile"
	exit 0
fi
left=$(DOCKER_HOST=unix://$sock timeout 10 "$DOCKER" ps -aq 2>/dev/null || true)
if [ -n "$left" ]; then
	# shellcheck disable=SC2086
	DOCKER_HOST=unix://$sock timeout 20 "$DOCKER" rm -f $left >/dev/null 2>&1 || true
fi
kill -TERM "$pid" 2>/dev/null || true
i=0
while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 200 ]; do
	sleep 0.1
	i=$((i + 1))
done
if kill -0 "$pid" 2>/dev/null; then
	echo "stop-dockerd: dockerd $pid ignored SIGTERM for 20 s; killing it" >&2
	kill -KILL "$pid" 2>/dev/null || true
fi
rm -f "$pidfile"
# dockerd leaves its default network namespace mounted in the exec root.
if mountpoint -q "$dir/exec/netns/default" 2>/dev/null; then
	umount "$dir/exec/netns/default" || true
fi
