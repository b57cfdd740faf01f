"""One cold start under the RIE, measured: run as the first process of fresh
network and pid namespaces (`unshare -n -p -f`).  The RIE runs outside the
runtime's cgroups; the runtime joins them (cpu, cpuacct, memory: v1) before
it execs.  Prints JSON: wall ms from the invocation's POST to its answer,
the runtime's CPU ms then (cpuacct.usage), its peak memory, the answer;
with --later S also the CPU ms the runtime used in the S seconds after
(what it did after its answer the bench's reading did not count).

usage: runner.py [--later S] CGROUP_NAME EVENT_FILE RIE CMD...
"""
import http.client
import json
import os
import subprocess
import sys
import time

CG = "/sys/fs/cgroup"


def main():
    args = sys.argv[1:]
    later = None
    if args[:1] == ["--later"]:
        later = float(args[1])
        args = args[2:]
    name, event_file, rie = args[:3]
    cmd = args[3:]
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    join = "; ".join("echo $$ > %s/%s/%s/tasks" % (CG, c, name)
                     for c in ("cpu", "cpuacct", "memory"))
    argv = ["qemu-aarch64", rie, "/bin/sh", "-c", join + '; exec "$@"', "sh"] + cmd
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(argv, stdout=null, stderr=null)
    try:
        end = time.monotonic() + 60
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", 8080, timeout=5)
                c.connect()
                c.close()
                break
            except OSError:
                if time.monotonic() > end:
                    raise SystemExit("the RIE did not listen")
                time.sleep(0.05)
        body = open(event_file, "rb").read()
        c = http.client.HTTPConnection("127.0.0.1", 8080, timeout=300)
        t0 = time.monotonic()
        c.request("POST", "/2015-03-31/functions/function/invocations", body)
        r = c.getresponse()
        answer = r.read()
        wall = time.monotonic() - t0
        cpu = int(open("%s/cpuacct/%s/cpuacct.usage" % (CG, name)).read())
        peak = int(open("%s/memory/%s/memory.max_usage_in_bytes" % (CG, name)).read())
        if later is not None:
            time.sleep(later)
            after = int(open("%s/cpuacct/%s/cpuacct.usage" % (CG, name)).read())
    finally:
        p.terminate()
        p.wait()
    out = {"wall_ms": wall * 1000, "cpu_ms": cpu / 1e6,
           "peak_mib": peak / 1048576.0, "status": r.status,
           "body": answer.decode("utf-8", "replace")}
    if later is not None:
        out["later_cpu_ms"] = (after - cpu) / 1e6
    print(json.dumps(out))


if __name__ == "__main__":
    main()
