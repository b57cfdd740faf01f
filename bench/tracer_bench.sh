#!/bin/sh
# Tracer overhead: `python -X importtime -c 'import PKG'` without and with
# coldstart's bootstrap (alone: COLDSTART_TRACER=off; with the C tracer; with
# an earlier build of it when $BENCH_BEFORE names the directory of its .so;
# with the pure-Python fallback unless BENCH_PY=0), in rounds that run every
# column once, so drift hits every column alike.
# Rows, each the median over the rounds, and its ratio to plain importtime
# as the median of the rounds' own ratios (each round's columns ran side by
# side, each column first in turn):
#   import cpu   CPU time of the `import PKG` statement inside the process
#                (process_time: no interpreter start-up) - the figure the
#                overhead target is about; "its min" is the least of the
#                rounds (ratio of the minima), the run a loaded machine
#                disturbed least: on a busy VM CPU time grows with the
#                contention (shared caches, steal time), by more than a few
#                percent between identical runs;
#   user, sys    the whole process's user and system CPU time (wait4): the
#                kernel's share (page faults, syscalls) apart;
#   faults       the process's minor page faults;
#   import       the statement's wall time; own total: the target's own
#                import total as coldstart reports it (importtime's top-level
#                rows after site); wall: the process, exec to exit.  Wall
#                figures are what load moves most.
# The load average is printed before and after each package.  Instruction
# counts, which load does not move at all: bench/tracer_instr_bench.sh.
# Usage: bench/tracer_bench.sh [runs] [python]  (default 15, /usr/bin/python3;
# run `make tracer` first).  Packages: aiohttp numpy pandas, or
# $BENCH_PACKAGES.
set -eu
runs=${1:-15}
py=${2:-/usr/bin/python3}
root=$(cd "$(dirname "$0")/.." && pwd)
exec /usr/bin/python3 - "$runs" "$py" "$root" ${BENCH_PACKAGES:-aiohttp numpy pandas} <<'PYEOF'
import os, re, shutil, statistics, subprocess, sys, tempfile, time

runs, py, root, pkgs = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
if runs < 10:
    sys.exit("tracer_bench: use at least 10 runs")
boot = os.path.join(root, "python", "coldstart", "_boot")
suffix = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                        capture_output=True, text=True).stdout.strip()
mine = os.path.join(root, "python", "coldstart")
if not os.path.exists(os.path.join(mine, "_tracer" + suffix)):
    sys.exit("tracer_bench: no %s (run make tracer)" % os.path.join(mine, "_tracer" + suffix))
before = os.environ.get("BENCH_BEFORE", "")
if before and not os.path.exists(os.path.join(before, "_tracer" + suffix)):
    sys.exit("tracer_bench: BENCH_BEFORE: no %s" % os.path.join(before, "_tracer" + suffix))
base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "COLDSTART"))}
tmp = tempfile.mkdtemp()
modes = ["plain", "off", "c"] + (["before"] if before else []) + ([] if os.environ.get("BENCH_PY") == "0" else ["py"])
titles = {"plain": "importtime", "off": "+boot only", "c": "+tracer(C)", "before": "+C(before)",
          "py": "+tracer(py)"}


def one(mode, pkg):
    env = dict(base)
    tdir = os.path.join(tmp, "t")
    shutil.rmtree(tdir, ignore_errors=True)
    os.mkdir(tdir)
    if mode != "plain":
        env.update(PYTHONPATH=boot, COLDSTART_TRACE_DIR=tdir, COLDSTART_TRACER_PATH=before if mode == "before" else mine)
        if mode in ("py", "off"):
            env["COLDSTART_TRACER"] = mode
    code = ("import time; t = time.perf_counter(); c = time.process_time(); import %s; "
            "print((time.perf_counter() - t) * 1e3, (time.process_time() - c) * 1e3)" % pkg)
    errf = tempfile.TemporaryFile()
    t0 = time.perf_counter()
    p = subprocess.Popen([py, "-X", "importtime", "-c", code], env=env,
                         stdout=subprocess.PIPE, stderr=errf)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = 0
    p.stdout.close()
    if status != 0:
        sys.exit("tracer_bench: %s run of %s failed (status %d)" % (mode, pkg, status))
    if mode in ("c", "before", "py") and not any(n.endswith(".trace") for n in os.listdir(tdir)):
        sys.exit("tracer_bench: the %s run of %s wrote no trace" % (mode, pkg))
    errf.seek(0)
    imp, imp_cpu = (float(x) for x in out.split())
    return {"import cpu": imp_cpu, "user": ru.ru_utime * 1e3, "sys": ru.ru_stime * 1e3,
            "faults": float(ru.ru_minflt), "import": imp, "own total": own_total(errf.read().decode()),
            "wall": wall * 1e3}


def own_total(text):
    """The target's own import total in ms: importtime's top-level rows after site's."""
    total, after_site = 0, False
    for line in text.splitlines():
        m = re.match(r"import time:\s+-?\d+ \|\s+(-?\d+) \| (\S.*)$", line)
        if not m:
            continue
        if after_site:
            total += int(m.group(1))
        elif m.group(2) == "site":
            after_site = True
    return total / 1e3


ver = subprocess.run([py, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True,
                     text=True).stdout.strip()
print("tracer overhead, %s (%s), %d rounds, every column once a round; medians; ratio = median of the rounds' "
      "ratios to importtime; %d CPUs" % (py, ver, runs, os.cpu_count()))
if before:
    print("+C(before): the C tracer built in %s" % before)
head = "%-8s %-10s" % ("package", "") + "".join(
    " %11s" % titles[m] + ("" if m == "plain" else " %6s" % "ratio") for m in modes)
print(head)
for pkg in pkgs:
    if subprocess.run([py, "-c", "import " + pkg], capture_output=True).returncode:
        print("%-8s not importable by %s, skipped" % (pkg, py))
        continue
    load0 = os.getloadavg()[0]
    for m in modes:  # warm the page cache and the .pyc files
        one(m, pkg)
    res = {m: [] for m in modes}
    for i in range(runs):
        for m in modes[i % len(modes):] + modes[:i % len(modes)]:  # each column leads in turn
            res[m].append(one(m, pkg))
    rows = [("import cpu", "import cpu", statistics.median), ("import cpu", "  its min", min)] + [
        (k, k, statistics.median) for k in ("user", "sys", "faults", "import", "own total", "wall")]
    for i, (key, label, pick) in enumerate(rows):
        unit = "" if key == "faults" else " ms"
        cells = []
        for m in modes:
            med = pick(r[key] for r in res[m])
            cells.append(" %8.1f%s" % (med, unit) if unit else " %11.0f" % med)
            if m != "plain":
                if pick is min:
                    cells.append(" %6.3f" % (med / pick(r[key] for r in res["plain"])))
                    continue
                rat = [r[key] / p[key] for r, p in zip(res[m], res["plain"]) if p[key] > 0]
                cells.append(" %6.3f" % statistics.median(rat) if rat else " %6s" % "-")
        print("%-8s %-10s%s" % (pkg if i == 0 else "", label, "".join(cells)))
    print("%-8s load average %.1f before, %.1f after" % ("", load0, os.getloadavg()[0]))
shutil.rmtree(tmp, ignore_errors=True)
PYEOF
