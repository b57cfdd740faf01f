"""What coldstart.otel costs a process before its first response, in CPU:
importing it and begin() (reading the variables and /proc/self/stat, and
with import spans starting coldstart's tracer), measured inside fresh
processes with the bytecode cached, N of each, medians printed.  The
per-import cost of the tracer itself is not in it (docs/design.md gives it).

    /usr/bin/python3 bench/otel_cost.py [N]
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.join(os.path.dirname(HERE), "python")
CODE = r"""
import time
import coldstart  # loaded already wherever coldstart.otel is used
t0 = time.process_time_ns()
from coldstart import otel
t1 = time.process_time_ns()
otel.begin()
t2 = time.process_time_ns()
print(t1 - t0, t2 - t1)
if otel._state.get("dir"):
    otel._remove_dir(otel._state["dir"])
otel._state["cfg"] = None
"""


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    cache = tempfile.mkdtemp(prefix="otelcost")
    env = dict(os.environ, PYTHONPATH=PYDIR, PYTHONPYCACHEPREFIX=cache,
               OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for label, extra in (("exporter alone (COLDSTART_OTEL_IMPORTS=0)", {"COLDSTART_OTEL_IMPORTS": "0"}),
                         ("exporter and tracer start", {})):
        imp, beg = [], []
        for i in range(n + 1):
            out = subprocess.run([sys.executable, "-c", CODE], env=dict(env, **extra), capture_output=True,
                                 text=True, check=True).stdout.split()
            if i:  # the first run writes the bytecode cache
                imp.append(int(out[0]) / 1e6)
                beg.append(int(out[1]) / 1e6)
        imp.sort()
        beg.sort()
        print("%-45s import %.3f ms, begin() %.3f ms (medians of %d)" % (label, imp[n // 2], beg[n // 2], n))


if __name__ == "__main__":
    main()
