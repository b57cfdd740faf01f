#!/bin/sh
# The cost of `coldstart why`'s statement reading: for a profile of
# `python -c 'import PKG'`, one `coldstart why MODULE` with every file parsed
# (--no-cache), from the cache, and without reading source (--no-source: the
# recorded tree alone), runs interleaved so drift hits every column alike.
# Rows: median wall and CPU time (user+sys of the command and its children,
# from wait4); the files read and the statements that import MODULE.  Nothing is
# paid at profile time: the tracer is unchanged.
# Usage: bench/why_bench.sh [runs] [python]  (default 7, /usr/bin/python3).
# Cases PKG:MODULE: pandas:numpy boto3:urllib3 (default), or $BENCH_WHY.
set -eu
runs=${1:-7}
py=${2:-/usr/bin/python3}
root=$(cd "$(dirname "$0")/.." && pwd)
exec /usr/bin/python3 - "$runs" "$py" "$root" ${BENCH_WHY:-pandas:numpy boto3:urllib3} <<'PYEOF'
import json, os, resource, shutil, statistics, subprocess, sys, tempfile, time

runs, py, root, cases = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
if runs < 3:
    sys.exit("why_bench: use at least 3 runs")
cs = os.path.join(root, "coldstart")
tmp = tempfile.mkdtemp()
env = dict(os.environ, COLDSTART_CACHE_DIR=os.path.join(tmp, "cache"))


def timed(args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if r.returncode:
        sys.exit("why_bench: %s failed (%d)" % (" ".join(args), r.returncode))
    return wall * 1e3, cpu * 1e3, r.stdout


try:
    print("%-28s %-10s %10s %10s %8s %8s" % ("profile: module", "reading", "wall ms", "cpu ms", "files", "stmts"))
    for case in cases:
        pkg, _, module = case.partition(":")
        prof = os.path.join(tmp, pkg + ".json")
        r = subprocess.run([cs, "profile", "--python", py, "-o", prof, "-c", "import " + pkg],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if r.returncode:
            print("%-28s skipped: 'import %s' fails under %s" % (case, pkg, py))
            continue
        modes = [("parse all", ["--no-cache"]), ("cached", []), ("none", ["--no-source"])]
        timed([cs, "why", module, prof, "--json"])  # fills the cache
        got = {m: ([], []) for m, _ in modes}
        facts = {}
        for _ in range(runs):
            for m, extra in modes:
                w, c, out = timed([cs, "why", module, prof, "--json"] + extra)
                got[m][0].append(w)
                got[m][1].append(c)
                d = json.loads(out)
                facts[m] = (d["source"].get("files", 0),
                            sum(len(im["statements"]) for p in d["processes"] for im in p["importers"]))
        base = statistics.median(got["none"][0])
        for m, _ in modes:
            w, c = statistics.median(got[m][0]), statistics.median(got[m][1])
            print("%-28s %-10s %10.1f %10.1f %8d %8d   wall x%.1f of no reading" % (
                case, m, w, c, facts[m][0], facts[m][1], w / base if base else 0))
finally:
    shutil.rmtree(tmp, ignore_errors=True)
PYEOF
