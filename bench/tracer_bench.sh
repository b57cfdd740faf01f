#!/bin/sh
# Tracer overhead: `python -X importtime -c 'import PKG'` without and with
# coldstart's bootstrap (alone: COLDSTART_TRACER=off; with the C tracer; with
# the pure-Python fallback), runs interleaved so drift hits every column
# alike.  Rows: median wall time of the process, its CPU time (user+sys from
# wait4), the time of the `import PKG` statement measured inside the process
# (no interpreter start-up) and its CPU time (process_time: what a loaded
# machine disturbs least), and "own total": the target's own import total
# as coldstart reports it, importtime's top-level rows after site summed -
# the figure the tracer's overhead lands in (median, and the least of the runs,
# which a loaded machine disturbs least); ratios are to plain importtime.
# Usage: bench/tracer_bench.sh [runs] [python]  (default 15, /usr/bin/python3;
# run `make tracer` first).  Packages: aiohttp numpy pandas, or
# $BENCH_PACKAGES.
set -eu
runs=${1:-15}
py=${2:-/usr/bin/python3}
root=$(cd "$(dirname "$0")/.." && pwd)
exec /usr/bin/python3 - "$runs" "$py" "$root" ${BENCH_PACKAGES:-aiohttp numpy pandas} <<'PYEOF'
import os, re, shutil, statistics, subprocess, sys, sysconfig, tempfile, time

runs, py, root, pkgs = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
if runs < 10:
    sys.exit("tracer_bench: use at least 10 runs")
boot = os.path.join(root, "python", "coldstart", "_boot")
suffix = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                        capture_output=True, text=True).stdout.strip()
so = os.path.join(root, "python", "coldstart", "_tracer" + suffix)
if not os.path.exists(so):
    sys.exit("tracer_bench: no %s (run make tracer)" % so)
base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "COLDSTART"))}
tmp = tempfile.mkdtemp()


def one(mode, pkg):
    env = dict(base)
    tdir = os.path.join(tmp, "t")
    shutil.rmtree(tdir, ignore_errors=True)
    os.mkdir(tdir)
    if mode != "plain":
        env.update(PYTHONPATH=boot, COLDSTART_TRACE_DIR=tdir)
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
    errf.seek(0)
    imp, imp_cpu = (float(x) for x in out.split())
    return wall * 1e3, (ru.ru_utime + ru.ru_stime) * 1e3, imp, own_total(errf.read().decode()), imp_cpu


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
print("tracer overhead, %s (%s), %d runs per column, interleaved; medians; load average %.1f"
      % (py, ver, runs, os.getloadavg()[0]))
modes = ("plain", "off", "c", "py")
print("%-9s %-9s %11s %11s %6s %11s %6s %11s %6s" % (
    "package", "", "importtime", "+boot only", "ratio", "+tracer(C)", "ratio", "+tracer(py)", "ratio"))
for pkg in pkgs:
    if subprocess.run([py, "-c", "import " + pkg], capture_output=True).returncode:
        print("%-9s not importable by %s, skipped" % (pkg, py))
        continue
    for m in modes:  # warm the page cache and the .pyc files
        one(m, pkg)
    res = {m: [] for m in modes}
    for _ in range(runs):
        for m in modes:
            res[m].append(one(m, pkg))
    rows = [(0, "wall", statistics.median), (1, "cpu", statistics.median), (2, "import", statistics.median),
            (4, "import cpu", statistics.median), (3, "own total", statistics.median), (3, "  its min", min)]
    for k, label, pick in rows:
        med = {m: pick(r[k] for r in res[m]) for m in modes}
        print("%-9s %-9s %8.1f ms %8.1f ms %6.3f %8.1f ms %6.3f %8.1f ms %6.3f" % (
            pkg if k == 0 else "", label, med["plain"], med["off"], med["off"] / med["plain"],
            med["c"], med["c"] / med["plain"], med["py"], med["py"] / med["plain"]))
print("(own total: the target's own import total as coldstart reports it, importtime's top-level rows after "
      "site; 'its min' is the least of the runs, which a loaded machine disturbs least)")
shutil.rmtree(tmp, ignore_errors=True)
PYEOF
