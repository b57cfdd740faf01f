#!/bin/sh
# Runs every benchmark (bench/*_bench.sh) in turn; each prints its own
# side-by-side figures.  Benchmarks measure; they never pass or fail on time.
set -u
cd "$(dirname "$0")/.."
status=0
for b in bench/*_bench.sh; do
	[ -e "$b" ] || continue
	echo "== $b"
	sh "$b" || status=1
	echo
done
exit $status
