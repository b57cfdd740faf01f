#!/bin/sh
# Tracer overhead in instructions: `python -X importtime -c 'import PKG'`
# under callgrind: plain, with the bootstrap alone (COLDSTART_TRACER=off),
# with the C tracer, and with an earlier build of it when $BENCH_BEFORE names
# the directory of its .so.  Instruction counts repeat run to run whatever
# the load, so they show small ratios that CPU time on a busy machine blurs;
# they count user space only: the kernel's share (page faults, syscalls) is
# in tracer_bench.sh's sys and faults rows.  The environment is the
# bench's own (no PYTHON* or COLDSTART* variables), as in tracer_bench.sh:
# the bootstrap's .pyc is written once and used.
# Rows: `import PKG` for aiohttp numpy pandas (or $BENCH_PACKAGES), then the
# time-to-ready workloads of bench/timeline_bench.sh, each to its end with
# the timeline off: boto3's client('s3') and Django's `manage.py check` in a
# project made by django-admin startproject (BENCH_APPS=0 leaves them out).
# Then, with PYTHONDONTWRITEBYTECODE=1 (no .pyc can be written, as in many
# images and for an installed datadir), the traced `import json` and `import
# PKG` rows with the source bootstrap (compiled in every process, as without
# a cache) and with its bytecode from coldstart's cache (docs/design.md, "The
# tracer cache"; the cache is made by `coldstart profile` under
# build/bench/tracer-instr/cache), BENCH_BOOT=0 leaves them out.
# Usage: bench/tracer_instr_bench.sh [python]  (run `make` first).
set -eu
cd "$(dirname "$0")/.."
PY=${1:-/usr/bin/python3}
PKGS=${BENCH_PACKAGES:-aiohttp numpy pandas}
if ! command -v valgrind >/dev/null 2>&1; then
	echo "tracer_instr_bench: valgrind not installed, skipped"
	exit 0
fi
for v in $(env | sed -n 's/^\(PYTHON[A-Z_]*\|COLDSTART[A-Z_]*\)=.*/\1/p'); do
	unset "$v"
done
root=$PWD
out=build/bench/tracer-instr
rm -rf "$out"
mkdir -p "$out"
count() {
	valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
		sed -n 's/.*I *refs: *//p' | tr -d ,
}
# $1: the .so's directory, or "off"; the rest: the command.
traced() {
	dir=$1
	shift
	rm -rf "$root/$out/trace" && mkdir -p "$root/$out/trace"
	if [ "$dir" = off ]; then
		PYTHONPATH="$root/python/coldstart/_boot" COLDSTART_TRACE_DIR="$root/$out/trace" COLDSTART_TRACER=off \
			count "$@"
		return
	fi
	PYTHONPATH="$root/python/coldstart/_boot" COLDSTART_TRACE_DIR="$root/$out/trace" \
		COLDSTART_TRACER_PATH="$dir" COLDSTART_TRACER= count "$@"
	ls "$root/$out/trace"/*.trace >/dev/null 2>&1 || { echo "tracer_instr_bench: no trace written" >&2; exit 1; }
}
printf "tracer instructions, %s, callgrind (user space); ratios to importtime\n" "$PY"
[ -n "${BENCH_BEFORE:-}" ] && printf "+C(before): the C tracer built in %s\n" "$BENCH_BEFORE"
printf "%-9s %14s %14s %6s %14s %6s" package importtime "+boot only" ratio "+tracer(C)" ratio
[ -n "${BENCH_BEFORE:-}" ] && printf " %14s %6s" "+C(before)" ratio
printf "\n"
# $1: the row's name; the rest: the command (run from the current directory).
row() {
	name=$1
	shift
	traced off "$@" >/dev/null # writes the bootstrap's .pyc
	plain=$(count "$@")
	off=$(traced off "$@")
	c=$(traced "$root/python/coldstart" "$@")
	b=0
	[ -n "${BENCH_BEFORE:-}" ] && b=$(traced "$BENCH_BEFORE" "$@")
	awk -v p="$name" -v a="$plain" -v o="$off" -v c="$c" -v b="$b" 'BEGIN {
		printf "%-9s %14d %14d %6.3f %14d %6.3f", p, a, o, o / a, c, c / a
		if (b > 0)
			printf " %14d %6.3f", b, b / a
		printf "\n"
	}'
}
for pkg in $PKGS; do
	if ! "$PY" -c "import $pkg" 2>/dev/null; then
		printf "%-9s not installed, skipped\n" "$pkg"
		continue
	fi
	row "$pkg" "$PY" -X importtime -c "import $pkg"
done
boot_rows() {
	[ "${BENCH_BOOT:-1}" = 0 ] && return 0
	COLDSTART_CACHE_DIR="$root/$out/cache" ./coldstart profile --no-report -o "$out/boot.json" -- \
		"$PY" -c pass >/dev/null 2>&1 || { echo "tracer_instr_bench: coldstart profile failed" >&2; exit 1; }
	cached=$(ls -d "$root/$out/cache/_boot"/*/ 2>/dev/null | head -1)
	if [ -z "$cached" ] || ! ls "$cached/__pycache__"/*.pyc >/dev/null 2>&1; then
		echo "tracer_instr_bench: no cached bootstrap bytecode in $out/cache" >&2
		exit 1
	fi
	# The source bootstrap without the .pyc the rows above wrote beside it.
	mkdir -p "$out/srcboot"
	cp python/coldstart/_boot/sitecustomize.py "$out/srcboot/"
	printf "\nPYTHONDONTWRITEBYTECODE=1, traced (C tracer): the bootstrap compiled from source vs its cached .pyc\n"
	printf "%-9s %14s %14s %14s %14s %7s\n" package importtime "+C source boot" "+C cached pyc" saved "saved%"
	for pkg in json $PKGS; do
		"$PY" -c "import $pkg" 2>/dev/null || continue
		plain=$(PYTHONDONTWRITEBYTECODE=1 count "$PY" -X importtime -c "import $pkg")
		src=$(count_boot "$root/$out/srcboot" "$PY" -X importtime -c "import $pkg")
		pyc=$(count_boot "$cached" "$PY" -X importtime -c "import $pkg")
		awk -v p="$pkg" -v a="$plain" -v s="$src" -v c="$pyc" 'BEGIN {
			printf "%-9s %14d %14d %14d %14d %6.2f%%\n", p, a, s, c, s - c, 100 * (s - c) / s
		}'
	done
}
# $1: the bootstrap's directory; the rest: the command, traced with the C tracer, writing no .pyc.
count_boot() {
	dir=$1
	shift
	rm -rf "$root/$out/trace" && mkdir -p "$root/$out/trace"
	PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$dir" COLDSTART_PYDIR="$root/python/coldstart" \
		COLDSTART_TRACE_DIR="$root/$out/trace" COLDSTART_TRACER_PATH="$root/python/coldstart" COLDSTART_TRACER= \
		count "$@"
	ls "$root/$out/trace"/*.trace >/dev/null 2>&1 || { echo "tracer_instr_bench: no trace written" >&2; exit 1; }
}
boot_rows
[ "${BENCH_APPS:-1}" = 0 ] && exit 0
if "$PY" -c "import boto3" 2>/dev/null; then
	printf "import boto3\nboto3.client('s3', region_name='us-east-1', aws_access_key_id='x', aws_secret_access_key='y')\n" \
		>"$out/boto_client.py"
	row boto3-s3 "$PY" -X importtime "$out/boto_client.py"
else
	printf "%-9s boto3 not installed, skipped\n" boto3-s3
fi
if command -v django-admin >/dev/null 2>&1 && "$PY" -c "import django" 2>/dev/null; then
	mkdir -p "$out/proj"
	django-admin startproject site1 "$out/proj"
	(cd "$out/proj" && row django "$PY" -X importtime manage.py check)
else
	printf "%-9s Django not installed, skipped\n" django
fi
