"""Instructions from exec to the first answer of the Lambda benchmark's
handlers, which load does not move (diagnostics; not part of make bench):
each variant of bench/lambda_bench.py (awslambdaric, cs-lambda,
cs-lambda+plan, floor) answers the handler's first event from the bench's
own Runtime API (lambda_bench.local_answer, no RIE, no cgroup) under
valgrind's cachegrind without cache simulation, the whole process until it
asks for the next event.  Plans and the floor's kept modules are made as
the benchmark makes them.  Prints millions of instructions per variant and
the ratios awslambdaric/plan, awslambdaric/floor and plan/floor, with
their geometric means.

usage: python3 bench/lambda_instructions.py [FUNC...] (default all six)
"""
import math
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cachegrind  # noqa: E402
import lambda_bench as lb  # noqa: E402


def instructions(argv, env, work, event):
    out = tempfile.mkdtemp(prefix="coldstart-lambda-ir-")
    try:
        r = lb.local_answer(cachegrind.argv(out, argv), env, work, event,
                            timeout=600, term=True)
        if r is None or r[0] != "response":
            raise SystemExit("no response under valgrind: %r" % (r,))
        return cachegrind.total(out), r[1]
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main():
    if shutil.which("valgrind") is None:
        print("lambda_instructions: skipped: needs valgrind")
        return 0
    _, ric = lb.setup()
    fns = sys.argv[1:] or lb.FUNCTIONS
    work = tempfile.mkdtemp(prefix="coldstart-lambda-ir-work-")
    try:
        event = lb.copy_handlers(work)
        print("M instructions, exec to the first answer (cachegrind)")
        print("%-9s| %12s %12s %15s %12s | ric/plan ric/floor plan/floor"
              % ("function", *lb.VARIANTS))
        ratios = [[], [], []]
        for fn in fns:
            lb.make_plan(work, fn, "plan_%s.json" % fn)
            lb.FLOOR_KEEP[fn] = lb.floor_keep(work, fn, event)
            n, bodies = {}, set()
            for v in lb.VARIANTS:
                n[v], body = instructions(*lb.command(work, fn, v, ric),
                                          work, event)
                bodies.add(body)
            if len(bodies) != 1:
                raise SystemExit("%s: the answers differ: %r" % (fn, bodies))
            q = (n["awslambdaric"] / n["cs-lambda+plan"],
                 n["awslambdaric"] / n["floor"],
                 n["cs-lambda+plan"] / n["floor"])
            for i, x in enumerate(q):
                ratios[i].append(x)
            print("%-9s| %12.1f %12.1f %15.1f %12.1f | %8.2f %9.2f %10.2f"
                  % ((fn,) + tuple(n[v] / 1e6 for v in lb.VARIANTS) + q),
                  flush=True)
        g = [math.exp(sum(map(math.log, x)) / len(x)) for x in ratios]
        print("geometric means: awslambdaric/cs-lambda+plan %.2f, "
              "awslambdaric/floor %.2f, cs-lambda+plan/floor %.2f" % tuple(g))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
