#!/bin/sh
# Tracer overhead: median wall time of `python -X importtime -c 'import PKG'`
# without and with coldstart's bootstrap + tracer (C extension, and the
# pure-Python fallback for reference), runs interleaved so drift hits every
# column alike.  Usage: bench/tracer_bench.sh [runs] [python]   (default 15,
# /usr/bin/python3; run `make tracer` first).  Packages: aiohttp fastapi, or
# $BENCH_PACKAGES.
set -eu
runs=${1:-15}
py=${2:-/usr/bin/python3}
pkgs=${BENCH_PACKAGES:-"aiohttp fastapi"}
root=$(cd "$(dirname "$0")/.." && pwd)
boot=$root/python/coldstart/_boot
suffix=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
if [ ! -f "$root/python/coldstart/_tracer$suffix" ]; then
	echo "tracer_bench: no $root/python/coldstart/_tracer$suffix (run make tracer)" >&2
	exit 1
fi
[ "$runs" -ge 10 ] || { echo "tracer_bench: use at least 10 runs" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

now() { date +%s%N; }

# one MODE PKG: prints the wall time of one run in microseconds.
one() {
	rm -rf "$tmp/t" && mkdir "$tmp/t"
	t0=$(now)
	case $1 in
	plain) env -u PYTHONDONTWRITEBYTECODE -u PYTHONPATH "$py" -X importtime -c "import $2" 2>/dev/null ;;
	c) env -u PYTHONDONTWRITEBYTECODE PYTHONPATH="$boot" COLDSTART_TRACE_DIR="$tmp/t" \
		"$py" -X importtime -c "import $2" 2>/dev/null ;;
	py) env -u PYTHONDONTWRITEBYTECODE PYTHONPATH="$boot" COLDSTART_TRACE_DIR="$tmp/t" COLDSTART_TRACER=py \
		"$py" -X importtime -c "import $2" 2>/dev/null ;;
	esac
	t1=$(now)
	echo $(((t1 - t0) / 1000))
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

echo "tracer overhead, $py ($("$py" -c 'import sys; print(sys.version.split()[0])')), $runs runs each, interleaved, median wall"
printf '%-10s %12s %12s %9s %12s %9s\n' package "importtime" "+tracer(C)" ratio "+tracer(py)" ratio
for pkg in $pkgs; do
	if ! "$py" -c "import $pkg" 2>/dev/null; then
		printf '%-10s not importable by %s, skipped\n' "$pkg" "$py"
		continue
	fi
	# Warm the page cache and the .pyc files first.
	for m in plain c py; do one $m "$pkg" >/dev/null; done
	: >"$tmp/plain" && : >"$tmp/c" && : >"$tmp/py"
	i=0
	while [ $i -lt "$runs" ]; do
		for m in plain c py; do one $m "$pkg" >>"$tmp/$m"; done
		i=$((i + 1))
	done
	p=$(median <"$tmp/plain") c=$(median <"$tmp/c") y=$(median <"$tmp/py")
	printf '%-10s %9d us %9d us %8s %9d us %8s\n' "$pkg" "$p" "$c" \
		"$(awk "BEGIN { printf \"%.3f\", $c / $p }")" "$y" "$(awk "BEGIN { printf \"%.3f\", $y / $p }")"
done
