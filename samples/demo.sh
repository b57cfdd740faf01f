#!/bin/sh
# `make demo`: the bundled Fn function (samples/fn-hello) profiled the
# fdk-python way and behind coldstart-fdk, under Fn's limits, in one screen.
# The full reports, profiles and flamegraphs go to $OUT.
#
# usage: samples/demo.sh COLDSTART PYTHON OUT
set -u
CS=$1
PY=$2
OUT=$3
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# From the tree's root, so the reports name the function as samples/fn-hello/func.py.
cd "$ROOT" || exit 1
FUNC=samples/fn-hello/func.py
mkdir -p "$OUT" || exit 1

LIMITS="--preset fn"
if ! "$CS" profile --python "$PY" $LIMITS --no-report -q -c pass 2>"$OUT/limits.err"; then
	echo "limits cannot be applied here ($(sed -n 's/^coldstart: error: //p' "$OUT/limits.err" | head -1)):"
	echo "running without them, so the times below are this machine's, not Fn's 0.1 CPU"
	LIMITS=--no-limits
fi

# profile NAME TITLE ARGS...: the report to $OUT/NAME.txt, its first three lines here.
profile() {
	name=$1
	title=$2
	shift 2
	echo "== $title"
	# The function's own output (the readiness probe's calls) goes to $OUT/NAME.out.
	"$CS" profile $LIMITS --ready fn -q --no-report -o "$OUT/$name.json" \
		--flamegraph "$OUT/$name.svg" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "coldstart exited with $rc:"
		tail -5 "$OUT/$name.err"
		exit $rc
	fi
	"$CS" report --color never "$OUT/$name.json" >"$OUT/$name.txt" || exit 1
	"$CS" report "$OUT/$name.json" | head -3
	echo "(full report: $OUT/$name.txt)"
	echo
}

PYTHONPATH=python profile fdk-python \
	"1. the fdk-python way: func.py imports json, asyncio, xml.dom.minidom and fdk, then listens" \
	--python "$PY" "$FUNC"
profile coldstart-fdk \
	"2. the same function behind coldstart-fdk: it listens first and imports func.py on the first call" \
	-- "$PY" python/coldstart-fdk "$FUNC" handler

"$PY" - "$OUT" <<'PYEOF'
import json, os, sys

out = sys.argv[1]


def median_run(doc):
    runs = [r for r in doc["runs"] if not r.get("warmup")] or doc["runs"]
    runs.sort(key=lambda r: r["wall_us"])
    return runs[(len(runs) - 1) // 2]


def ms(us):
    return "-" if us is None or us < 0 else ("%.1f ms" % (us / 1000) if us < 10**6 else "%.2f s" % (us / 10**6))


rows = []
for name in ("fdk-python", "coldstart-fdk"):
    r = median_run(json.load(open(os.path.join(out, name + ".json"))))
    rows.append((name, r["ready_us"], r["first_response_us"]))
print("== side by side (the median run of each)")
print("  %-16s %12s %16s %16s" % ("", "ready", "first response", "ready + first"))
for name, ready, first in rows:
    total = ready + first if ready >= 0 and first >= 0 else -1
    print("  %-16s %12s %16s %16s" % (name, ms(ready), ms(first), ms(total)))
(_, r0, f0), (_, r1, f1) = rows
if r0 > 0 and r1 > 0:
    print("  coldstart-fdk is ready %.1fx sooner; the first call pays the imports instead" % (r0 / r1))
print("  flamegraphs: %s, %s" % (os.path.join(out, "fdk-python.svg"), os.path.join(out, "coldstart-fdk.svg")))
PYEOF
