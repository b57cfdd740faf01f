"""The plan benchmark (bench/plan_bench.sh): real Fn functions, each under
a 10% CPU / 128 MiB cgroup v1 group, four ways, interleaved round by round:

  fdk-python   fdk-python 0.1.117's own entry point (`fdk func.py handler`)
  cs-fdk       coldstart-fdk without a plan
  cs-fdk+plan  coldstart-fdk --plan (made and verified by `coldstart plan`)
  floor        bench/plan/floor.py: a bare socket server that applies the
               plan in strict mode with lazy from-imports, so only the
               modules the request used run their bodies, with what those
               bodies read at import (and native extensions); where strict
               mode changes the answer, the modules bisection shows it
               needs stay eager (floor_keep)
  before       with BEFORE=DIR only: coldstart-fdk --plan of another
               checkout of coldstart (its own `coldstart plan`, its own
               copy of the functions), for before/after tables

Two sets of functions: set 1 (bench/plan/fn_*: numpy, pandas, requests,
aiohttp, pydantic, sqlalchemy, jinja2, boto3), the functions the plan work
was measured on, and set 2 (bench/plan/fn2_*: lxml, yaml, crypto, networkx,
docutils, pygments), on packages set 1 does not use, written after it and
never tuned for.

Prints exec -> ready, exec -> first response and peak memory (medians), the
CPU time to the first response (the cpuacct group's usage when the answer
arrived: every process of the function), the ratios by wall and by CPU and
their geometric means, per set, and checks that every response (Fn-Http-
Status and body) is the same in every round and variant.  Environment:
ROUNDS (default 3), SET (1, 2 or all, the default), FUNCS (names, default
the set's), PYTHON, CPUS (0.1), MEMORY_MB (128), KEEP=1 keeps the plans
made earlier, BEFORE=DIR adds the `before` variant (DIR is a built
checkout), WARM=eager|background runs cs-fdk, cs-fdk+plan and before with
that --warm mode (default coldstart-fdk's own, lazy).
"""
import math
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import fnagent  # noqa: E402

PY = os.environ.get("PYTHON", "/usr/bin/python3")
ROUNDS = int(os.environ.get("ROUNDS", "3"))
CPUS = float(os.environ.get("CPUS", "0.1"))
MEMORY = int(os.environ.get("MEMORY_MB", "128")) << 20
def _peer(name):
    """A reference implementation in shared/peers beside the checkout (CI
    lays shared/ beside its clone; a worktree may sit one level deeper)."""
    for up in ("..", os.path.join("..", "..")):
        d = os.path.normpath(os.path.join(ROOT, up, "shared", "peers", name))
        if os.path.isdir(d):
            return d
    return os.path.normpath(os.path.join(ROOT, "..", "shared", "peers", name))


FDK_PYTHON = os.environ.get("FDK_PYTHON") or _peer("fdk-python-0.1.117")
SETS = {"1": ["numpy", "pandas", "requests", "aiohttp", "pydantic",
              "sqlalchemy", "jinja2", "boto3"],
        "2": ["lxml", "yaml", "crypto", "networkx", "docutils", "pygments"]}
ALL = SETS["1"] + SETS["2"]
VARIANTS = ["fdk-python", "cs-fdk", "cs-fdk+plan", "floor"]
BEFORE = os.environ.get("BEFORE")
WARM = os.environ.get("WARM")
if WARM not in (None, "", "lazy", "eager", "background"):
    sys.exit("plan_bench: WARM=%r is not lazy, eager or background" % WARM)
WARM_ARGS = ["--warm", WARM] if WARM else []
if BEFORE:
    VARIANTS.append("before")
OUT = os.path.join(ROOT, "build", "bench", "plan")
COLDSTART = os.path.join(ROOT, "coldstart")


def fn_subdir(name):
    """bench/plan/<this> holds name's func.py and request.json."""
    return ("fn2_" if name in SETS["2"] else "fn_") + name


def fn_dir(name):
    return os.path.join(HERE, "plan", fn_subdir(name))


def plan_file(name):
    return os.path.join(OUT, name + ".plan.json")


def before_plan(name):
    return os.path.join(OUT, name + ".before.plan.json")


def make_plan(name, root=None):
    """Makes (and verifies) name's plan with this checkout's coldstart, or
    with the one in root (the `before` variant)."""
    d = fn_dir(name) if root is None else os.path.join(
        root, "bench", "plan", fn_subdir(name))
    out = plan_file(name) if root is None else before_plan(name)
    eager = []
    pin = os.path.join(d, "eager.txt")
    if os.path.exists(pin):
        for line in open(pin):
            if line.strip() and not line.startswith("#"):
                eager += ["--eager", line.strip()]
    cmd = [COLDSTART if root is None else os.path.join(root, "coldstart"),
           "plan", "--python", PY, "--fn",
           os.path.join(d, "func.py"), "handler", "--request",
           os.path.join(d, "request.json"), "--verify", "-o", out] + eager
    p = subprocess.run(cmd, cwd=d, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    if p.returncode != 0:
        sys.stderr.write("plan_bench: `%s` failed:\n%s" % (" ".join(cmd),
                                                           p.stdout))
        return False
    return True


# name -> modules the floor keeps eager although strict mode would defer
# them (floor_keep()).
FLOOR_KEEP = {}


def answer(name, argv, env, **kw):
    """fnagent.run() of argv (command()'s, or one wrapping it) for the
    function name, from its directory, sending its request.json; kw as
    fnagent.run takes them."""
    d = fn_dir(name)
    with open(os.path.join(d, "request.json"), "rb") as f:
        body = f.read()
    old = os.getcwd()
    os.chdir(d)
    try:
        return fnagent.run(argv, env, [body], **kw)
    finally:
        os.chdir(old)


def _floor_answers(name, keep, want):
    argv, env = command(name, "floor")
    env["FLOOR_KEEP"] = ",".join(keep)
    got = answer(name, argv, env)
    return not got["error"] and got["responses"] == want


def floor_keep(name):
    """The floor is strict mode: every pure-Python module the request did
    not use is deferred, the plan's eager list ignored.  Where that changes
    the answer (a body that registers what the request looks up, as
    pandas' options and SQLAlchemy's events), the modules of the eager
    list it needs are found by bisection, one at a time, and kept eager:
    the least the process must run to answer the same.  Cached beside the
    plan."""
    import json
    cache = plan_file(name) + ".floor"
    stamp = os.stat(plan_file(name)).st_mtime_ns
    try:
        with open(cache) as f:
            c = json.load(f)
        if c.get("plan_mtime_ns") == stamp:
            return c["keep"]
    except (OSError, ValueError, KeyError):
        pass
    argv, env = command(name, "cs-fdk")
    want = answer(name, argv, env)["responses"]
    with open(plan_file(name)) as f:
        plan = json.load(f)
    # What strict mode defers beyond the plan, in import order.
    cands = [m["name"] for m in plan["modules"] if m["action"] == "eager" and
             not m["used"] and m["kind"] in ("source", "bytecode") and
             not any(r["code"] in ("native", "native-parent", "native-init")
                     for r in m["reasons"])]
    keep = []
    if not _floor_answers(name, keep, want):
        if not _floor_answers(name, cands, want):
            raise SystemExit("plan_bench: %s: strict mode changes the answer "
                             "even with the whole eager list kept" % name)
        pool = list(cands)
        while not _floor_answers(name, keep, want):
            # The shortest prefix of pool that, kept with keep, answers.
            lo, hi = 0, len(pool)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if _floor_answers(name, keep + pool[:mid], want):
                    hi = mid
                else:
                    lo = mid
            keep.append(pool[hi - 1])
            pool = pool[:hi - 1]
    with open(cache, "w") as f:
        json.dump({"plan_mtime_ns": stamp, "keep": keep}, f)
    return keep


def command(name, variant):
    d = fn_dir(name)
    func = os.path.join(d, "func.py")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("COLDSTART_") and k != "PYTHONPATH"}
    if variant == "fdk-python":
        env["PYTHONPATH"] = FDK_PYTHON
        argv = [PY, os.path.join(HERE, "plan", "fdk_python.py"), func,
                "handler"]
    elif variant == "cs-fdk":
        argv = [PY, os.path.join(ROOT, "python", "coldstart-fdk")] + \
            WARM_ARGS + [func, "handler"]
    elif variant == "cs-fdk+plan":
        argv = [PY, os.path.join(ROOT, "python", "coldstart-fdk")] + \
            WARM_ARGS + ["--plan", plan_file(name), func, "handler"]
    elif variant == "before":
        argv = [PY, os.path.join(BEFORE, "python", "coldstart-fdk")] + \
            WARM_ARGS + ["--plan", before_plan(name),
                         os.path.join(BEFORE, "bench", "plan",
                                      fn_subdir(name), "func.py"), "handler"]
    else:
        env["PYTHONPATH"] = os.path.join(ROOT, "python")
        env["FLOOR_KEEP"] = ",".join(FLOOR_KEEP.get(name, ()))
        argv = [PY, os.path.join(HERE, "plan", "floor.py"), plan_file(name),
                func, "handler"]
    return argv, env


def gmean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def main():
    if os.geteuid() != 0 or not all(os.path.isdir(os.path.join(
            fnagent.CG_ROOT, c)) for c in ("cpu", "memory")):
        print("plan_bench: skipped: needs root and cgroup v1 cpu and memory "
              "hierarchies under %s" % fnagent.CG_ROOT)
        return
    if not os.path.isdir(FDK_PYTHON):
        print("plan_bench: skipped: fdk-python not found at %s (set "
              "FDK_PYTHON)" % FDK_PYTHON)
        return
    which = os.environ.get("SET", "all")
    if which not in ("1", "2", "all"):
        sys.stderr.write("plan_bench: SET=%s: expected 1, 2 or all\n" % which)
        sys.exit(2)
    known = ALL if which == "all" else SETS[which]
    names = os.environ.get("FUNCS", "").split() or list(known)
    chosen = list(names)  # before any is left out for want of a plan
    unknown = [n for n in names if n not in known]
    if unknown:
        sys.stderr.write("plan_bench: unknown functions %s; known%s: %s\n"
                         % (" ".join(unknown), "" if which == "all" else
                            " in set " + which, " ".join(known)))
        sys.exit(2)
    os.makedirs(OUT, exist_ok=True)
    # Bytecode as an image build leaves it, for every variant alike.
    if BEFORE and not os.path.exists(os.path.join(BEFORE, "coldstart")):
        sys.stderr.write("plan_bench: BEFORE=%s is not a built checkout (no "
                         "coldstart there)\n" % BEFORE)
        sys.exit(2)
    subprocess.run([PY, "-m", "compileall", "-q", os.path.join(ROOT, "python"),
                    os.path.join(HERE, "plan"), FDK_PYTHON] + (
                        [os.path.join(BEFORE, "python"),
                         os.path.join(BEFORE, "bench", "plan")]
                        if BEFORE else []),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for n in list(names):
        keep = os.environ.get("KEEP") == "1"
        if not (keep and os.path.exists(plan_file(n))) and not make_plan(n):
            names.remove(n)
            continue
        if BEFORE and not (keep and os.path.exists(before_plan(n))) and \
                not make_plan(n, BEFORE):
            names.remove(n)
    for n in names:
        FLOOR_KEEP[n] = floor_keep(n)
    res = {(n, v): [] for n in names for v in VARIANTS}
    for rnd in range(ROUNDS):
        for i, n in enumerate(names):
            # Rotate the order so no variant always runs first.
            k = (rnd + i) % len(VARIANTS)
            for v in VARIANTS[k:] + VARIANTS[:k]:
                argv, env = command(n, v)
                log = os.path.join(OUT, "%s-%s-%d.stderr" % (n, v, rnd))
                r = answer(n, argv, env, cpus=CPUS, memory=MEMORY,
                           stderr_path=log)
                if v in ("cs-fdk+plan", "floor", "before") and not r["error"]:
                    # A plan that was not applied makes the row meaningless.
                    with open(log, errors="replace") as f:
                        for line in f:
                            if line.startswith("coldstart plan:"):
                                r["error"] = "plan not applied: " + \
                                    line.strip()
                                break
                if r["error"]:
                    sys.stderr.write("plan_bench: %s %s round %d: %s (see "
                                     "%s)\n" % (n, v, rnd + 1, r["error"],
                                                log))
                res[(n, v)].append(r)
        sys.stderr.write("plan_bench: round %d of %d done\n"
                         % (rnd + 1, ROUNDS))
    for k in ("1", "2"):
        sub = [n for n in names if n in SETS[k]]
        missing = [n for n in chosen if n in SETS[k] and n not in names]
        if sub:
            report(k, sub, res, missing)
        elif missing:
            print("%s: no function has a plan (see the errors above); "
                  "goals NOT met\n" % SET_TITLE[k].capitalize())


def med(rs, key):
    xs = [r[key] for r in rs if r[key] is not None and not r["error"]]
    return statistics.median(xs) if xs else None


def fmt(x, spec="%.0f"):
    return spec % x if x is not None else "-"


def _ratios(m):
    """fdk-python/plan, cs-fdk/plan and plan/floor of one function's
    medians m (variant -> value); None where a median is missing."""
    p = m["cs-fdk+plan"]
    fp = m["fdk-python"] / p if p and m["fdk-python"] else None
    cs = m["cs-fdk"] / p if p and m["cs-fdk"] else None
    fl = p / m["floor"] if p and m["floor"] else None
    return fp, cs, fl


SET_TITLE = {"1": "set 1 (the functions the plan work was measured on)",
             "2": "set 2 (packages set 1 does not use, never tuned for)"}


def report(k, names, res, missing):
    """Set k's tables and goals; missing, its functions that have no plan,
    count as misses."""
    print("%s: Fn functions under %.0f%% CPU / %d MiB (cgroup v1), "
          "python %s, median of %d interleaved rounds" % (
              SET_TITLE[k].capitalize(), CPUS * 100, MEMORY >> 20,
              subprocess.run(
                  [PY, "-c", "import sys; print(sys.version.split()[0])"],
                  stdout=subprocess.PIPE,
                  universal_newlines=True).stdout.strip(), ROUNDS))
    print("exec->ready / exec->first response in ms, peak memory in MiB; "
          "ratios of exec->first response (wall)")
    head = "%-11s" % "function"
    for v in VARIANTS:
        head += " | %-20s" % v
    head += " | fdkpy/plan  cs/plan  plan/floor  same"
    print(head)
    ratios = {"fp": [], "cs": [], "fl": []}
    firsts = {v: [] for v in VARIANTS}
    peaks = {v: [] for v in VARIANTS}
    all_same = True
    for n in names:
        line = "%-11s" % (n + ("*" if FLOOR_KEEP.get(n) else ""))
        m = {}
        for v in VARIANTS:
            rs = res[(n, v)]
            m[v] = (med(rs, "ready_ms"), med(rs, "first_ms"),
                    med(rs, "peak_bytes"))
            line += " | %5s %6s %5s MiB" % (
                fmt(m[v][0]), fmt(m[v][1]),
                fmt(m[v][2] / 1048576.0 if m[v][2] else None, "%.0f"))
            firsts[v].append(m[v][1])
            peaks[v].append(m[v][2])
        seen = set()
        for v in VARIANTS:
            for r in res[(n, v)]:
                seen.add(repr(r["responses"]) if not r["error"] else
                         "error")
        same = len(seen) == 1 and "error" not in seen
        all_same = all_same and same
        fp, cs, fl = _ratios({v: m[v][1] for v in VARIANTS})
        ratios["fp"].append(fp)
        ratios["cs"].append(cs)
        ratios["fl"].append(fl)
        line += " | %9s %8s %10s  %s" % (fmt(fp, "%.2f"), fmt(cs, "%.2f"),
                                         fmt(fl, "%.2f"),
                                         "yes" if same else "NO")
        print(line)
    line = "%-11s" % "geomean"
    for v in VARIANTS:
        line += " | %5s %6s %5s MiB" % (
            "", fmt(gmean(firsts[v])),
            fmt(gmean(peaks[v]) / 1048576.0 if gmean(peaks[v]) else None))
    g = {k2: gmean(x) for k2, x in ratios.items()}
    line += " | %9s %8s %10s  %s" % (fmt(g["fp"], "%.2f"),
                                     fmt(g["cs"], "%.2f"),
                                     fmt(g["fl"], "%.2f"),
                                     "yes" if all_same else "NO")
    print(line)
    kept = ["%s (%s)" % (n, ", ".join(FLOOR_KEEP[n])) for n in names
            if FLOOR_KEEP.get(n)]
    print("floor: a bare server applying the plan in strict mode, with lazy "
          "from-imports: only the modules the request used run, with what "
          "their bodies read at import")
    if kept:
        print("* strict mode changes the answer of %s: its floor keeps "
              "those modules eager" % "; ".join(kept))
    # CPU time explains the wall time: under the quota each 10 ms of CPU
    # costs about 100 ms of wall.  The cpuacct group counts every process
    # of the function (children too), read when the first answer arrived.
    print("CPU time to the first response in ms (medians of the cpuacct "
          "group's usage: every process of the function); ratios by CPU")
    print("%-11s" % "function" + "".join(" | %11s" % v for v in VARIANTS) +
          " | fdkpy/plan  cs/plan  plan/floor")
    cpus = {v: [] for v in VARIANTS}
    cratios = {"fp": [], "cs": [], "fl": []}
    for n in names:
        line = "%-11s" % n
        m = {}
        for v in VARIANTS:
            m[v] = med(res[(n, v)], "first_cg_cpu_ms")
            cpus[v].append(m[v])
            line += " | %11s" % fmt(m[v], "%.1f")
        fp, cs, fl = _ratios(m)
        cratios["fp"].append(fp)
        cratios["cs"].append(cs)
        cratios["fl"].append(fl)
        line += " | %9s %8s %10s" % (fmt(fp, "%.2f"), fmt(cs, "%.2f"),
                                     fmt(fl, "%.2f"))
        print(line)
    cg = {k2: gmean(x) for k2, x in cratios.items()}
    print("%-11s" % "geomean" + "".join(
        " | %11s" % fmt(gmean(cpus[v]), "%.1f") for v in VARIANTS) +
        " | %9s %8s %10s" % (fmt(cg["fp"], "%.2f"), fmt(cg["cs"], "%.2f"),
                             fmt(cg["fl"], "%.2f")))
    pk = gmean(peaks["cs-fdk+plan"])
    pr = pk / gmean(peaks["cs-fdk"]) if pk and gmean(peaks["cs-fdk"]) \
        else None
    if missing:
        # A function without a plan is a miss, not a smaller set.
        print("no plan, left out of the table: %s (see the errors above)"
              % " ".join(missing))
    print("goals, set %s (geometric means of exec->first response, wall / "
          "CPU): %sfdk-python/plan >= 2.5: %s / %s; cs-fdk/plan >= 1.5: %s / "
          "%s; plan/floor <= 1.3: %s / %s; peak RSS with plan <= without: "
          "%s; responses identical: %s" % (
              k,
              "NOT met, %d of %d functions without a plan; of the rest: "
              % (len(missing), len(missing) + len(names)) if missing else "",
              _met(g["fp"], 2.5), _met(cg["fp"], 2.5),
              _met(g["cs"], 1.5), _met(cg["cs"], 1.5),
              _met(g["fl"], 1.3, most=True), _met(cg["fl"], 1.3, most=True),
              _met(pr, 1.0, most=True),
              "yes" if all_same else "NO"))
    print()


def _met(x, goal, most=False):
    """"met (x)" when x reaches goal (at most goal with most), else "NOT
    met (x)"; x with three decimals where two would read as the goal."""
    ok = x is not None and (x <= goal if most else x >= goal)
    spec = "%.3f" if x is not None and not ok and \
        "%.2f" % x == "%.2f" % goal else "%.2f"
    return "%s (%s)" % ("met" if ok else "NOT met", fmt(x, spec))


if __name__ == "__main__":
    fnagent.interrupt_on_term()
    try:
        main()
    except KeyboardInterrupt:
        sys.stderr.write("plan_bench: interrupted; groups and processes "
                         "removed\n")
        sys.exit(130)
