#!/bin/sh
# Cold against warm page cache for one real app: the Flask sample (Debian's
# python3-flask) started until it answers /health, measured by `coldstart
# profile --ready`, one session a run, interleaved round by round (warm, cold,
# then cold, warm, ...) so drift hits both alike.  A warm session is one
# warm-up run and one measured run; a cold one is the same with --cold, so its
# measured run starts with every file the warm-up read evicted.  Prints the
# medians of wall time to ready and of import time, their ratio, and how many
# cold runs the mincore check confirmed (a run whose eviction did not take is
# counted and said, not hidden).
# Usage: bench/cold_bench.sh [rounds] [python]   (default 8, /usr/bin/python3)
set -eu
rounds=${1:-8}
py=${2:-/usr/bin/python3}
root=$(cd "$(dirname "$0")/.." && pwd)
exec /usr/bin/python3 - "$rounds" "$py" "$root" <<'PYEOF'
import json, os, statistics, subprocess, sys, tempfile

rounds, py, root = int(sys.argv[1]), sys.argv[2], sys.argv[3]
coldstart = os.path.join(root, "coldstart")
app = os.path.join(root, "samples", "flask-app", "app.py")
if subprocess.run([py, "-c", "import flask"], capture_output=True).returncode:
    print("cold_bench: %s has no flask (apt-get install python3-flask): skipped" % py)
    sys.exit(0)
port = 18000 + os.getpid() % 2000
tmp = tempfile.mkdtemp()
figures = {"warm": {"ready": [], "imports": []}, "cold": {"ready": [], "imports": []}}
confirmed = refused = 0


def one(kind):
    global confirmed, refused
    out = os.path.join(tmp, kind + ".json")
    args = [coldstart, "profile", "--python", py, "--quiet", "--no-report", "-o", out, "--warmup", "1",
            "--ready", "http://127.0.0.1:%d/health" % port, "--ready-timeout", "60"]
    if kind == "cold":
        args.append("--cold")
    env = dict(os.environ, PORT=str(port))
    r = subprocess.run(args + [app], capture_output=True, text=True, env=env)
    if r.returncode:
        sys.exit("cold_bench: %s run failed (%d): %s" % (kind, r.returncode, r.stderr.strip()[-400:]))
    run = [x for x in json.load(open(out))["runs"] if not x["warmup"]][0]
    if kind == "cold":
        if run["cold"] and run["cold"]["took"]:
            confirmed += 1
        else:
            refused += 1
            return
    total = sum(n[4] for n in run["processes"][0]["nodes"] if n[2] == -1) if run["processes"] else 0
    figures[kind]["ready"].append(run["ready_us"] / 1000)
    figures[kind]["imports"].append(total / 1000)


for i in range(rounds):
    for kind in (("warm", "cold") if i % 2 == 0 else ("cold", "warm")):
        one(kind)

print("cold_bench: %s, %s, %d rounds (medians, ms)" % (os.path.relpath(app, root), py, rounds))
print("  %-26s %10s %10s %8s" % ("", "warm", "cold", "cold/warm"))
for what, label in (("ready", "exec to ready (/health)"), ("imports", "imports, main process")):
    w, c = figures["warm"][what], figures["cold"][what]
    if not w or not c:
        continue
    mw, mc = statistics.median(w), statistics.median(c)
    print("  %-26s %10.1f %10.1f %7.2fx" % (label, mw, mc, mc / mw))
print("  cold runs confirmed by mincore: %d of %d%s" % (
    confirmed, confirmed + refused, "" if not refused else " (the others are left out)"))
PYEOF
