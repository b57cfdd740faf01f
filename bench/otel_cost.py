"""What coldstart.otel costs a process before its first response.

1. CPU time of importing it and of begin() (checking the variables and
   reading the clock, and with import spans starting coldstart's tracer),
   measured inside fresh processes with the bytecode cached, N of each,
   medians printed.
2. With valgrind, instructions (which load does not move) of a process
   doing what coldstart-fdk does up to its first response (its modules and
   a function importing decimal and fractions), without the variables, with
   the exporter alone (COLDSTART_OTEL_IMPORTS=0) and with import spans (the
   tracer's per-import cost included).

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
otel._state["on"] = False
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


FIRST_RESPONSE = r"""
import os, coldstart
if coldstart.otel_wanted(os.environ):
    from coldstart import otel
    otel.begin()
from coldstart.fdk import loop, context, response, httpwire
import io, json, decimal, fractions
if "coldstart.otel" in __import__("sys").modules:
    otel._state["on"] = False  # the send comes after the response: not counted
    if otel._state.get("dir"):
        otel._remove_dir(otel._state["dir"])
"""


def instructions(env):
    import re
    out = tempfile.mktemp(prefix="otelcost-cg")
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, sys.executable, "-c",
                        FIRST_RESPONSE], env=env, capture_output=True, text=True, check=True)
    os.unlink(out)
    return int(re.search(r"Collected : (\d+)", r.stderr).group(1))


def main_instructions():
    import shutil
    if not shutil.which("valgrind"):
        print("valgrind not installed: instruction counts skipped")
        return
    cache = tempfile.mkdtemp(prefix="otelcost")
    env = dict(os.environ, PYTHONPATH=PYDIR, PYTHONPYCACHEPREFIX=cache)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for k in list(env):
        if k.startswith("OTEL_"):
            del env[k]
    with_otel = dict(env, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9")
    subprocess.run([sys.executable, "-c", FIRST_RESPONSE], env=with_otel, check=True)  # writes the caches
    base = instructions(env)
    print("instructions to the first response, without the variables: %d" % base)
    for label, extra in (("exporter alone (COLDSTART_OTEL_IMPORTS=0)", {"COLDSTART_OTEL_IMPORTS": "0"}),
                         ("exporter and import spans (tracer)", {})):
        n = instructions(dict(with_otel, **extra))
        print("%-45s %d (%+.2f%%)" % (label, n, 100.0 * (n - base) / base))


if __name__ == "__main__":
    main()
    main_instructions()
