#!/bin/sh
# Timeline overhead: boto3 client creation and Django's `manage.py check` (a
# project made by django-admin startproject in a temporary directory) run as
# `coldstart profile` runs them (-X importtime), four ways: plain; plain
# again (the same command: how much the figures move between identical
# runs); with coldstart's bootstrap and the C tracer (what profile does
# without --timeline: "timeline off"); and with the start-up sampler too
# ("timeline on", every 1 ms, or $BENCH_INTERVAL_US).  Each round runs the
# four once, in an order rotated from round to round, so drift and the
# machine's load hit every column alike; every child inherits the bench's
# priority and CPU affinity (printed).
# Rows, medians over the rounds:
#   wall       exec to exit, as the bench sees it (the time to ready of a script)
#   wall-wait  the same less the time the main thread waited for a CPU (its
#              /proc schedstat, read while the process is a zombie): what the
#              wall time would be on an idle machine, which load barely moves
#   cpu        user+sys time (wait4)
#   script     from the script's first line to its end, measured inside the process
# Ratios are to plain, and on/off; "again" is plain again / plain, the noise
# floor of that row.  Below each workload, the spread of the on/plain ratio of
# wall and wall-wait taken round by round (quartiles).
# Usage: bench/timeline_bench.sh [runs] [python]  (default 21 rounds,
# /usr/bin/python3; run `make` first).
set -eu
runs=${1:-21}
py=${2:-/usr/bin/python3}
root=$(cd "$(dirname "$0")/.." && pwd)
exec /usr/bin/python3 - "$runs" "$py" "$root" <<'PYEOF'
import os, shutil, statistics, subprocess, sys, tempfile, time

runs, py, root = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if runs < 10:
    sys.exit("timeline_bench: use at least 10 runs")
interval = os.environ.get("BENCH_INTERVAL_US", "1000")
boot = os.path.join(root, "python", "coldstart", "_boot")
suffix = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                        capture_output=True, text=True).stdout.strip()
for ext in ("_tracer", "_sampler"):
    if not os.path.exists(os.path.join(root, "python", "coldstart", ext + suffix)):
        sys.exit("timeline_bench: no %s%s beside its source (run make)" % (ext, suffix))
base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "COLDSTART"))}
tmp = tempfile.mkdtemp()

TIMED = "import time as _t; _t0 = _t.perf_counter()\n%s\nprint('BENCH %%.3f' %% ((_t.perf_counter() - _t0) * 1e3))\n"
BOTO = TIMED % ("import boto3\nboto3.client('s3', region_name='us-east-1', aws_access_key_id='x', "
                "aws_secret_access_key='y')")
DJANGO = TIMED % ("import sys, runpy\nsys.argv = ['manage.py', 'check']\n"
                  "runpy.run_path('manage.py', run_name='__main__')")
MODES = ("plain", "again", "off", "on")
ROWS = ("wall", "wall-wait", "cpu", "script")


def setup():
    work = {}
    if subprocess.run([py, "-c", "import boto3"], capture_output=True).returncode == 0:
        path = os.path.join(tmp, "boto_client.py")
        with open(path, "w") as f:
            f.write(BOTO)
        work["boto3 client('s3')"] = (path, tmp)
    admin = shutil.which("django-admin")
    if admin and subprocess.run([py, "-c", "import django"], capture_output=True).returncode == 0:
        proj = os.path.join(tmp, "proj")
        os.mkdir(proj)
        subprocess.run([admin, "startproject", "site1", proj], check=True, capture_output=True)
        path = os.path.join(proj, "check.py")
        with open(path, "w") as f:
            f.write(DJANGO)
        work["django manage.py check"] = (path, proj)
    return work


def one(mode, script, cwd):
    """One run: its wall, wall less its main thread's wait for a CPU, CPU and script times, in ms."""
    env = dict(base)
    tdir = os.path.join(tmp, "t")
    shutil.rmtree(tdir, ignore_errors=True)
    os.mkdir(tdir)
    if mode in ("off", "on"):
        env.update(PYTHONPATH=boot, COLDSTART_TRACE_DIR=tdir)
    if mode == "on":
        env["COLDSTART_TIMELINE"] = interval
    t0 = time.perf_counter()
    p = subprocess.Popen([py, "-X", "importtime", script], env=env, cwd=cwd,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read().decode()
    # Exited but not reaped: its schedstat (run time, run-queue wait) is still there.
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
    wall = time.perf_counter() - t0
    try:
        with open("/proc/%d/schedstat" % p.pid) as f:
            waited = int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        waited = float("nan")
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = 0
    p.stdout.close()
    inner = [l for l in out.splitlines() if l.startswith("BENCH ")]
    if status != 0 or not inner:
        sys.exit("timeline_bench: %s run of %s failed (status %d)" % (mode, script, status))
    if mode == "on" and not any(n.endswith(".samples") for n in os.listdir(tdir)):
        sys.exit("timeline_bench: the sampler wrote nothing (is %s%s built?)" % ("_sampler", suffix))
    return {"wall": wall * 1e3, "wall-wait": (wall - waited) * 1e3, "cpu": (ru.ru_utime + ru.ru_stime) * 1e3,
            "script": float(inner[-1].split()[1])}


def quartiles(v):
    q = statistics.quantiles(v, n=4)
    return q[0], q[2]


ver = subprocess.run([py, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True,
                     text=True).stdout.strip()
work = setup()
print("timeline overhead, %s (%s), every %s us, %d rounds of the %d columns, interleaved (order rotated); medians"
      % (py, ver, interval, runs, len(MODES)))
print("every run at nice %d on CPUs %s; load average %.1f %.1f %.1f at the start"
      % ((os.nice(0), ",".join(map(str, sorted(os.sched_getaffinity(0))))) + os.getloadavg()))
if not work:
    print("neither boto3 nor Django is importable by %s: nothing to measure" % py)
print("%-24s %-9s %10s %6s %13s %6s %12s %6s %6s" % (
    "workload", "", "plain", "again", "timeline off", "ratio", "timeline on", "ratio", "on/off"))
for name, (script, cwd) in work.items():
    for m in MODES:  # warm the page cache
        one(m, script, cwd)
    res = {m: [] for m in MODES}
    for r in range(runs):
        for i in range(len(MODES)):
            m = MODES[(i + r) % len(MODES)]
            res[m].append(one(m, script, cwd))
    for k, row in enumerate(ROWS):
        med = {m: statistics.median(x[row] for x in res[m]) for m in MODES}
        print("%-24s %-9s %7.1f ms %6.3f %10.1f ms %6.3f %9.1f ms %6.3f %6.3f" % (
            name if k == 0 else "", row, med["plain"], med["again"] / med["plain"], med["off"],
            med["off"] / med["plain"], med["on"], med["on"] / med["plain"], med["on"] / med["off"]))
    spread = []
    for row in ("wall", "wall-wait"):
        on = quartiles([a[row] / b[row] for a, b in zip(res["on"], res["plain"])])
        again = quartiles([a[row] / b[row] for a, b in zip(res["again"], res["plain"])])
        spread.append("%s on/plain %.3f-%.3f (again/plain %.3f-%.3f)" % ((row,) + on + again))
    print("%-24s round by round, quartiles: %s; load average %.1f now"
          % ("", "; ".join(spread), os.getloadavg()[0]))
shutil.rmtree(tmp, ignore_errors=True)
PYEOF
