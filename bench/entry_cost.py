"""Instructions to the first response of the plan bench's functions with
their plans, by the two documented entrypoints: the script
(python/coldstart-fdk) and `python -m coldstart.fdk`, the latter run from
a working directory that is not on the plan's sys.path (DIR, default
/tmp), so every planned top-level module is checked against it as the
path-based finder would be (docs/fdk.md, "Measured").

    python3 bench/entry_cost.py [DIR] [NAME...]

Needs valgrind (cachegrind, no cache simulation: counts do not move with
the machine's load) and the plans `SET=1 sh bench/plan_bench.sh` made in
build/bench/plan/.  PYTHONHASHSEED=0 keeps the counts repeatable.
"""
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import fnagent  # noqa: E402

PY = "/usr/bin/python3"


def count(name, entry, cwd):
    d = os.path.join(HERE, "plan", "fn_" + name)
    with open(os.path.join(d, "request.json"), "rb") as f:
        body = f.read()
    plan = os.path.join(ROOT, "build", "bench", "plan", name + ".plan.json")
    out = os.path.join(ROOT, "build", "bench", "entry-%s-%s.cg" % (name, entry))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("COLDSTART_") and k != "PYTHONPATH"}
    env["PYTHONHASHSEED"] = "0"
    if entry == "script":
        argv = [PY, os.path.join(ROOT, "python", "coldstart-fdk")]
    else:
        env["PYTHONPATH"] = os.path.join(ROOT, "python")
        argv = [PY, "-m", "coldstart.fdk"]
    argv = ["valgrind", "--tool=cachegrind", "--cache-sim=no",
            "--cachegrind-out-file=" + out] + argv + \
        ["--plan", plan, os.path.join(d, "func.py"), "handler"]
    here = os.getcwd()
    os.chdir(cwd)
    try:
        r = fnagent.run(argv, env, [body], timeout=600)
    finally:
        os.chdir(here)
    if r["error"]:
        sys.exit("entry_cost: %s by %s did not answer: %s"
                 % (name, entry, r["error"]))
    with open(out) as f:
        m = re.search(r"^summary:\s+(\d+)", f.read(), re.M)
    return int(m.group(1))


def main():
    if not shutil.which("valgrind"):
        sys.exit("entry_cost: needs valgrind (apt-get install valgrind)")
    args = sys.argv[1:]
    cwd = args.pop(0) if args and os.path.isdir(args[0]) else "/tmp"
    names = args or ["numpy", "requests", "jinja2"]
    subprocess.run([PY, "-m", "compileall", "-q",
                    os.path.join(ROOT, "python")], check=True)
    print("instructions to the first response with the plan, -m run from %s"
          % cwd)
    print("%-10s %14s %14s %7s" % ("function", "script", "python -m",
                                    "-m/script"))
    for n in names:
        if not os.path.isfile(os.path.join(ROOT, "build", "bench", "plan",
                                           n + ".plan.json")):
            sys.exit("entry_cost: no plan for %s (run `SET=1 sh "
                     "bench/plan_bench.sh` first)" % n)
        s = count(n, "script", cwd)
        m = count(n, "module", cwd)
        print("%-10s %14s %14s %7.3f" % (n, format(s, ","), format(m, ","),
                                         m / s))


if __name__ == "__main__":
    main()
