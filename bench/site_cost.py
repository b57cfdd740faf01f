"""What the interpreter's `site` step costs, part by part, and how much of
it a planned first call would not pay again anyway (docs/plan.md, "The
interpreter's own start").

    python3 bench/site_cost.py [PYTHON]

Counts instructions with valgrind (cachegrind, no cache simulation: the
count does not move with the machine's load) for:

  -c pass                the interpreter's whole start
  -S -c pass             without site
  site, no .pth code     site.main() with every `import` line of every .pth
                         file skipped and no sitecustomize/usercustomize:
                         the work a recorded replay of site could save
  + NAME.pth             the same plus that one file's `import` lines
  + sitecustomize        the same plus sitecustomize and usercustomize

Then, for each plan the plan benchmark made (build/bench/plan/NAME.plan.json,
set 1), the modules the .pth lines import that the function's first call,
run with its plan by coldstart-fdk, does not import itself: the most a start
without site's .pth code could save there.
"""
import glob
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

# Run with -S: does site.main() with the .pth import lines of the files in
# SITE_KEEP only ("*" for all), sitecustomize only with SITE_CUSTOM=1, and
# site.main() not at all with SITE_MAIN=0; then runs argv[1:] as a script.
HARNESS = r'''
import os, sys, site
keep = set(filter(None, os.environ.get("SITE_KEEP", "").split(",")))
cur = [None]
orig = site.addpackage
def addpackage(sitedir, name, known):
    cur[0] = name
    return orig(sitedir, name, known)
def _exec(line, *args):
    if "*" in keep or cur[0] in keep:
        caller = sys._getframe(1)
        sitedir = caller.f_locals.get("sitedir")
        exec(line, caller.f_globals, {"sitedir": sitedir})
site.addpackage = addpackage
site.exec = _exec
if os.environ.get("SITE_CUSTOM") != "1":
    site.execsitecustomize = site.execusercustomize = lambda: None
if os.environ.get("SITE_MAIN") != "0":
    site.main()
if len(sys.argv) > 1:
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
    with open(sys.argv[0]) as f:
        code = compile(f.read(), sys.argv[0], "exec")
    exec(code, {"__name__": "__main__", "__file__": sys.argv[0]})
'''


def instructions(argv, env=None):
    out = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no",
         "--cachegrind-out-file=/dev/null"] + argv,
        env=env, capture_output=True, text=True)
    m = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    if not m:
        sys.exit("site_cost: valgrind gave no count for %s:\n%s"
                 % (argv, out.stderr[-2000:]))
    return int(m.group(1).replace(",", ""))


def pth_files(py):
    """The .pth files site reads, in its order, with import lines."""
    code = ("import site, sys, os\n"
            "dirs = [site.getusersitepackages()] if site.ENABLE_USER_SITE "
            "else []\n"
            "for d in dirs + site.getsitepackages():\n"
            "    if os.path.isdir(d):\n"
            "        for n in sorted(os.listdir(d)):\n"
            "            if n.endswith('.pth'):\n"
            "                p = os.path.join(d, n)\n"
            "                with open(p, 'rb') as f:\n"
            "                    t = f.read().decode('utf-8', 'replace')\n"
            "                if any(l.startswith(('import ', 'import\\t'))\n"
            "                       for l in t.splitlines()):\n"
            "                    print(n)\n")
    out = subprocess.run([py, "-c", code], capture_output=True, text=True,
                         check=True)
    return list(dict.fromkeys(out.stdout.split()))


def imported(stderr):
    return {ln.rsplit("|", 1)[1].strip() for ln in stderr.splitlines()
            if ln.startswith("import time:") and "|" in ln}


def first_call_modules(py, harness, name, keep):
    """Modules imported (per -X importtime) by coldstart-fdk --plan for the
    plan bench's function NAME, site's .pth code run per KEEP."""
    import fnagent
    import plan_bench
    with open(os.path.join(plan_bench.fn_dir(name), "request.json"),
              "rb") as f:
        body = f.read()
    # The bench's own cs-fdk+plan command, started through the harness.
    argv, env = plan_bench.command(name, "cs-fdk+plan")
    env.update(PYTHONPROFILEIMPORTTIME="1", SITE_KEEP=keep, SITE_CUSTOM="1")
    err = os.path.join(ROOT, "build", "bench", "site-%s.stderr" % name)
    r = fnagent.run([py, "-S", harness] + argv[1:], env, [body],
                    stderr_path=err)
    if r["error"]:
        sys.exit("site_cost: %s did not answer: %s (see %s)"
                 % (name, r["error"], err))
    with open(err, errors="replace") as f:
        return imported(f.read())


def main():
    py = sys.argv[1] if len(sys.argv) > 1 else "/usr/bin/python3"
    if not shutil.which("valgrind"):
        sys.exit("site_cost: needs valgrind (apt-get install valgrind)")
    os.makedirs(os.path.join(ROOT, "build", "bench"), exist_ok=True)
    harness = os.path.join(ROOT, "build", "bench", "site_harness.py")
    with open(harness, "w") as f:
        f.write(HARNESS)
    env = dict(os.environ)
    files = pth_files(py)
    rows = [("-c pass", instructions([py, "-c", "pass"])),
            ("-S -c pass", instructions([py, "-S", "-c", "pass"]))]
    bare = instructions([py, "-S", harness], dict(env, SITE_MAIN="0"))
    own = instructions([py, "-S", harness], dict(env, SITE_KEEP=""))
    rows.append(("site, no .pth code", own - bare))
    for n in files:
        rows.append(("+ " + n, instructions([py, "-S", harness],
                                            dict(env, SITE_KEEP=n)) - own))
    rows.append(("+ sitecustomize", instructions(
        [py, "-S", harness], dict(env, SITE_KEEP="", SITE_CUSTOM="1")) - own))
    print("%s: instructions (valgrind)" % py)
    for what, n in rows:
        print("  %-44s %12s" % (what, format(n, ",")))
    plans = sorted(glob.glob(os.path.join(ROOT, "build", "bench", "plan",
                                          "*.plan.json")))
    names = [os.path.basename(p)[:-len(".plan.json")] for p in plans]
    names = [n for n in names if os.path.isdir(os.path.join(HERE, "plan",
                                                            "fn_" + n))]
    if not names:
        print("no plans of the plan bench (run `SET=1 sh bench/plan_bench.sh`"
              " first): the first-call comparison is left out")
        return
    print("modules site's .pth code imports that the first call (with its"
          " plan) does not import itself:")
    for n in names:
        with_pth = first_call_modules(py, harness, n, "*")
        without = first_call_modules(py, harness, n, "")
        extra = sorted(with_pth - without)
        print("  %-10s %3d of %3d: %s" % (n, len(extra), len(with_pth),
                                         " ".join(extra) or "-"))


if __name__ == "__main__":
    main()
