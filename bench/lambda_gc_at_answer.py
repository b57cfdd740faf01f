"""What the young collection at the first answer costs a planned
coldstart.lambda (diagnostics; not part of make bench): for each handler of
the Lambda benchmark, the runtime with its plan answers the first event
from the bench's own Runtime API (lambda_bench.local_answer, no RIE, no
cgroup) ROUNDS times, and at its first answer the collection the held
start would make there (gc.collect(0)) is made and timed first
(bench/lambda/gcprobe/sitecustomize.py).  Prints its median CPU time and
the garbage it found: the work the merge at the first answer takes off
(docs/plan.md, "The collector during the first call").

usage: ROUNDS=5 python3 bench/lambda_gc_at_answer.py [FUNC...] (default all six)
"""
import os
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lambda_bench as lb  # noqa: E402


def main():
    _, ric = lb.setup()
    rounds = int(os.environ.get("ROUNDS", "5"))
    fns = sys.argv[1:] or lb.FUNCTIONS
    work = tempfile.mkdtemp(prefix="coldstart-lambda-gc-")
    try:
        event = lb.copy_handlers(work)
        out = os.path.join(work, "gc.txt")
        print("the young collection at the first answer of coldstart.lambda "
              "--plan: CPU ms (median of %d), garbage found" % rounds)
        for fn in fns:
            lb.make_plan(work, fn, "plan_%s.json" % fn, verify=False)
            ms, found = [], set()
            for i in range(rounds):
                argv, env = lb.command(work, fn, "cs-lambda+plan", ric)
                env["PYTHONPATH"] = os.path.join(HERE, "lambda", "gcprobe") + \
                    ":" + env["PYTHONPATH"]
                env["GC_AT_ANSWER_OUT"] = out
                if os.path.exists(out):
                    os.unlink(out)
                a = lb.local_answer(argv, env, work, event)
                if a is None or a[0] != "response" or not os.path.exists(out):
                    raise SystemExit("%s: no answer, or no collection timed "
                                     "(was the plan applied?)" % fn)
                t, n = open(out).read().split()
                ms.append(float(t))
                found.add(int(n))
            print("%-9s| %7.1f ms | %s" % (fn, statistics.median(ms),
                                           "/".join(map(str, sorted(found)))))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
