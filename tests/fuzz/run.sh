#!/bin/sh
# Builds every tests/fuzz/fuzz_*.c as a libFuzzer binary (clang, ASan, UBSan)
# with all of src/ except main.c, and runs each for FUZZ_SECONDS (default 20)
# seeded from its fixtures: fuzz_importtime from tests/fixtures/importtime,
# other targets from the directory named on their first line as
#   // corpus: tests/fixtures/xyz
# with the dictionary tests/fuzz/<target>.dict when there is one.
# New inputs go to build/fuzz/corpus/<target>, crashes to build/fuzz/artifacts;
# the last line of each run says how many inputs it tried.
# The readers written in Python (coldstart-fdk's HTTP reader: httpwire; why's
# source scanner: imports) are fuzzed by tests/fuzz/fuzz_py.py, seeded from
# tests/fixtures/http and tests/fixtures/imports, with $PYTHON (python3).
# A target whose second line is `// python: embed` is built against Debian's
# libpython (/usr/bin/python3-config) as well.
# Then tests/fuzz/plan_mutate.py, the mutation harness of the plan applier,
# applies FUZZ_PLAN_RUNS (default 500) mutated plans in real interpreters
# (target name: plan_mutate).
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

PY_TARGETS="httpwire imports"
plan_mutate=yes
if [ $# -gt 0 ]; then
	targets=""
	py_targets=""
	plan_mutate=no
	for t in "$@"; do
		if [ "$t" = plan_mutate ]; then
			plan_mutate=yes
			continue
		fi
		case " $PY_TARGETS " in
		*" $t "*) py_targets="$py_targets $t" ;;
		*) targets="$targets tests/fuzz/${t%.c}.c" ;;
		esac
	done
else
	targets=$(ls tests/fuzz/fuzz_*.c)
	py_targets=$PY_TARGETS
fi

status=0
for t in $targets; do
	name=$(basename "$t" .c)
	seed=$(sed -n '1s|^// corpus: *||p' "$t")
	[ -n "$seed" ] || seed=tests/fixtures/${name#fuzz_}
	pyflags=""
	pylibs=""
	extra=""
	asan=${ASAN_OPTIONS:-}
	if sed -n 2p "$t" | grep -q '^// python: embed'; then
		# marshal allocates what a length field declares before it reads the
		# items (a tuple of 2^31 items from a 40-byte input): CPython's
		# MemoryError, not a bug of the reader; allocations above 1 GiB
		# return NULL (MemoryError) instead of ending the run.  The embedded
		# interpreter is never finalised, so what it holds at exit is no leak.
		extra="-malloc_limit_mb=1048576"
		asan="${asan:+$asan:}allocator_may_return_null=1:max_allocation_size_mb=1024:detect_leaks=0"
		pyconf=${FUZZ_PYTHON_CONFIG:-/usr/bin/python3-config}
		pyflags=$($pyconf --includes) || { echo "fuzz: $name needs $pyconf (python3-dev)" >&2; exit 1; }
		pylibs=$($pyconf --embed --ldflags)
	fi
	$CC $CFLAGS $pyflags -fsanitize=fuzzer -o "$out/$name" "$t" $objs -ljansson -lelf -lz -lm -pthread $pylibs
	[ "$seconds" = 0 ] && { echo "built $out/$name"; continue; }
	mkdir -p "$out/corpus/$name"
	if [ ! -d "$seed" ]; then
		echo "fuzz: $name: seed directory $seed missing, starting empty" >&2
		seed=""
	fi
	dict=""
	[ -f "tests/fuzz/$name.dict" ] && dict="-dict=tests/fuzz/$name.dict"
	echo "== $name for ${seconds}s, seeds from ${seed:-nothing}${dict:+, $dict}"
	if ! ASAN_OPTIONS="$asan" "$out/$name" $extra -max_total_time="$seconds" -max_len=65536 -timeout=60 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$out/artifacts/$name-" $dict \
		"$out/corpus/$name" $seed 2>"$out/$name.log"; then
		tail -40 "$out/$name.log" >&2
		echo "fuzz: $name FAILED: see $out/artifacts/$name-*" >&2
		status=1
	fi
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$name.log" | tail -1)
	echo "$name: ${runs:-?} runs"
done

[ "$seconds" = 0 ] && exit $status
for name in $py_targets; do
	case $name in
	httpwire) seed=tests/fixtures/http ;;
	imports) seed=tests/fixtures/imports ;;
	esac
	echo "== $name (python) for ${seconds}s, seeds from $seed"
	if ! ${PYTHON:-python3} tests/fuzz/fuzz_py.py "$name" "$seconds" "$seed" "$out/artifacts/$name" \
		>"$out/$name.log" 2>&1; then
		tail -40 "$out/$name.log" >&2
		echo "fuzz: $name FAILED: see $out/artifacts/$name-*" >&2
		status=1
	fi
	tail -1 "$out/$name.log"
done
if [ "$plan_mutate" = yes ]; then
	echo "== plan_mutate: ${FUZZ_PLAN_RUNS:-500} mutated plans and archives applied"
	mkdir -p "$out/plan_mutate"
	if ! /usr/bin/python3 tests/fuzz/plan_mutate.py --runs "${FUZZ_PLAN_RUNS:-500}" \
		--seed "${FUZZ_PLAN_SEED:-$(date +%s)}" --workdir "$out/plan_mutate" >"$out/plan_mutate.log" 2>&1; then
		tail -40 "$out/plan_mutate.log" >&2
		echo "fuzz: plan_mutate FAILED: see $out/plan_mutate.log" >&2
		status=1
	fi
	tail -1 "$out/plan_mutate.log"
fi
exit $status
