#!/bin/sh
# Tracer overhead in instructions: `python -X importtime -c 'import PKG'`
# under callgrind, without and with the C tracer.  Instruction counts repeat
# exactly run to run, so this complements tracer_bench.sh's wall medians on a
# noisy machine (it does not count kernel time, e.g. the tracer's RSS reads).
# Usage: bench/tracer_instr_bench.sh [python]  (run `make tracer` first).
set -eu
cd "$(dirname "$0")/.."
PY=${1:-/usr/bin/python3}
PKGS=${BENCH_PACKAGES:-aiohttp numpy pandas}
if ! command -v valgrind >/dev/null 2>&1; then
	echo "tracer_instr_bench: valgrind not installed, skipped"
	exit 0
fi
out=build/bench/tracer-instr
mkdir -p "$out"
count() {
	valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
		sed -n 's/.*I *refs: *//p' | tr -d ,
}
printf "tracer instructions, %s, callgrind (user space)\n" "$PY"
printf "%-10s %16s %16s %8s\n" package importtime "+tracer(C)" ratio
for pkg in $PKGS; do
	if ! "$PY" -c "import $pkg" 2>/dev/null; then
		printf "%-10s not installed, skipped\n" "$pkg"
		continue
	fi
	plain=$(unset PYTHONPATH COLDSTART_TRACE_DIR COLDSTART_TRACER COLDSTART_TRACER_PATH
		count "$PY" -X importtime -c "import $pkg")
	rm -rf "$out/trace" && mkdir -p "$out/trace"
	traced=$(PYTHONPATH="$PWD/python/coldstart/_boot" COLDSTART_TRACE_DIR="$PWD/$out/trace" \
		COLDSTART_TRACER_PATH="$PWD/python/coldstart" COLDSTART_TRACER= \
		count "$PY" -X importtime -c "import $pkg")
	ls "$out/trace"/*.trace >/dev/null 2>&1 || { echo "tracer_instr_bench: no trace written for $pkg" >&2; exit 1; }
	awk -v p="$pkg" -v a="$plain" -v b="$traced" 'BEGIN { printf "%-10s %16d %16d %8.3f\n", p, a, b, b / a }'
done
