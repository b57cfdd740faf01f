#!/bin/sh
# Starts a private Debian dockerd for coldstart's docker tests: no iptables,
# no bridge, its own data root, exec root, socket and pid file under
# build/docker/daemon/ (or $COLDSTART_DOCKER_DIR).  The data root persists, so
# an imported image survives a restart.  Waits until `docker version` answers,
# then prints DOCKER_HOST=unix://... on stdout.
#
# Exit status: 0 started (or already running), 1 dockerd is missing or did
# not answer in time (the log tail is printed on stderr), 2 not root.
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
dir=${COLDSTART_DOCKER_DIR:-$here/build/docker/daemon}
timeout=${COLDSTART_DOCKERD_TIMEOUT:-30}
sock=$dir/docker.sock
pidfile=$dir/dockerd.pid
log=$dir/dockerd.log
DOCKERD=${DOCKERD:-dockerd}
DOCKER=${DOCKER:-docker}

if [ "$(id -u)" != 0 ]; then
	echo "start-dockerd: dockerd needs root (running as uid $(id -u))" >&2
	exit 2
fi
if ! command -v "$DOCKERD" >/dev/null 2>&1; then
	echo "start-dockerd: no '$DOCKERD' on PATH (Debian package docker.io)" >&2
	exit 1
fi
if ! command -v "$DOCKER" >/dev/null 2>&1; then
	echo "start-dockerd: no '$DOCKER' CLI on PATH (Debian package docker.io)" >&2
	exit 1
fi

mkdir -p "$dir/data" "$dir/exec"
# The unix socket path must fit in sun_path (108 bytes).
if [ "${#sock}" -gt 100 ]; then
	echo "start-dockerd: socket path '$sock' is too long; set COLDSTART_DOCKER_DIR" >&2
	exit 1
fi

if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null &&
	DOCKER_HOST=unix://$sock "$DOCKER" version >/dev/null 2>&1; then
	echo "DOCKER_HOST=unix://$sock"
	exit 0
fi
rm -f "$pidfile" "$sock"

# setsid: the daemon must not get the terminal's Ctrl-C meant for the tests.
setsid "$DOCKERD" \
	--iptables=false --ip6tables=false --bridge=none --ip-forward=false --ip-masq=false \
	--data-root "$dir/data" --exec-root "$dir/exec" \
	-H "unix://$sock" --pidfile "$pidfile" \
	--containerd-namespace coldstart-test --containerd-plugins-namespace coldstart-test-plugins \
	>"$log" 2>&1 </dev/null &
pid=$!

i=0
while [ "$i" -lt $((timeout * 10)) ]; do
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "start-dockerd: dockerd exited; last lines of $log:" >&2
		tail -n 15 "$log" >&2
		exit 1
	fi
	if DOCKER_HOST=unix://$sock timeout 5 "$DOCKER" version >/dev/null 2>&1; then
		echo "DOCKER_HOST=unix://$sock"
		exit 0
	fi
	sleep 0.1
	i=$((i + 1))
done
echo "start-dockerd: dockerd did not answer within ${timeout}s; last lines of $log:" >&2
tail -n 15 "$log" >&2
kill "$pid" 2>/dev/null || true
exit 1
