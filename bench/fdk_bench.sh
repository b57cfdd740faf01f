#!/bin/sh
# Time-to-ready and time-to-first-response of Fn functions under the Fn
# limits (0.1 CPU, 128 MiB cgroup), measured by `coldstart profile --ready fn`
# side by side in one run: the floor process (bind, chmod, symlink, answer),
# coldstart-fdk in each warm mode, and the function served the fdk-python way
# (everything imported before ready).  Prints medians over RUNS runs and the
# ratio of each ready time to the floor's.  Target: lazy ready <= 1.25 x floor.
set -eu
cd "$(dirname "$0")/.."
PY=${PYTHON:-/usr/bin/python3}
RUNS=${RUNS:-10}
LIMITS=${LIMITS:---preset fn}
out=build/bench/fdk
mkdir -p "$out"

run() {
	name=$1
	shift
	# shellcheck disable=SC2086
	if ! PYTHONPATH="$PWD/python" ./coldstart profile --no-trace --quiet $LIMITS -n "$RUNS" --warmup 1 \
		--ready fn --no-report -o "$out/$name.json" -- "$@" >/dev/null; then
		echo "fdk_bench: '$name' did not become ready; see $out/$name.json" >&2
	fi
}

# Interleave the variants round by round so machine noise hits them alike.
for variant in floor lazy background eager fdk-python; do
	case $variant in
	floor) run floor "$PY" bench/fdk_floor.py ;;
	lazy | background | eager)
		run "$variant" "$PY" python/coldstart-fdk --warm "$variant" samples/fn-hello/func.py handler ;;
	fdk-python) run fdk-python "$PY" samples/fn-hello/func.py ;;
	esac
done

"$PY" - "$out" <<'PYEOF'
import json, os, statistics, sys
out = sys.argv[1]
rows = []
for name in ("floor", "lazy", "background", "eager", "fdk-python"):
    path = os.path.join(out, name + ".json")
    try:
        p = json.load(open(path))
    except (OSError, ValueError):
        rows.append((name, None, None, 0)); continue
    runs = [r for r in p["runs"] if not r["warmup"]]
    ready = [r["ready_us"] for r in runs if r["ready_us"] >= 0]
    first = [r["first_response_us"] for r in runs if r["first_response_us"] >= 0]
    rows.append((name, statistics.median(ready) if ready else None,
                 statistics.median(first) if first else None, len(ready)))
floor = rows[0][1]
limits = json.load(open(os.path.join(out, "floor.json")))["limits"]
print("Fn readiness under %s CPU / %d MiB (%s), median of %s runs each, python %s" % (
    limits["cpus"], limits["memory"] // (1 << 20), limits["backend"], os.environ.get("RUNS", "10"),
    json.load(open(os.path.join(out, "floor.json")))["python_version"]))
print("%-12s %12s %16s %12s %10s" % ("variant", "ready ms", "first resp ms", "ready/floor", "runs ok"))
for name, ready, first, n in rows:
    print("%-12s %12s %16s %12s %10d" % (
        name,
        "%.1f" % (ready / 1000) if ready is not None else "-",
        "%.1f" % (first / 1000) if first is not None else "-",
        "%.2f" % (ready / floor) if ready and floor else "-", n))
lazy = rows[1][1]
if lazy and floor:
    print("target: coldstart-fdk --warm lazy ready <= 1.25 x floor: %s (%.2f)" % (
        "met" if lazy <= 1.25 * floor else "NOT met", lazy / floor))
PYEOF
