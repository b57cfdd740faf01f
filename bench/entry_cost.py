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
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import cachegrind  # noqa: E402
import fnagent  # noqa: E402
import plan_bench  # noqa: E402


def count(name, entry, cwd):
    with open(os.path.join(plan_bench.fn_dir(name), "request.json"),
              "rb") as f:
        body = f.read()
    # The bench's own cs-fdk+plan command: [python, the script, args...].
    argv, env = plan_bench.command(name, "cs-fdk+plan")
    env["PYTHONHASHSEED"] = "0"
    if entry == "module":
        env["PYTHONPATH"] = os.path.join(ROOT, "python")
        argv = [argv[0], "-m", "coldstart.fdk"] + argv[2:]
    out = os.path.join(ROOT, "build", "bench",
                       "entry-%s-%s" % (name, entry))
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    argv = cachegrind.argv(out, argv)
    here = os.getcwd()
    os.chdir(cwd)
    try:
        r = fnagent.run(argv, env, [body], timeout=600)
    finally:
        os.chdir(here)
    if r["error"]:
        sys.exit("entry_cost: %s by %s did not answer: %s"
                 % (name, entry, r["error"]))
    return cachegrind.total(out)


def main():
    if not shutil.which("valgrind"):
        sys.exit("entry_cost: needs valgrind (apt-get install valgrind)")
    args = sys.argv[1:]
    cwd = args.pop(0) if args and os.path.isdir(args[0]) else "/tmp"
    names = args or ["numpy", "requests", "jinja2"]
    subprocess.run([plan_bench.PY, "-m", "compileall", "-q",
                    os.path.join(ROOT, "python")], check=True)
    print("instructions to the first response with the plan, -m run from %s"
          % cwd)
    print("%-10s %14s %14s %7s" % ("function", "script", "python -m",
                                    "-m/script"))
    for n in names:
        if not os.path.isfile(plan_bench.plan_file(n)):
            sys.exit("entry_cost: no plan for %s (run `SET=1 sh "
                     "bench/plan_bench.sh` first)" % n)
        s = count(n, "script", cwd)
        m = count(n, "module", cwd)
        print("%-10s %14s %14s %7.3f" % (n, format(s, ","), format(m, ","),
                                         m / s))


if __name__ == "__main__":
    main()
