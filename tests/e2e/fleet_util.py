"""Helpers of the fleet-telemetry tests: the consumers' own software (go tool
pprof, the OpenTelemetry bindings under tests/consumers, Prometheus's
Pushgateway and server from Debian), started on free loopback ports and
stopped by the tests that start them."""
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request

from conftest import ROOT

CONSUMERS = os.path.join(ROOT, "tests", "consumers")
OTLP_BINDINGS = os.path.join(CONSUMERS, "node_modules", "@opentelemetry", "otlp-transformer",
                             "build", "src", "generated", "root.js")


def missing_otlp_oracle():
    if not shutil.which("node"):
        return "node is not installed (Debian nodejs)"
    if not os.path.exists(OTLP_BINDINGS):
        return "the OpenTelemetry bindings are missing: run 'npm ci --prefix tests/consumers'"
    return ""


def otlp_check(path, form, remote_parent=None):
    """Decodes and verifies path with @opentelemetry/otlp-transformer (form: protobuf | json);
    remote_parent: a span id of another service a root may name as its parent."""
    r = subprocess.run(["node", os.path.join(CONSUMERS, "otlp_check.cjs"), str(path), form] +
                       ([remote_parent] if remote_parent else []),
                       capture_output=True, text=True, timeout=120, cwd=CONSUMERS)
    out = json.loads(r.stdout.splitlines()[-1]) if r.stdout.strip() else {"ok": False, "error": r.stderr}
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.read().decode()


class Daemon:
    """A server the test starts on a free loopback port; wait() until its URL answers."""

    def __init__(self, argv_for_port, probe_path, tmp_path, name):
        self.proc = None
        self.log = tmp_path / (name + ".log")
        for _ in range(5):
            self.port = free_port()
            with open(self.log, "wb") as log:
                self.proc = subprocess.Popen(argv_for_port(self.port), stdout=log, stderr=subprocess.STDOUT,
                                             cwd=str(tmp_path))
            self.url = "http://127.0.0.1:%d" % self.port
            if self._wait(probe_path):
                return
            self.stop()
            # Another process took the port between free_port and the bind: try another.
            if b"address already in use" not in self.log.read_bytes():
                break
        raise AssertionError("%s did not start: %s" % (name, self.log.read_text(errors="replace")[-2000:]))

    def _wait(self, probe_path):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                http_get(self.url + probe_path, timeout=2)
                return True
            except OSError:
                time.sleep(0.1)
        return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def pushgateway(tmp_path):
    if not shutil.which("prometheus-pushgateway"):
        return None
    # Debian's build persists to /var/lib/prometheus by default: the test's gateway keeps nothing.
    return Daemon(lambda port: ["prometheus-pushgateway", "--web.listen-address=127.0.0.1:%d" % port,
                                "--persistence.file="],
                  "/-/ready", tmp_path, "pushgateway")


def parse_exposition(text):
    """Samples of a text exposition: [(name, {label: value}, float)]."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, rest = line.split("{", 1) if "{" in line.split(" ")[0] else (line.split(" ")[0], None)
        labels = {}
        if rest is not None:
            body, value = rest.rsplit("} ", 1)
            i = 0
            while i < len(body):
                eq = body.index("=", i)
                key = body[i:eq]
                j = eq + 2
                val = []
                while body[j] != '"':
                    if body[j] == "\\":
                        j += 1
                        val.append({"n": "\n"}.get(body[j], body[j]))
                    else:
                        val.append(body[j])
                    j += 1
                labels[key] = "".join(val)
                i = j + 1
                if i < len(body) and body[i] == ",":
                    i += 1
        else:
            value = line.split(" ")[1]
        out.append((name, labels, float(value.split(" ")[0])))
    return out
