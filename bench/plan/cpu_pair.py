"""CPU time to the first response of one plan-benchmark function under its
plan, this checkout against BEFORE, or against itself started otherwise,
without a CPU quota (diagnostics; not part of make bench): the two
alternate run by run, each run the bench's command driven with the
function's request (bench/fnagent.py), its CPU time the scheduler's count
for the main process when the answer arrived.  Under the bench's 10% quota
CPU time moves with the throttling; here the spread is the machine's alone,
and many rounds resolve a few per cent.

usage: BEFORE=DIR python3 bench/plan/cpu_pair.py FUNC [ROUNDS]  (default 40)
   or: ALT_ENV="K=V ..." ALT_ARGS="-S ..." python3 bench/plan/cpu_pair.py
       FUNC [ROUNDS]
The second form runs the planned process once as the bench does and once
with ALT_ENV added to its environment and ALT_ARGS given to the interpreter
(a start without site needs its directories: ALT_ENV="PYTHONPATH=...").
Plans come from build/bench/plan (run bench/plan_bench.sh, with BEFORE=DIR
for the first form, once first); prints the median, quartiles and fastest
run of each.
"""
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import fnagent  # noqa: E402
import plan_bench  # noqa: E402


ALT_ENV = dict(kv.split("=", 1) for kv in
               os.environ.get("ALT_ENV", "").split())
ALT_ARGS = os.environ.get("ALT_ARGS", "").split()


def one(name, variant):
    if variant == "alternative":
        argv, env = plan_bench.command(name, "cs-fdk+plan")
        argv = argv[:1] + ALT_ARGS + argv[1:]
        env.update(ALT_ENV)
    else:
        argv, env = plan_bench.command(name, variant)
    r = plan_bench.answer(name, argv, env)
    if r["error"] or r["first_cpu_ms"] is None:
        sys.exit("cpu_pair: %s %s: %s" % (name, variant, r["error"]))
    return r["first_cpu_ms"]


def main():
    alt = bool(ALT_ENV or ALT_ARGS)
    if len(sys.argv) < 2 or bool(plan_bench.BEFORE) == alt:
        sys.exit(__doc__.split("\n\n")[1])
    name = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    got = {"alternative" if alt else "before": [], "cs-fdk+plan": []}
    for i in range(rounds):
        order = list(got) if i % 2 else list(got)[::-1]
        for v in order:
            got[v].append(one(name, v))
    print("%s: CPU ms to the first response, %d rounds, no quota" % (name, rounds))
    for v, xs in got.items():
        xs.sort()
        print("  %-12s median %6.2f  quartiles %6.2f %6.2f  fastest %6.2f"
              % (v, statistics.median(xs), xs[len(xs) // 4],
                 xs[3 * len(xs) // 4], xs[0]))


if __name__ == "__main__":
    fnagent.interrupt_on_term()
    main()
