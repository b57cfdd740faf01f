#!/bin/sh
# Start-up plans on real Fn functions under Fn's limits (10% CPU, 128 MiB):
# fdk-python, coldstart-fdk without and with a plan, and the floor, run
# round by round (bench/plan_bench.py says what each variant is), by wall
# and by CPU, on two sets of functions.  Needs root for cgroup v1.
# ROUNDS=N for more rounds, SET=1|2|all (default all), FUNCS="numpy pandas"
# for some of the functions.
set -eu
cd "$(dirname "$0")/.."
exec "${PYTHON:-/usr/bin/python3}" bench/plan_bench.py
