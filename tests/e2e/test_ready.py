"""Readiness is an event of the target (`profile --ready`).

Real sockets and real servers: a listener that this test process holds is
"another process" to coldstart's target; the target's own servers are
Python's http.server, a server run by a child of the target (as a pre-fork
master's worker would), and coldstart-fdk for the Fn probe.  Every run's
readiness must come from the target's own process tree and, for http://,
from an accepted answer; otherwise coldstart exits 9 (docs/exit-codes.md)
and says why.
"""
import http.server
import json
import os
import socket
import threading
import time

import pytest

from conftest import DEBIAN_PYTHON, ROOT

FDK = os.path.join(ROOT, "python", "coldstart-fdk")
FN_HELLO = os.path.join(ROOT, "samples", "fn-hello", "func.py")

# A server that answers every GET with the status in argv[2] and a short body.
STATUS_SERVER = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"status %d from the target\\n" % int(sys.argv[2])
        self.send_response(int(sys.argv[2]))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load(path):
    with open(path) as f:
        return json.load(f)


def assert_ready_on_monotonic(run, t0, t1):
    """ready_ns is CLOCK_MONOTONIC, the clock of this test's own readings around
    the run and of the trace: exec (ready_ns - ready_us) and readiness fall
    between them, and the target's imports (the trace's start_ns) before it."""
    exec_ns = run["ready_ns"] - run["ready_us"] * 1000
    assert t0 < exec_ns < run["ready_ns"] < t1
    proc = run["processes"][0]
    # The tracer estimates a process's start from /proc in clock ticks (10 ms).
    assert t0 - 20 * 10**6 < proc["start_ns"] < run["ready_ns"]


@pytest.fixture
def foreign_http():
    """An HTTP server answering 200, run by this test process (not the target)."""
    class Ok(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), Ok)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize("probe", ["tcp:%d", "http://127.0.0.1:%d/"])
def test_listener_of_another_process_is_not_readiness(coldstart, foreign_http, tmp_path, probe):
    port = foreign_http
    out = tmp_path / "p.json"
    r = coldstart("profile", "--no-report", "-o", out, "--ready", probe % port, "--ready-timeout", "20",
                  "--python", DEBIAN_PYTHON, "-c", "import time; time.sleep(20)", timeout=60)
    assert r.returncode == 9, r.stderr
    assert "port %d is in use by pid %d" % (port, os.getpid()) in r.stderr, r.stderr
    run = load(out)["runs"][0]
    assert run["ready_us"] == -1 and run["ready_ns"] == -1
    # It was told at once, not after --ready-timeout.
    assert run["wall_us"] < 10e6, run["wall_us"]


def test_own_http_server_is_ready(coldstart, tmp_path):
    port = free_port()
    out = tmp_path / "p.json"
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    r = coldstart("profile", "--no-report", "-o", out, "--ready", "http://127.0.0.1:%d/" % port,
                  "--python", DEBIAN_PYTHON, "-m", "http.server", "--bind", "127.0.0.1", str(port), timeout=120)
    t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    assert r.returncode == 0, r.stderr
    run = load(out)["runs"][0]
    assert run["status"] == "stopped"
    assert 0 < run["ready_us"] < run["wall_us"]
    # Ready is the first good answer; the listener accepted a connection before or then.
    assert run["first_response_us"] == 0
    assert 0 < run["listening_us"] <= run["ready_us"]
    assert_ready_on_monotonic(run, t0, t1)


def test_listener_of_the_targets_child_is_readiness(coldstart, tmp_path):
    """A pre-fork server's socket may live in a worker: any process of the tree counts."""
    port = free_port()
    code = ("import subprocess, sys, time\n"
            "subprocess.Popen([sys.executable, '-m', 'http.server', '--bind', '127.0.0.1', '%d'])\n"
            "time.sleep(60)\n" % port)
    out = tmp_path / "p.json"
    r = coldstart("profile", "--no-report", "-o", out, "--ready", "tcp:%d" % port,
                  "--python", DEBIAN_PYTHON, "-c", code, timeout=120)
    assert r.returncode == 0, r.stderr
    run = load(out)["runs"][0]
    assert run["status"] == "stopped" and run["ready_us"] > 0


def test_endpoint_answering_500_is_not_ready_exit_9(coldstart, tmp_path):
    port = free_port()
    script = tmp_path / "srv.py"
    script.write_text(STATUS_SERVER)
    out = tmp_path / "p.json"
    r = coldstart("profile", "--no-report", "-o", out, "--ready", "http://127.0.0.1:%d/" % port,
                  "--ready-timeout", "2", "--python", DEBIAN_PYTHON, script, port, 500, timeout=60)
    assert r.returncode == 9, r.stderr
    assert "target not ready after 2000 ms (GET / answered 500 Internal Server Error: " \
           "'status 500 from the target'" in r.stderr, r.stderr
    assert load(out)["runs"][0]["ready_us"] == -1


def test_answer_outside_ready_status_fails_at_once(coldstart, tmp_path):
    port = free_port()
    script = tmp_path / "srv.py"
    script.write_text(STATUS_SERVER)
    r = coldstart("profile", "--no-report", "--ready", "http://127.0.0.1:%d/health" % port,
                  "--ready-timeout", "30", "--python", DEBIAN_PYTHON, script, port, 404, timeout=60)
    assert r.returncode == 9, r.stderr
    assert "GET /health answered 404 Not Found: 'status 404 from the target'; " \
           "readiness needs 200-399 (--ready-status)" in r.stderr, r.stderr
    assert "not ready after" not in r.stderr


@pytest.mark.parametrize("statuses", ["404", "4xx", "200,404"])
def test_ready_status_changes_what_counts(coldstart, tmp_path, statuses):
    port = free_port()
    script = tmp_path / "srv.py"
    script.write_text(STATUS_SERVER)
    r = coldstart("profile", "--no-report", "--json", "--ready", "http://127.0.0.1:%d/" % port,
                  "--ready-status", statuses, "--python", DEBIAN_PYTHON, script, port, 404, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["runs"][0]["ready_us"] > 0


def test_redirect_counts_by_default(coldstart, tmp_path):
    port = free_port()
    script = tmp_path / "srv.py"
    script.write_text(STATUS_SERVER)
    r = coldstart("profile", "--no-report", "--ready", "http://127.0.0.1:%d/" % port,
                  "--python", DEBIAN_PYTHON, script, port, 302, timeout=60)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("args,message", [
    (["--ready", "tcp:80", "--ready-status", "200"], "--ready-status applies to http:// probes"),
    (["--ready-status", "200"], "--ready-status needs --ready http://"),
    (["--ready", "http://127.0.0.1:80/", "--ready-status", "20x"], "--ready-status needs HTTP statuses"),
    (["--ready", "tcp:99999"], "needs a port from 1 to 65535"),
    (["--ready", "http://192.168.1.1/"], "only loopback addresses"),
    (["--ready", "nonsense"], "unknown readiness probe 'nonsense'"),
])
def test_bad_ready_options_are_usage_errors(coldstart, args, message):
    r = coldstart("profile", *args, "--python", DEBIAN_PYTHON, "-c", "pass")
    assert r.returncode == 2, r.stderr
    assert message in r.stderr


def test_fn_first_call_502_exits_9_and_quotes_it(coldstart, tmp_path):
    out = tmp_path / "p.json"
    r = coldstart("profile", "--no-report", "-o", out, "--ready", "fn", "--ready-timeout", "30",
                  "--", DEBIAN_PYTHON, FDK, FN_HELLO, "no_such_handler", timeout=120)
    assert r.returncode == 9, r.stderr
    assert "the first call failed: POST /call answered 502 Bad Gateway: " in r.stderr, r.stderr
    assert "has no attribute 'no_such_handler'" in r.stderr.split("answered 502")[1]
    run = load(out)["runs"][0]
    assert run["ready_us"] == -1 and run["first_response_us"] == -1


def test_fn_first_call_200_is_ready(coldstart, tmp_path):
    out = tmp_path / "p.json"
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    r = coldstart("profile", "--no-report", "-o", out, "--ready", "fn",
                  "--", DEBIAN_PYTHON, FDK, FN_HELLO, "handler", timeout=120)
    t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    assert r.returncode == 0, r.stderr
    run = load(out)["runs"][0]
    assert run["ready_us"] > 0 and run["first_response_us"] > 0
    assert_ready_on_monotonic(run, t0, t1)


def test_unix_socket_of_another_process_is_not_readiness(coldstart, tmp_path):
    path = str(tmp_path / "app.sock")
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(path)
        s.listen()
        r = coldstart("profile", "--no-report", "--ready", "unix:" + path, "--ready-timeout", "20",
                      "--python", DEBIAN_PYTHON, "-c", "import time; time.sleep(20)", timeout=60)
    assert r.returncode == 9, r.stderr
    assert "'%s' is served by pid %d" % (path, os.getpid()) in r.stderr, r.stderr


def test_own_unix_socket_is_readiness(coldstart, tmp_path):
    path = str(tmp_path / "app.sock")
    code = ("import socket, time\n"
            "s = socket.socket(socket.AF_UNIX); s.bind(%r); s.listen()\n"
            "time.sleep(60)\n" % path)
    r = coldstart("profile", "--no-report", "--json", "--ready", "unix:" + path,
                  "--python", DEBIAN_PYTHON, "-c", code, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["runs"][0]["ready_us"] > 0


# An Fn function that answers its first call and exits at once, with its
# profiler (its parent) stopped in between: coldstart then wakes to the
# answer and the exit together, as it often did under Fn's CPU quota with
# bench/fdk_floor.py.  A helper continues the profiler once this process is
# a zombie, so the order does not depend on timing.
ANSWER_AND_EXIT = """
import os, signal, socket, subprocess
path = os.environ["FN_LISTENER"][len("unix:"):]
d, base = os.path.split(path)
phony = os.path.join(d, "phony" + base)
s = socket.socket(socket.AF_UNIX)
old = os.umask(0o111)
s.bind(phony)
os.umask(old)
s.listen(1)
os.symlink(os.path.basename(phony), path)
c, _ = s.accept()
with open("/proc/%d/comm" % os.getppid()) as f:
    if not f.read().startswith("coldstart"):
        os._exit(3)  # stop nothing but the profiler
buf = b""
while b"\\r\\n\\r\\n" not in buf:
    buf += c.recv(65536)
subprocess.Popen(["sh", "-c", "while [ \\"$(cut -d' ' -f3 /proc/%d/stat)\\" != Z ]; do sleep 0.01; done; "
                  "kill -CONT %d" % (os.getpid(), os.getppid())])
os.kill(os.getppid(), signal.SIGSTOP)
c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 0\\r\\n\\r\\n")
os._exit(0)
"""


def test_fn_answer_seen_with_the_exit_is_ready(coldstart, tmp_path):
    target = tmp_path / "answer_and_exit.py"
    target.write_text(ANSWER_AND_EXIT)
    out = tmp_path / "p.json"
    r = coldstart("profile", "--no-trace", "--no-report", "--no-baseline", "-o", out, "--ready", "fn",
                  "--", DEBIAN_PYTHON, target, timeout=120)
    assert r.returncode == 0, r.stderr
    run = load(out)["runs"][-1]
    assert run["ready_us"] > 0 and run["first_response_us"] >= 0, run["status"]
