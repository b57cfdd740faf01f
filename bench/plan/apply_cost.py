#!/usr/bin/env python3
"""What applying a plan costs at start-up, one checkout against another.

Usage: python3 bench/plan/apply_cost.py BEFORE AFTER [ROUNDS] [PROGRAM...]

BEFORE and AFTER are built checkouts (each with its coldstart binary and
python/ directory).  Each makes its own plan of each program with its own
`coldstart plan`; then the programs run with their plans applied through the
bootstrap, the two checkouts alternating round by round (the order swapped
every round), and the median child CPU time (user + system) of each is
printed.  The programs (default: json+email.parser, and pandas when it is
installed) are written to a private temporary directory, which is removed.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

PROGRAMS = {
    "small": "import json, email.parser\n"
             "print(email.parser.Parser().parsestr('A: b\\n\\nx')['A'])\n",
    "pandas": "import pandas, json, email.parser\n"
              "print(pandas.DataFrame({'a': [1, 2]}).sum().to_dict())\n",
}
PY = "/usr/bin/python3"


def env(tree, plan=None):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("COLDSTART") and k != "PYTHONPATH"}
    if plan:
        e["PYTHONPATH"] = os.path.join(tree, "python", "coldstart", "_boot",
                                       "plan")
        e["COLDSTART_PLAN"] = plan
    return e


def cpu_ms(tree, plan, script, cwd):
    p = subprocess.Popen([PY, script], cwd=cwd, env=env(tree, plan),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0 or err:
        sys.exit("%s with %s failed: %s" % (script, plan, err.decode()))
    return (ru.ru_utime + ru.ru_stime) * 1000


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    trees = {"before": os.path.abspath(sys.argv[1]),
             "after": os.path.abspath(sys.argv[2])}
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    names = sys.argv[4:] or [n for n in PROGRAMS if n != "pandas" or
                             subprocess.run([PY, "-c", "import pandas"],
                                            capture_output=True).returncode == 0]
    work = tempfile.mkdtemp(prefix="applycost")
    try:
        for n in names:
            with open(os.path.join(work, "prog_" + n + ".py"), "w") as f:
                f.write(PROGRAMS[n])
            for v, tree in trees.items():
                plan = os.path.join(work, "%s-%s.json" % (v, n))
                p = subprocess.run([os.path.join(tree, "coldstart"), "plan",
                                    "-o", plan, "--", PY, "prog_" + n + ".py"], cwd=work,
                                   env=env(tree), capture_output=True, text=True)
                if p.returncode != 0:
                    sys.exit("cannot plan %s with %s: %s" % (n, tree, p.stderr))
        for n in names:
            res = {"before": [], "after": []}
            for r in range(rounds):
                for v in (("before", "after") if r % 2 == 0 else
                          ("after", "before")):
                    res[v].append(cpu_ms(trees[v], os.path.join(
                        work, "%s-%s.json" % (v, n)), "prog_" + n + ".py", work))
            b = statistics.median(res["before"])
            a = statistics.median(res["after"])
            print("%-7s CPU ms, median of %d interleaved runs: before %.1f, "
                  "after %.1f (after/before %.3f)" % (n, rounds, b, a, a / b))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
