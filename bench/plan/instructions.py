"""Instructions from exec to the first response of the plan benchmark's
functions, which load does not move (diagnostics; not part of make bench):
each run is the benchmark's command under valgrind's cachegrind without
cache simulation, the whole process (its first response, then the end the
Fn agent gives it), summed over the processes it starts.

usage: python3 bench/plan/instructions.py [FUNC...]
  VARIANTS="fdk-python cs-fdk+plan"  (default cs-fdk+plan; "before" with
                                      BEFORE=DIR, a built checkout whose plans
                                      bench/plan_bench.sh made)
  FIRST=1  counts up to the first response only (callgrind, stopping at the
           process's first send: bench/cachegrind.py), not the whole process
  STRINGS="0 1"  runs cs-fdk+plan with COLDSTART_PLAN_STRINGS=0 and =1
Plans come from build/bench/plan (run bench/plan_bench.sh once first, and
again after changing coldstart's Python files: they are in every plan).
"""
import math
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import cachegrind  # noqa: E402
import fnagent  # noqa: E402
import plan_bench  # noqa: E402


FIRST = os.environ.get("FIRST") == "1"


def instructions(name, variant, env_extra):
    argv, env = plan_bench.command(name, variant)
    env.update(env_extra)
    # The same hash seed in every run: set and dict orders, so the count.
    env.setdefault("PYTHONHASHSEED", "0")
    out = tempfile.mkdtemp(prefix="instr-", dir="/tmp")
    argv = cachegrind.argv(out, argv, FIRST)
    r = plan_bench.answer(name, argv, env,
                          stderr_path=os.path.join(out, "stderr"))
    with open(os.path.join(out, "stderr"), errors="replace") as f:
        stale = [line for line in f if line.startswith("coldstart plan:")]
    if stale:
        sys.stderr.write("instructions: %s %s: plan not applied: %s"
                         % (name, variant, stale[0]))
    total = cachegrind.total(out, FIRST)
    shutil.rmtree(out, ignore_errors=True)
    return None if r["error"] or stale else total


def main():
    names = sys.argv[1:] or plan_bench.ALL
    variants = os.environ.get("VARIANTS", "cs-fdk+plan").split()
    strings = os.environ.get("STRINGS", "").split()
    cols = []
    for v in variants:
        if v == "cs-fdk+plan" and strings:
            cols += [(v, {"COLDSTART_PLAN_STRINGS": s}) for s in strings]
        else:
            cols.append((v, {}))
    print("instructions %s, millions (%s)" % (
        "to the first response" if FIRST else
        "of the whole process (its first response and its end)",
        plan_bench.PY))
    print("%-11s" % "function" + "".join(
        "%22s" % (v + ("" if not e else " strings=" + e[
            "COLDSTART_PLAN_STRINGS"])) for v, e in cols))
    # Beside each column after the first: its difference from the first,
    # and their geometric mean at the end.
    logs = [[] for _ in cols]
    for n in names:
        got = [instructions(n, v, e) for v, e in cols]
        cells = []
        for k, x in enumerate(got):
            cell = "%.1f" % (x / 1e6) if x else "failed"
            if k and x and got[0]:
                logs[k].append(math.log(x / got[0]))
                cell += " (%+.2f%%)" % ((x / got[0] - 1) * 100)
            cells.append("%22s" % cell)
        print("%-11s" % n + "".join(cells))
        sys.stdout.flush()
    if len(cols) > 1:
        print("%-11s" % "geomean" + "%22s" % "" + "".join(
            "%22s" % ("%+.2f%%" % ((math.exp(sum(g) / len(g)) - 1) * 100)
                      if g else "-") for g in logs[1:]))


if __name__ == "__main__":
    fnagent.interrupt_on_term()
    main()
