#!/bin/sh
# Builds every tests/fuzz/fuzz_*.c as a libFuzzer binary (clang, ASan, UBSan)
# with all of src/ except main.c, and runs each for FUZZ_SECONDS (default 20)
# seeded from its fixtures: fuzz_importtime from tests/fixtures/importtime,
# other targets from the directory named on their first line as
#   // corpus: tests/fixtures/xyz
# with the dictionary tests/fuzz/<target>.dict when there is one.
# New inputs go to build/fuzz/corpus/<target>, crashes to build/fuzz/artifacts;
# the last line of each run says how many inputs it tried.
# Usage: sh tests/fuzz/run.sh [target...]   (FUZZ_SECONDS=0 only builds)
set -eu
cd "$(dirname "$0")/../.."
seconds=${FUZZ_SECONDS:-20}
out=build/fuzz
CC=${FUZZ_CC:-clang}
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# A small line limit lets short inputs reach the overlong-line path.
CFLAGS="-std=c11 -D_GNU_SOURCE -g -O1 -Isrc -DIT_MAX_LINE=((size_t)64) -DCOLDSTART_VERSION=\"fuzz\" $SAN"

command -v "$CC" >/dev/null || { echo "fuzz: $CC not found (apt-get install clang)" >&2; exit 1; }
mkdir -p "$out/obj" "$out/corpus" "$out/artifacts"

# The library's objects, compiled as many at a time as there are CPUs.
objs=""
pids=""
running=0
cpus=$(nproc 2>/dev/null || echo 1)
failed=0
wait_compiles() {
	for pid in $pids; do
		wait "$pid" || failed=1
	done
	pids=""
	running=0
}
for src in $(find src -name '*.c' | sort); do
	case $src in */main.c) continue ;; esac
	obj="$out/obj/$(echo "$src" | tr / _).o"
	if [ ! -e "$obj" ] || [ "$src" -nt "$obj" ] || [ -n "$(find src -name '*.h' -newer "$obj" | head -1)" ]; then
		rm -f "$obj"
		$CC $CFLAGS -fsanitize=fuzzer-no-link -c -o "$obj" "$src" ||
			echo "fuzz: cannot compile $src" >&2 &
		pids="$pids $!"
		running=$((running + 1))
		[ "$running" -lt "$cpus" ] || wait_compiles
	fi
	objs="$objs $obj"
done
wait_compiles
for obj in $objs; do
	[ -e "$obj" ] || failed=1
done
[ "$failed" = 0 ] || { echo "fuzz: the library did not compile" >&2; exit 1; }

if [ $# -gt 0 ]; then
	targets=""
	for t in "$@"; do targets="$targets tests/fuzz/${t%.c}.c"; done
else
	targets=$(ls tests/fuzz/fuzz_*.c)
fi

status=0
for t in $targets; do
	name=$(basename "$t" .c)
	seed=$(sed -n '1s|^// corpus: *||p' "$t")
	[ -n "$seed" ] || seed=tests/fixtures/${name#fuzz_}
	$CC $CFLAGS -fsanitize=fuzzer -o "$out/$name" "$t" $objs -ljansson -lelf -lz -lm -pthread
	[ "$seconds" = 0 ] && { echo "built $out/$name"; continue; }
	mkdir -p "$out/corpus/$name"
	if [ ! -d "$seed" ]; then
		echo "fuzz: $name: seed directory $seed missing, starting empty" >&2
		seed=""
	fi
	dict=""
	[ -f "tests/fuzz/$name.dict" ] && dict="-dict=tests/fuzz/$name.dict"
	echo "== $name for ${seconds}s, seeds from ${seed:-nothing}${dict:+, $dict}"
	if ! "$out/$name" -max_total_time="$seconds" -max_len=65536 -timeout=60 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$out/artifacts/$name-" $dict \
		"$out/corpus/$name" $seed 2>"$out/$name.log"; then
		tail -40 "$out/$name.log" >&2
		echo "fuzz: $name FAILED: see $out/artifacts/$name-*" >&2
		status=1
	fi
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$name.log" | tail -1)
	echo "$name: ${runs:-?} runs"
done
exit $status
