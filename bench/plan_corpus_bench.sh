#!/bin/sh
# The plan corpus (bench/plan/corpus.py): real programs from Debian's
# packages that bench/plan_bench.sh does not use, each planned with the
# documented one-liner (coldstart plan --verify) on one input and run on
# five others with and without the plan.  Prints a row per program: plan
# made or refused and why, identical runs, wall and CPU with and without.
set -u
cd "$(dirname "$0")/.."
exec "${PYTHON:-/usr/bin/python3}" bench/plan/corpus.py "$@"
