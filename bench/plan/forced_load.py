"""Whether a plan would do better loading at once the deferred modules that
its function's first response forces anyway (diagnostics for docs/plan.md;
not part of make bench).  One probed run (bench/plan/phases.py) names the
modules forced before the response; a copy of the plan marks them "load";
then the plan and the copy alternate run by run without a CPU limit, and
the medians of CPU time to the first response are printed with their ratio
and whether the responses were the same.  The plan file is put back on
every path (Ctrl-C, SIGTERM included).

usage: python3 bench/plan/forced_load.py FUNC [RUNS]   (default 9 runs each)
  MEASURE=instructions: instructions to the first response and exit instead
  (valgrind, as bench/plan/instructions.py; load does not move them), RUNS
  defaulting to 1
Plans come from build/bench/plan (run bench/plan_bench.sh once first).
"""
import json
import os
import shutil
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import fnagent  # noqa: E402
import instructions  # noqa: E402
import phases  # noqa: E402
import plan_bench  # noqa: E402


def first_response_cpu(name):
    argv, env = plan_bench.command(name, "cs-fdk+plan")
    log = os.path.join(plan_bench.OUT, name + "-forced-load.stderr")
    r = plan_bench.answer(name, argv, env, stderr_path=log)
    with open(log, errors="replace") as f:
        stale = [line for line in f if line.startswith("coldstart plan:")]
    if r["error"] or stale:
        raise SystemExit("forced_load: %s: %s" % (name, r["error"] or stale[0].strip()))
    return r["first_cpu_ms"], r["responses"]


def main():
    if len(sys.argv) not in (2, 3) or sys.argv[1] not in plan_bench.ALL:
        sys.stderr.write("usage: forced_load.py FUNC [RUNS]; FUNC one of %s\n" % " ".join(plan_bench.ALL))
        sys.exit(2)
    name = sys.argv[1]
    instr = os.environ.get("MEASURE") == "instructions"
    runs = int(sys.argv[2]) if len(sys.argv) == 3 else 1 if instr else 9
    plan = plan_bench.plan_file(name)
    _, data = phases.once(name, "cs-fdk+plan")
    forced = {x["name"] for x in data["rows"] if x["kind"] == "forced"}
    with open(plan) as f:
        text = f.read()
    p = json.loads(text)
    changed = 0
    for row in p["index"]:
        if row[0] in forced and row[5] == "defer":
            row[5] = "load"
            changed += 1
    variants = {"plan": text, "forced-load": json.dumps(p)}
    st = os.stat(plan)
    saved = plan + ".forced-load-saved"
    shutil.copy2(plan, saved)
    cpu = {v: [] for v in variants}
    answers = {}
    try:
        for k in range(runs):
            for v in (("plan", "forced-load") if k % 2 == 0 else ("forced-load", "plan")):
                with open(plan, "w") as f:
                    f.write(variants[v])
                os.utime(plan, ns=(st.st_atime_ns, st.st_mtime_ns))
                if instr:
                    c = instructions.instructions(name, "cs-fdk+plan", {})
                    if c is None:
                        raise SystemExit("forced_load: %s: the instrumented run failed" % name)
                    cpu[v].append(c / 1e6)
                    continue
                c, rs = first_response_cpu(name)
                cpu[v].append(c)
                answers.setdefault(v, rs)
    finally:
        shutil.copy2(saved, plan)
        os.unlink(saved)
    print("%s: %d modules forced before the first response, %d of them deferred in the plan" % (
        name, len(forced), changed))
    what = "million instructions" if instr else "ms of CPU"
    for v in variants:
        print("  %-12s median %s to the first response %.1f over %d runs" % (
            v, what, statistics.median(cpu[v]), len(cpu[v])))
    print("  forced-load / plan %.3f%s" % (
        statistics.median(cpu["forced-load"]) / statistics.median(cpu["plan"]),
        "" if instr else "; responses " + (
            "identical" if answers["plan"] == answers["forced-load"] else "DIFFERENT")))


if __name__ == "__main__":
    fnagent.interrupt_on_term()
    main()
