#!/bin/sh
# The wall-time error of `coldstart profile -n 20 -c pass`: reported wall
# time minus the target's own CLOCK_MONOTONIC at its start and exit (a
# preloaded library, tests/fixtures/wallclock/wallclock.c).  Compares the
# exit noticed through a pidfd with the SIGCHLD path (COLDSTART_NO_PIDFD=1),
# interleaved, under the machine's load and (as root) under SCHED_FIFO, where
# no CPU wait that the target's clock cannot see blurs the figure;
# COLDSTART_BEFORE=path/to/another/coldstart adds that binary (e.g. a build of
# an older commit) as further rows.
# Usage: sh bench/wall_bench.sh [RUNS]
set -eu
cd "$(dirname "$0")/.."
runs=${1:-20}
dir=build/bench
mkdir -p "$dir"
cc -shared -fPIC -O2 -o "$dir/wallclock.so" tests/fixtures/wallclock/wallclock.c
set -- "pidfd=$PWD/coldstart" "SIGCHLD=$PWD/coldstart:COLDSTART_NO_PIDFD=1"
[ -n "${COLDSTART_BEFORE:-}" ] && set -- "$@" "before=$COLDSTART_BEFORE"
if [ "$(id -u)" = 0 ]; then
	set -- "$@" "pidfd, SCHED_FIFO=$PWD/coldstart:fifo" "SIGCHLD, SCHED_FIFO=$PWD/coldstart:COLDSTART_NO_PIDFD=1:fifo"
	[ -n "${COLDSTART_BEFORE:-}" ] && set -- "$@" "before, SCHED_FIFO=$COLDSTART_BEFORE:fifo"
fi
python3 bench/wall_error.py "$PWD/$dir/wallclock.so" "$runs" "$@"
