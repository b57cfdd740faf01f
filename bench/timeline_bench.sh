#!/bin/sh
# Timeline overhead: boto3 client creation and Django's `manage.py check` (a
# project made by django-admin startproject in a temporary directory) run as
# `coldstart profile` runs them (-X importtime), three ways, interleaved so
# drift hits every column alike: plain; with coldstart's bootstrap and the C
# tracer (what profile does without --timeline: "timeline off"); and with the
# start-up sampler too ("timeline on", every 1 ms, or $BENCH_INTERVAL_US).
# Rows: median wall time of the process (exec to exit: the time to ready of a
# script), its CPU time (user+sys from wait4), and the time from the script's
# first line to its end measured inside the process (no interpreter start-up:
# the steadiest figure).  Ratios are to plain, and on/off.
# Usage: bench/timeline_bench.sh [runs] [python]  (default 15, /usr/bin/python3;
# run `make` first).
set -eu
runs=${1:-15}
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
    env = dict(base)
    tdir = os.path.join(tmp, "t")
    shutil.rmtree(tdir, ignore_errors=True)
    os.mkdir(tdir)
    if mode != "plain":
        env.update(PYTHONPATH=boot, COLDSTART_TRACE_DIR=tdir)
    if mode == "on":
        env["COLDSTART_TIMELINE"] = interval
    t0 = time.perf_counter()
    p = subprocess.Popen([py, "-X", "importtime", script], env=env, cwd=cwd,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read().decode()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = 0
    p.stdout.close()
    inner = [l for l in out.splitlines() if l.startswith("BENCH ")]
    if status != 0 or not inner:
        sys.exit("timeline_bench: %s run of %s failed (status %d)" % (mode, script, status))
    if mode == "on" and not any(n.endswith(".samples") for n in os.listdir(tdir)):
        sys.exit("timeline_bench: the sampler wrote nothing (is %s%s built?)" % ("_sampler", suffix))
    return wall * 1e3, (ru.ru_utime + ru.ru_stime) * 1e3, float(inner[-1].split()[1])


ver = subprocess.run([py, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True,
                     text=True).stdout.strip()
work = setup()
print("timeline overhead, %s (%s), every %s us, %d runs per column, interleaved; medians; load average %.1f"
      % (py, ver, interval, runs, os.getloadavg()[0]))
if not work:
    print("neither boto3 nor Django is importable by %s: nothing to measure" % py)
modes = ("plain", "off", "on")
print("%-24s %-6s %10s %13s %6s %12s %6s %6s" % (
    "workload", "", "plain", "timeline off", "ratio", "timeline on", "ratio", "on/off"))
for name, (script, cwd) in work.items():
    for m in modes:  # warm the page cache
        one(m, script, cwd)
    res = {m: [] for m in modes}
    for _ in range(runs):
        for m in modes:
            res[m].append(one(m, script, cwd))
    for k, label in ((0, "wall"), (1, "cpu"), (2, "script")):
        med = {m: statistics.median(r[k] for r in res[m]) for m in modes}
        print("%-24s %-6s %7.1f ms %10.1f ms %6.3f %9.1f ms %6.3f %6.3f" % (
            name if k == 0 else "", label, med["plain"], med["off"], med["off"] / med["plain"],
            med["on"], med["on"] / med["plain"], med["on"] / med["off"]))
shutil.rmtree(tmp, ignore_errors=True)
PYEOF
