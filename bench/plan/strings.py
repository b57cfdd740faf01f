"""What the plan's string table saves (docs/plan.md, "The string table"):
coldstart-fdk with each function's plan, the table off
(COLDSTART_PLAN_STRINGS=0) and on, interleaved round by round (off, on,
on, off, ...), CPU time to the first response without a CPU limit (as
bench/plan/phases.py measures it; CPU time does not depend on the quota).
Prints the medians, their ratio, and the size of each plan's table.

usage: python3 bench/plan/strings.py [FUNC...]   (ROUNDS, default 5)
Plans come from build/bench/plan (run bench/plan_bench.sh once first).
"""
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import phases  # noqa: E402
from phases import plan_bench  # noqa: E402


def table_size(name):
    with open(plan_bench.plan_file(name)) as f:
        code = json.load(f).get("code") or {}
    s = code.get("strings")
    return (s[2], s[1]) if s else (0, 0)


def main():
    names = sys.argv[1:] or plan_bench.ALL
    rounds = int(os.environ.get("ROUNDS", "5"))
    subprocess.run([plan_bench.PY, "-m", "compileall", "-q",
                    os.path.join(plan_bench.ROOT, "python"), HERE,
                    plan_bench.FDK_PYTHON], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    print("cs-fdk+plan, CPU ms to the first response, median of %d "
          "interleaved rounds (%s)" % (rounds, plan_bench.PY))
    print("%-11s %9s %9s %7s %8s %9s %15s" % (
        "function", "table off", "table on", "off/on", "sources", "KiB",
        "answered/missed"))
    for n in names:
        got = {"0": [], "1": []}
        stats = None
        for i in range(rounds):
            order = ("0", "1") if i % 2 == 0 else ("1", "0")
            for s in order:
                os.environ["PHASES_ENV"] = "COLDSTART_PLAN_STRINGS=" + s
                r, data = phases.once(n, "cs-fdk+plan")
                got[s].append(r["first_cpu_ms"])
                if s == "1":
                    stats = data.get("strings")
        off, on = (statistics.median(got[s]) for s in ("0", "1"))
        rows, size = table_size(n)
        print("%-11s %9.1f %9.1f %7.3f %8d %9.1f %15s" % (
            n, off, on, off / on, rows, size / 1024.0,
            "%d/%d" % tuple(stats) if stats else "-"))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
