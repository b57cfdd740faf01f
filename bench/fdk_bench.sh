#!/bin/sh
# Time-to-ready and time-to-first-response of Fn functions under the Fn
# limits (0.1 CPU, 128 MiB cgroup), measured by `coldstart profile --ready fn`
# side by side in one run: the floor process (bind, chmod, symlink, answer),
# coldstart-fdk in each warm mode, the function served through fdk.handle()
# (everything imported before ready), and the real fdk-python 0.1.117 when
# its source tree is found (FDK_PYTHON, or shared/peers/ beside the checkout).  Prints medians over RUNS runs and the
# ratio of each ready time to the floor's.  Target: lazy ready <= 1.1 x floor.
set -eu
cd "$(dirname "$0")/.."
PY=${PYTHON:-/usr/bin/python3}
RUNS=${RUNS:-10}
LIMITS=${LIMITS:---preset fn}
out=build/bench/fdk
mkdir -p "$out"

PEER=${FDK_PYTHON:-}
for cand in ../shared ../../shared /work/shared; do
	[ -z "$PEER" ] && [ -d "$cand/peers/fdk-python-0.1.117" ] && PEER=$(cd "$cand/peers/fdk-python-0.1.117" && pwd)
done
variants="floor lazy background eager fdk.handle"
if [ -f "$PEER/fdk/scripts/fdk.py" ] && "$PY" -c "import httptools, iso8601" 2>/dev/null; then
	variants="$variants fdk-python"
	mkdir -p "$out/bin"
	printf 'import sys\nfrom fdk.scripts.fdk import main\nsys.exit(main())\n' >"$out/bin/fdk"
else
	echo "fdk_bench: no fdk-python at $PEER (or no httptools/iso8601): its row is left out" >&2
fi

run() {
	name=$1
	round=$2
	shift 2
	pypath="$PWD/python"
	[ "$name" = fdk-python ] && pypath=$PEER
	# shellcheck disable=SC2086
	if ! PYTHONPATH="$pypath" ./coldstart profile --no-trace --quiet $LIMITS --no-baseline \
		--ready fn --no-report -o "$out/$name-$round.json" -- "$@" >/dev/null; then
		echo "fdk_bench: '$name' did not become ready in round $round; see $out/$name-$round.json" >&2
	fi
}

# Bytecode caches as an image build would leave them (compileall), so every
# variant pays the same for its own modules.
"$PY" -m compileall -q python samples/fn-hello bench >/dev/null
rm -f "$out"/*.json

# Round by round, each variant once per round, so machine noise and the CFS
# period boundaries hit every variant alike.
round=0
while [ "$round" -lt "$RUNS" ]; do
	round=$((round + 1))
	for variant in $variants; do
		case $variant in
		floor) run floor "$round" "$PY" bench/fdk_floor.py ;;
		lazy | background | eager)
			run "$variant" "$round" "$PY" python/coldstart-fdk --warm "$variant" samples/fn-hello/func.py handler ;;
		fdk.handle) run fdk.handle "$round" "$PY" samples/fn-hello/func.py ;;
		fdk-python) run fdk-python "$round" "$PY" "$out/bin/fdk" samples/fn-hello/func.py handler ;;
		esac
	done
done

"$PY" - "$out" <<'PYEOF'
import json, os, statistics, sys
out = sys.argv[1]
rows = []
for name in ("floor", "lazy", "background", "eager", "fdk.handle", "fdk-python"):
    ready, first, limits, pyver = [], [], None, None
    for f in sorted(os.listdir(out)):
        if not (f.startswith(name + "-") and f[len(name) + 1:-5].isdigit()):
            continue
        try:
            p = json.load(open(os.path.join(out, f)))
        except (OSError, ValueError):
            continue
        limits, pyver = p["limits"], p["python_version"]
        for r in p["runs"]:
            if r["warmup"]:
                continue
            if r["ready_us"] >= 0:
                ready.append(r["ready_us"])
            if r["first_response_us"] >= 0:
                first.append(r["first_response_us"])
    if not ready and name == "fdk-python":
        continue
    rows.append((name, statistics.median(ready) if ready else None,
                 statistics.median(first) if first else None, len(ready)))
    if name == "floor":
        floor_limits, floor_py = limits, pyver
floor = rows[0][1]
limits = floor_limits or {"cpus": 0, "memory": 0, "backend": None}
print("Fn readiness under %s CPU / %d MiB (%s), median of %s interleaved rounds, python %s" % (
    limits["cpus"], limits["memory"] // (1 << 20), limits["backend"], os.environ.get("RUNS", "10"), floor_py))
print("%-12s %12s %16s %12s %10s" % ("variant", "ready ms", "first resp ms", "ready/floor", "runs ok"))
for name, ready, first, n in rows:
    print("%-12s %12s %16s %12s %10d" % (
        name,
        "%.1f" % (ready / 1000) if ready is not None else "-",
        "%.1f" % (first / 1000) if first is not None else "-",
        "%.2f" % (ready / floor) if ready and floor else "-", n))
lazy = rows[1][1]
if lazy and floor:
    print("target: coldstart-fdk --warm lazy ready <= 1.1 x floor: %s (%.2f)" % (
        "met" if lazy <= 1.1 * floor else "NOT met", lazy / floor))
PYEOF
