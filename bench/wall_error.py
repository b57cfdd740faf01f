"""The wall-time error of `coldstart profile`: each run's reported wall time
minus the target's own account of its lifetime (CLOCK_MONOTONIC taken by a
preloaded library at the process's start and at its exit,
tests/fixtures/wallclock/wallclock.c).

Usage: wall_error.py WALLCLOCK_SO RUNS LABEL=COLDSTART[:ENV=VALUE][:fifo] ...

":fifo" runs that configuration under SCHED_FIFO (root only): neither
coldstart nor the target then waits for a CPU behind the machine's other
work, which the target's own clock cannot see, so the figure is coldstart's
own error.

The configurations run interleaved, one `profile -n RUNS` each per round,
for three rounds, so machine load falls on all of them alike.  Prints, per
configuration, the median, 90th percentile and largest error in ms.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def fifo():
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))


def one(coldstart, extra_env, rt, so, runs, out_dir):
    clock = os.path.join(out_dir, "clock")
    if os.path.exists(clock):
        shutil.rmtree(clock)
    os.mkdir(clock)
    env = dict(os.environ, LD_PRELOAD=so, WALLCLOCK_OUT=clock, **extra_env)
    p = subprocess.run([coldstart, "profile", "-n", str(runs), "--json", "--python", "/usr/bin/python3",
                        "-c", "pass"], capture_output=True, text=True, env=env, timeout=600,
                       preexec_fn=fifo if rt else None)
    if p.returncode != 0:
        sys.exit("coldstart failed (%d): %s" % (p.returncode, p.stderr))
    own = {}
    for name in os.listdir(clock):
        with open(os.path.join(clock, name)) as f:
            pid, start, end = map(int, f.read().split())
        own[pid] = (end - start) / 1e6
    errors = []
    for r in json.loads(p.stdout)["runs"]:
        pid = r["processes"][0]["pid"]
        errors.append(r["wall_us"] / 1e3 - own[pid])
    return errors


def main():
    so, runs = sys.argv[1], int(sys.argv[2])
    configs = []
    for arg in sys.argv[3:]:
        label, rest = arg.split("=", 1)
        parts = rest.split(":")
        env = dict(p.split("=", 1) for p in parts[1:] if p != "fifo")
        configs.append((label, parts[0], env, "fifo" in parts[1:]))
    errors = {c[0]: [] for c in configs}
    with tempfile.TemporaryDirectory() as d:
        for _ in range(3):
            for label, cs, env, rt in configs:
                errors[label] += one(cs, env, rt, so, runs, d)
    print("%-28s %6s %8s %8s %8s   (wall - the target's own clock, ms)" % ("", "runs", "median", "p90", "max"))
    for label, _, _, _ in configs:
        e = sorted(errors[label])
        p90 = e[min(len(e) - 1, int(len(e) * 0.9))]
        print("%-28s %6d %8.2f %8.2f %8.2f" % (label, len(e), statistics.median(e), p90, e[-1]))


if __name__ == "__main__":
    main()
