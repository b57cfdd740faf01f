"""The cyclic collector's share of an import's CPU (docs/plan.md, "The
collector during the first call"; diagnostics, not part of make bench).

usage: python3 bench/plan/gc_cost.py THRESHOLDS MOD[,MOD...]

THRESHOLDS is "default" or three numbers for gc.set_threshold, e.g.
100000,10,10.  Imports the modules and prints the thread CPU time of the
imports, the CPU time of the collections inside them (gc.callbacks), how
many ran, and the peak RSS.
"""
import gc
import resource
import sys
import time


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    th, mods = sys.argv[1], sys.argv[2]
    if th != "default":
        gc.set_threshold(*map(int, th.split(",")))
    acc = {"cpu": 0.0, "n": 0, "at": None}

    def cb(phase, info):
        if phase == "start":
            acc["at"] = time.thread_time()
        else:
            acc["cpu"] += time.thread_time() - acc["at"]
            acc["n"] += 1
    gc.callbacks.append(cb)
    t0 = time.thread_time()
    for m in mods.split(","):
        __import__(m)
    t1 = time.thread_time()
    gc.callbacks.remove(cb)
    print("%-16s %-14s import %.1f ms CPU, collections %.1f ms in %d, peak RSS %d MiB"
          % (mods[:16], th, (t1 - t0) * 1e3, acc["cpu"] * 1e3, acc["n"],
             resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024))
    return 0


if __name__ == "__main__":
    sys.exit(main())
