"""Runs one Lambda runtime under AWS's Runtime Interface Emulator and sends
it events; meant to run as the first process of fresh network and pid
namespaces (`unshare -n -p -f`), so the RIE's fixed port 8080 is its own
and everything it started ends with it.

usage: rie_run.py SPEC.json OUT.json
SPEC: {"rie": [argv prefix], "cmd": [runtime argv], "cwd": dir,
       "env": {...}, "events": [body text, ...]}
OUT:  {"calls": [[status, body text], ...], "log": text}
"""

import http.client
import json
import os
import subprocess
import sys
import time


def main():
    spec = json.load(open(sys.argv[1]))
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    env = dict(os.environ)
    env.update(spec["env"])
    log_path = sys.argv[2] + ".log"
    with open(log_path, "wb") as log:
        rie = subprocess.Popen(spec["rie"] + spec["cmd"], cwd=spec["cwd"],
                               env=env, stdout=log, stderr=subprocess.STDOUT)
    calls = []
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", 8080, timeout=5)
                c.connect()
                c.close()
                break
            except OSError:
                if time.monotonic() > deadline or rie.poll() is not None:
                    raise SystemExit("the RIE did not listen on 8080")
                time.sleep(0.05)
        for body in spec["events"]:
            c = http.client.HTTPConnection("127.0.0.1", 8080, timeout=120)
            try:
                c.request("POST", "/2015-03-31/functions/function/"
                          "invocations", body.encode("utf-8"))
                r = c.getresponse()
                calls.append([r.status, r.read().decode("utf-8",
                                                        "replace")])
            except (OSError, http.client.HTTPException) as e:
                calls.append([0, "no answer: %s" % e])
            finally:
                c.close()
    finally:
        rie.terminate()
        try:
            rie.wait(10)
        except subprocess.TimeoutExpired:
            rie.kill()
            rie.wait()
    with open(log_path, "rb") as f:
        log_text = f.read().decode("utf-8", "replace")
    os.unlink(log_path)
    tmp = sys.argv[2] + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"calls": calls, "log": log_text}, f)
    os.rename(tmp, sys.argv[2])


if __name__ == "__main__":
    main()
