"""Where a function's first response spends its CPU, per variant of the
plan benchmark (diagnostics for bench/plan_bench.py; not part of make
bench).  Each function runs ROUNDS times per variant without a CPU limit
(CPU time does not depend on the quota), with the phase probe
(bench/plan/probe) on PYTHONPATH, and prints medians in milliseconds of
CPU:

  cpu       the process's CPU time when the first response arrived
            (/proc/PID/task/*/schedstat)
  startup   thread CPU time when the probe loaded: interpreter start-up,
            site and the .pth files included
  install   coldstart.plan.install(): reading and checking the plan
  load      import self time of modules the plan loads (used by the request)
  eager     ... of modules the plan keeps eager
  forced    deferred bodies that ran before the response anyway, with what
            forced them (the largest are listed)
  created   import self time of modules created deferred (body not run)
  other     imports the plan does not index (stdlib before the plan, ...)
  rest      cpu - startup - imports: the server, the handler, the response

usage: python3 bench/plan/phases.py [FUNC...]   (ROUNDS, PYTHON, VARIANTS,
PHASES_ENV="COLDSTART_PLAN_REGEX=0 ..." to set switches in the targets)
Plans come from build/bench/plan (run bench/plan_bench.sh once first).
"""
import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
sys.path.insert(0, BENCH)
import fnagent  # noqa: E402
import plan_bench  # noqa: E402

PROBE = os.path.join(HERE, "probe")


def once(name, variant):
    argv, env = plan_bench.command(name, variant)
    out = tempfile.mktemp(prefix="phases-", suffix=".json", dir="/tmp")
    env = dict(env, PHASES_OUT=out)
    # PHASES_ENV="COLDSTART_PLAN_REGEX=0 ...": switches for comparisons.
    for kv in os.environ.get("PHASES_ENV", "").split():
        k, _, v = kv.partition("=")
        env[k] = v
    env["PYTHONPATH"] = os.pathsep.join(
        [PROBE] + [p for p in [env.get("PYTHONPATH")] if p])
    r = plan_bench.answer(name, argv, env, stderr_path=out + ".stderr")
    if r["error"]:
        raise SystemExit("phases: %s %s: %s" % (name, variant, r["error"]))
    try:
        with open(out) as f:
            data = json.load(f)
    finally:
        if os.path.exists(out):
            os.unlink(out)
    return r, data


def breakdown(r, data):
    ms = 1e6
    row = {"cpu": r["first_cpu_ms"], "startup": data["startup_thread_ns"] / ms,
           "install": data["install_ns"] / ms}
    cats = {"load": 0, "eager": 0, "forced": 0, "created": 0, "other": 0}
    forced = {}
    other = {}
    for x in data["rows"]:
        if x["kind"] == "forced":
            cats["forced"] += x["self"]
            forced[x["name"]] = (x["self"], x["by"])
        elif x["action"] in ("load", "eager"):
            cats[x["action"]] += x["self"]
        elif x["action"] == "defer":
            cats["created"] += x["self"]
        else:
            cats["other"] += x["self"]
            other[x["name"]] = (x["self"], x["action"])
    for k, v in cats.items():
        row[k] = v / ms
    row["rest"] = row["cpu"] - row["startup"] - sum(cats.values()) / ms
    row["pending"] = len(data["pending"])
    row["n_forced"] = len(forced)
    return row, forced, other


COLS = ["cpu", "startup", "install", "load", "eager", "forced", "created",
        "other", "rest"]


def main():
    names = sys.argv[1:] or plan_bench.ALL
    rounds = int(os.environ.get("ROUNDS", "3"))
    variants = os.environ.get("VARIANTS", "cs-fdk cs-fdk+plan floor").split()
    # Bytecode as the benchmark leaves it.
    import subprocess
    subprocess.run([plan_bench.PY, "-m", "compileall", "-q",
                    os.path.join(plan_bench.ROOT, "python"), HERE,
                    plan_bench.FDK_PYTHON], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    print("CPU ms to the first response, median of %d (%s)" % (
        rounds, plan_bench.PY))
    print("%-11s %-12s" % ("function", "variant") + "".join(
        "%9s" % c for c in COLS) + "  deferred forced")
    for n in names:
        plan_bench.FLOOR_KEEP[n] = plan_bench.floor_keep(n)
        for v in variants:
            rows, forced_all = [], []
            for _ in range(rounds):
                r, data = once(n, v)
                row, forced, other = breakdown(r, data)
                rows.append(row)
                forced_all.append(forced)
                others = other
            med = {c: statistics.median(x[c] for x in rows) for c in COLS}
            print("%-11s %-12s" % (n, v) + "".join(
                "%9.1f" % med[c] for c in COLS) + "  %8d %6d" % (
                rows[0]["pending"], rows[0]["n_forced"]))
            if os.environ.get("FORCED") and forced_all[0]:
                top = sorted(forced_all[0].items(), key=lambda kv: -kv[1][0])
                for mod, (ns, by) in top[:int(os.environ["FORCED"])]:
                    print("      forced %-40s %6.2f ms  by %s" % (
                        mod, ns / 1e6, by))
            if os.environ.get("CAUSES") and forced_all[0]:
                by = {}
                for mod, (ns, b) in forced_all[0].items():
                    k = b.split("(")[1].split(")")[0] if b.startswith(
                        "body of") else ("import system" if "importlib" in b
                                         else "request")
                    by[k] = by.get(k, 0) + ns
                print("      forced by: " + ", ".join(
                    "%s %.1f ms" % (k, v / 1e6) for k, v in sorted(
                        by.items(), key=lambda kv: -kv[1])))
            if os.environ.get("OTHER"):
                top = sorted(others.items(), key=lambda kv: -kv[1][0])
                for mod, (ns, a) in top[:int(os.environ["OTHER"])]:
                    print("      other  %-40s %6.2f ms  %s" % (
                        mod, ns / 1e6, a))


if __name__ == "__main__":
    fnagent.interrupt_on_term()
    main()
