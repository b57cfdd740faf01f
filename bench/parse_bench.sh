#!/bin/sh
# Times parsing a 1,000,000-row -X importtime log: `coldstart parse LOG -o
# out.json` (parse + model + JSON), and the parser alone through a small
# driver (bench/it_parse_driver.c).  Prints wall time and peak RSS next to the
# log's size.  The log is generated once into build/bench/.
# Usage: sh bench/parse_bench.sh [ROWS]
set -eu
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "parse_bench: /usr/bin/time missing (apt-get install time)" >&2; exit 1; }
rows=${1:-1000000}
dir=build/bench
log=$dir/importtime-$rows.log
mkdir -p "$dir"
if [ ! -s "$log" ]; then
	echo "generating $log"
	python3 bench/gen_importtime.py "$rows" "$log.tmp" && mv "$log.tmp" "$log"
fi
size=$(wc -c <"$log")

# The driver links the whole library (everything but main.c), as the tests do.
cc -std=c11 -D_GNU_SOURCE -DCOLDSTART_VERSION='"bench"' -O2 -Isrc -o "$dir/it_parse_driver" \
	bench/it_parse_driver.c $(find src -name '*.c' ! -name main.c | sort) \
	-ljansson -lelf -lz -lm -pthread

# measure LABEL CMD...: best wall time of 5 runs (nanosecond clock), with
# that run's CPU time (user+sys of every thread, 10 ms resolution; it exceeds
# wall when both CPUs work) and peak RSS.  The JSON output is removed before each run: replacing the previous
# run's 50 MB file would add the kernel's truncation of it to the time.
measure() {
	label=$1
	shift
	best=""
	for i in 1 2 3 4 5; do
		rm -f "$dir/out.json"
		t0=$(date +%s%N)
		/usr/bin/time -f "%M %U %S" -o "$dir/time.out" "$@" >/dev/null 2>"$dir/stderr.out" ||
			{ echo "$label: failed:"; cat "$dir/stderr.out"; return 0; }
		t1=$(date +%s%N)
		read -r kb usr sys <"$dir/time.out"
		secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')
		if [ -z "$best" ] || awk -v a="$secs" -v b="$best" 'BEGIN { exit !(a < b) }'; then
			best=$secs
			bestkb=$kb
			bestcpu=$(awk -v a="$usr" -v b="$sys" 'BEGIN { print a + b }')
		fi
	done
	awk -v l="$label" -v s="$best" -v c="$bestcpu" -v kb="$bestkb" -v size="$size" 'BEGIN {
		printf "%-34s wall %6.3f s  cpu %5.2f s  peak RSS %6.1f MiB = %.2f x log\n",
			l, s, c, kb / 1024, kb * 1024 / size }'
}

printf "log: %s, %d rows, %.1f MiB\n" "$log" "$rows" "$(awk -v s="$size" 'BEGIN { print s / 1048576 }')"
# How fast the machine is right now (shared machines drift by a third from
# minute to minute): counting the log's lines, in the same run.
measure "reference: wc -l of the log" wc -l "$log"
measure "parser only (it_feed_from)" "$dir/it_parse_driver" "$log"
if [ -x ./coldstart ] && ./coldstart parse --help >/dev/null 2>&1; then
	# The target: parse + model + JSON.  The report (top tables over a
	# million nodes) is measured separately.
	measure "coldstart parse -o json" ./coldstart parse "$log" -o "$dir/out.json" --no-report
	measure "  the same on one thread" env COLDSTART_THREADS=1 ./coldstart parse "$log" -o "$dir/out.json" --no-report
	measure "  + text report" ./coldstart parse "$log" -o "$dir/out.json"
else
	echo "coldstart parse: not built (make), skipped"
fi
