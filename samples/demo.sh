#!/bin/sh
# `make demo`: the bundled Fn function (samples/fn-hello) profiled the
# fdk-python way, behind coldstart-fdk, and behind coldstart-fdk with a
# verified start-up plan, under Fn's limits, in one screen.  The full
# reports, profiles, the plan and flamegraphs go to $OUT.
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

# The fix that makes the first call cheap too: a plan made from one sample
# request and verified (the same response with and without it), then applied.
if "$CS" plan --fn "$FUNC" handler --python "$PY" --request samples/fn-hello/request.json --verify \
	-o "$OUT/plan.json" >"$OUT/plan.out" 2>"$OUT/plan.err"; then
	profile coldstart-fdk-plan \
		"3. the same with a verified start-up plan (coldstart plan --fn ... --verify; coldstart-fdk --plan)" \
		-- "$PY" python/coldstart-fdk --plan "$OUT/plan.json" "$FUNC" handler
else
	echo "== 3. no start-up plan: coldstart plan exited with $?:"
	tail -3 "$OUT/plan.err" | sed 's/^/   /'
	echo
fi

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
for name in ("fdk-python", "coldstart-fdk", "coldstart-fdk-plan"):
    path = os.path.join(out, name + ".json")
    if name == "coldstart-fdk-plan" and not os.path.exists(path):
        continue
    r = median_run(json.load(open(path)))
    ready, first = r["ready_us"], r["first_response_us"]
    # Fn's readiness is the socket; the first response is counted from it,
    # so exec -> first answer is the sum, what the caller of a cold
    # function waits for.
    total = ready + first if ready >= 0 and first >= 0 else -1
    rows.append((name, ready, first, total))
print("== side by side (the median run of each; the first response counts from ready)")
print("  %-20s %10s %16s %16s" % ("", "ready", "first response", "ready + first"))
for name, ready, first, total in rows:
    print("  %-20s %10s %16s %16s" % (name, ms(ready), ms(first), ms(total)))
base = rows[0][3]
for name, ready, first, total in rows[1:]:
    if base > 0 and total > 0 and ready > 0:
        first_call = ("%.1fx sooner" % (base / total) if base / total >= 1.1
                      else "no sooner" if base / total > 0.9 else "%.1fx later" % (total / base))
        print("  %s: ready %.1fx sooner than fdk-python, first call answered %s"
              % (name, rows[0][1] / ready, first_call))
print("  flamegraphs: %s" % ", ".join(os.path.join(out, n + ".svg") for n, _, _, _ in rows))
PYEOF
