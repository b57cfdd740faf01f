"""Measures how much CPU and wall time a function server spends before it is
ready (the lsnr.sock symlink exists), for bench/fdk_floor.py, coldstart-fdk
in lazy and eager mode, `python -m coldstart.fdk`, and fdk.handle() from
`python3 func.py`; when PYTHON is an environment's interpreter with an
installed coldstart-fdk script beside it, that script too (the documented
ENTRYPOINT).

    python3 python/tools/ready_cpu.py [PYTHON [RUNS]]

CPU is the first field of /proc/PID/schedstat (nanoseconds on CPU) read
50 ms after the symlink appears, so it is not skewed by other load on the
machine the way wall time is.  Bytecode caches go to a temporary prefix,
the cases take turns round by round (so drifting load hits them alike) and
the first two rounds are discarded; the last column is the median of the
per-round ratios of CPU to the floor's.
"""
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
HELLO = os.path.join(ROOT, "samples", "fn-hello", "func.py")


def measure(argv):
    """Runs argv once; returns (CPU ms, wall ms) to ready."""
    cache = os.path.join(tempfile.gettempdir(), "coldstart-ready-pycache")
    d = tempfile.mkdtemp(prefix="ready", dir="/tmp")
    sock = os.path.join(d, "lsnr.sock")
    env = dict(os.environ, FN_LISTENER="unix:" + sock,
               PYTHONPATH=os.path.join(ROOT, "python"),
               PYTHONPYCACHEPREFIX=cache)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if os.path.basename(argv[0]) == "coldstart-fdk" and \
            not argv[0].startswith(os.path.join(ROOT, "python")):
        # An installed script runs on its environment's packages.
        env.pop("PYTHONPATH")
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stderr=subprocess.DEVNULL)
    try:
        while not os.path.islink(sock):
            if p.poll() is not None:
                raise SystemExit("%s exited with %d before it was ready"
                                 % (argv, p.returncode))
            time.sleep(0.0002)
        w = (time.perf_counter() - t0) * 1000
        time.sleep(0.05)
        with open("/proc/%d/schedstat" % p.pid) as f:
            c = int(f.read().split()[0]) / 1e6
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        shutil.rmtree(d, ignore_errors=True)
    return c, w


def main():
    py = sys.argv[1] if len(sys.argv) > 1 else "/usr/bin/python3"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    fdk = os.path.join(ROOT, "python", "coldstart-fdk")
    cases = [
        ("floor (bench/fdk_floor.py)",
         [py, os.path.join(ROOT, "bench", "fdk_floor.py")]),
        ("coldstart-fdk --warm lazy", [py, fdk, HELLO]),
        ("python -m coldstart.fdk", [py, "-m", "coldstart.fdk", HELLO]),
        ("coldstart-fdk --warm eager", [py, fdk, "--warm", "eager", HELLO]),
        ("python3 func.py (fdk.handle)", [py, HELLO]),
    ]
    installed = os.path.join(os.path.dirname(py), "coldstart-fdk")
    if os.path.isfile(installed) and os.access(installed, os.X_OK):
        cases.insert(2, ("installed coldstart-fdk", [installed, HELLO]))
    got = {name: [] for name, _ in cases}
    for i in range(runs + 2):
        for name, argv in cases:
            c, w = measure(argv)
            if i >= 2:
                got[name].append((c, w))
    print("%s, %d interleaved rounds, medians" % (py, runs))
    floor = got[cases[0][0]]
    for name, _ in cases:
        rs = got[name]
        ratio = statistics.median(c / f[0] for (c, _), f in zip(rs, floor))
        print("%-30s CPU to ready %6.1f ms   wall %6.1f ms   CPU/floor %.2f"
              % (name, statistics.median(c for c, _ in rs),
                 statistics.median(w for _, w in rs), ratio))


if __name__ == "__main__":
    main()
