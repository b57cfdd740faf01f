"""How late `--ready tcp:PORT` sees a server's listen(), beside CPU hogs.

Usage: ready_lateness.py RUNS HOGS LABEL=COLDSTART ...

The server (the one of tests/e2e/test_ready_time.py) reads CLOCK_MONOTONIC
right after its listen(); the figure is each run's `ready_ns` minus that.
HOGS busy loops run beside it (0 for none).  The configurations run
interleaved, one run each per round, so the load falls on all of them
alike.  Prints, per configuration, the median, 90th percentile and largest
lateness in ms, and every run's.

This is the timing the e2e test leaves to a benchmark: the test asserts
what holds under any load (never before the listen()) and a median bounded
relative to the machine's measured wake-up delay.
"""
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"


def server_source():
    with open(os.path.join(HERE, "..", "tests", "e2e", "test_ready_time.py")) as f:
        src = f.read()
    body = re.search(r'SERVER = """(.*?)"""', src, re.S).group(1)
    return body.replace("\\\\n", "\\n").replace("\\\\r", "\\r")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_run(binary, tmp, server):
    port = free_port()
    clock, out = os.path.join(tmp, "clock"), os.path.join(tmp, "p.json")
    if os.path.exists(clock):
        os.unlink(clock)
    subprocess.run([binary, "profile", "--no-report", "-o", out, "--ready", "tcp:%d" % port, "--python", PYTHON,
                    server, str(port), clock, "0"], capture_output=True, check=True)
    with open(out) as f:
        run = json.load(f)["runs"][0]
    with open(clock) as f:
        after_listen = int(f.read().split()[1])
    return (run["ready_ns"] - after_listen) / 1e6


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    runs, nr_hogs = int(argv[1]), int(argv[2])
    configs = [a.split("=", 1) for a in argv[3:]]
    late = {label: [] for label, _ in configs}
    hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(nr_hogs)]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            server = os.path.join(tmp, "server.py")
            with open(server, "w") as f:
                f.write(server_source())
            for _ in range(runs):
                for label, binary in configs:
                    late[label].append(one_run(binary, tmp, server))
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    for label, v in late.items():
        p90 = statistics.quantiles(v, n=10)[-1] if len(v) > 1 else v[0]
        print("%-10s median %.3f ms  p90 %.3f  max %.3f  runs %s" % (
            label, statistics.median(v), p90, max(v), " ".join("%.3f" % x for x in sorted(v))))


if __name__ == "__main__":
    main(sys.argv)
