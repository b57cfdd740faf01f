"""Cold starts of six real Lambda handlers (bench/lambda/fn_*.py: numpy,
requests, jinja2, boto3, pandas, pydantic from Debian) under AWS's Runtime
Interface Emulator, the runtime in a cgroup v1 of 10% of a CPU and 128 MiB
(the RIE outside it), three ways: awslambdaric 4.0.1 (the peer's client,
built by build-awslambdaric.sh), coldstart.lambda, and coldstart.lambda
with the plan `coldstart plan --lambda --verify` makes.

For each cold start: wall time from the first invocation's POST to its
answer (the RIE starts the runtime at that invocation, so this is init
plus the first call, as Lambda bills them), the runtime's CPU time until
then (cpuacct), its peak memory.  Medians of ROUNDS rounds (default 3),
the variants' order rotated each round; the answers must be identical.

Environment: ROUNDS, FUNCS (e.g. "numpy boto3"), COLDSTART_PEERS.
"""
import glob
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"
BUILD = os.path.join(ROOT, "build")
CG = "/sys/fs/cgroup"
VARIANTS = ("awslambdaric", "cs-lambda", "cs-lambda+plan")


def peers():
    for cand in (os.environ.get("COLDSTART_PEERS"),
                 os.path.join(os.path.dirname(ROOT), "shared", "peers"),
                 os.path.join(os.path.dirname(os.path.dirname(ROOT)),
                              "shared", "peers")):
        if cand and os.path.isdir(os.path.join(cand, "awslambdaric-4.0.1")):
            return cand
    return None


def skip(why):
    print("lambda_bench: skipped: " + why)
    sys.exit(0)


def setup():
    p = peers()
    if p is None:
        skip("the peers (shared/peers/awslambdaric-4.0.1) are not beside "
             "the checkout")
    if shutil.which("qemu-aarch64") is None:
        skip("needs qemu-aarch64 (Debian qemu-user) for the arm64 RIE")
    for c in ("cpu", "cpuacct", "memory"):
        if not os.path.isfile(os.path.join(CG, c, "tasks")):
            skip("needs cgroup v1 %s mounted at %s/%s (and root)" % (c, CG, c))
    rie = os.path.join(BUILD, "lambda-rie", "aws-lambda-rie-arm64")
    if not os.path.isfile(rie):
        os.makedirs(os.path.dirname(rie), exist_ok=True)
        subprocess.run(["tar", "xzf", os.path.join(
            p, "awslambdaric-4.0.1", "tests", "integration", "resources",
            "aws-lambda-rie-arm64.tar.gz"), "-C", os.path.dirname(rie)],
            check=True)
    suffix = subprocess.run([PY, "-c", "import sysconfig; print(sysconfig."
                             "get_config_var('EXT_SUFFIX'))"],
                            capture_output=True, text=True).stdout.strip()
    ric = os.path.join(BUILD, "awslambdaric" + suffix.replace(".so", ""))
    if not glob.glob(os.path.join(ric, "runtime_client*.so")):
        r = subprocess.run(["sh", os.path.join(p, "build-awslambdaric.sh"),
                            ric, PY], capture_output=True, text=True)
        if r.returncode:
            skip("build-awslambdaric.sh failed: " + r.stderr[-300:])
    # Both runtimes from bytecode, as an image built with compileall has.
    for d in (ric, os.path.join(ROOT, "python", "coldstart")):
        subprocess.run([PY, "-m", "compileall", "-q", d], check=True)
    return rie, ric


def cgroups(name, create):
    for c in ("cpu", "cpuacct", "memory"):
        d = os.path.join(CG, c, name)
        if create:
            os.mkdir(d)
        else:
            try:
                os.rmdir(d)
            except OSError:
                pass
    if create:
        with open(os.path.join(CG, "cpu", name, "cpu.cfs_period_us"), "w") as f:
            f.write("100000")
        with open(os.path.join(CG, "cpu", name, "cpu.cfs_quota_us"), "w") as f:
            f.write("10000")
        with open(os.path.join(CG, "memory", name,
                               "memory.limit_in_bytes"), "w") as f:
            f.write(str(128 * 1024 * 1024))


def one(rie, ric, work, fn, variant):
    env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C.UTF-8"}
    handler = "fn_%s.handler" % fn
    if variant == "awslambdaric":
        env["PYTHONPATH"] = ric
        cmd = [PY, "-m", "awslambdaric", handler]
    else:
        env["PYTHONPATH"] = os.path.join(ROOT, "python")
        cmd = [PY, "-m", "coldstart.lambda", handler]
        if variant.endswith("+plan"):
            env["COLDSTART_PLAN"] = os.path.join(work, "plan_%s.json" % fn)
    name = "coldstart-lbench-%d" % os.getpid()
    cgroups(name, True)
    try:
        p = subprocess.run(["unshare", "-n", "-p", "-f", "--kill-child", PY,
                            os.path.join(HERE, "lambda", "runner.py"), name,
                            os.path.join(work, "event.json"), rie] + cmd,
                           cwd=work, env=env, capture_output=True, text=True,
                           timeout=600)
    finally:
        cgroups(name, False)
    if p.returncode:
        raise SystemExit("%s under %s failed: %s" % (fn, variant,
                                                     p.stderr[-500:]))
    return json.loads(p.stdout)


def main():
    rie, ric = setup()
    rounds = int(os.environ.get("ROUNDS", "3"))
    fns = os.environ.get("FUNCS", "numpy requests jinja2 boto3 pandas "
                         "pydantic").split()
    work = tempfile.mkdtemp(prefix="coldstart-lambda-bench-")
    try:
        for f in glob.glob(os.path.join(HERE, "lambda", "*")):
            if not f.endswith("runner.py"):
                shutil.copy(f, work)
        for fn in fns:
            r = subprocess.run([os.path.join(ROOT, "coldstart"), "plan",
                                "--lambda", "fn_%s.handler" % fn, "--request",
                                "event.json", "--verify", "-o",
                                "plan_%s.json" % fn], cwd=work,
                               env=dict(os.environ, COLDSTART_PYTHON=PY),
                               capture_output=True, text=True, timeout=600)
            if r.returncode:
                raise SystemExit("coldstart plan for %s failed: %s" % (
                    fn, r.stderr[-500:]))
        res = {}
        for i in range(rounds):
            for fn in fns:
                order = VARIANTS[i % 3:] + VARIANTS[:i % 3]
                for v in order:
                    res.setdefault((fn, v), []).append(one(rie, ric, work,
                                                           fn, v))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load = open("/proc/loadavg").read().split()[:3]
    print("Lambda cold starts under the RIE, runtime in 10%% CPU / 128 MiB "
          "(cgroup v1), medians of %d; load average %s while measuring "
          "(other jobs share the machine)" % (rounds, " ".join(load)))
    print("init + first invoke: wall ms / CPU ms / peak MiB")
    print("%-9s| %-23s| %-23s| %-23s| %s" % ("function", *VARIANTS,
                                             "cpu ric/cs ric/plan  same"))
    ratios = {"cs": [], "plan": []}
    for fn in fns:
        cells, med = [], {}
        for v in VARIANTS:
            runs = res[fn, v]
            m = [statistics.median(r[k] for r in runs)
                 for k in ("wall_ms", "cpu_ms", "peak_mib")]
            med[v] = m
            cells.append("%7.0f %7.0f %6.1f" % tuple(m))
        bodies = {r["body"] for v in VARIANTS for r in res[fn, v]}
        statuses = {r["status"] for v in VARIANTS for r in res[fn, v]}
        same = len(bodies) == 1 and statuses == {200}
        rc = med["awslambdaric"][1] / med["cs-lambda"][1]
        rp = med["awslambdaric"][1] / med["cs-lambda+plan"][1]
        ratios["cs"].append(rc)
        ratios["plan"].append(rp)
        print("%-9s| %s| %s| %s| %5.2f   %5.2f     %s" % (
            fn, cells[0], cells[1], cells[2], rc, rp,
            "yes" if same else "NO"))
    g = {k: math.exp(sum(map(math.log, v)) / len(v)) for k, v in ratios.items()}
    print("geometric mean of CPU ratios: awslambdaric/cs-lambda %.2f, "
          "awslambdaric/cs-lambda+plan %.2f" % (g["cs"], g["plan"]))


if __name__ == "__main__":
    main()
