#!/bin/sh
# What the interpreter's site step costs, part by part, and what of it a
# planned first call would not pay again anyway (bench/site_cost.py; needs
# valgrind, and the plans bench/plan_bench.sh made for the second part).
set -eu
cd "$(dirname "$0")/.."
exec "${PYTHON:-/usr/bin/python3}" bench/site_cost.py "${PYTHON:-/usr/bin/python3}"
