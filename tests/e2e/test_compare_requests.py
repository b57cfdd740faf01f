"""`coldstart compare --requests N` against real servers over real sockets:
once a run is ready (the first good answer), N requests one at a time, and
each run's median and p95 latency compared as the other figures are
(gunicorn with and without --preload, uvicorn with one worker and two).
And `--cache warm --cache cold`, the page cache kept and evicted as two
variants of one comparison.  Timings on a shared machine are noisy, so the
tests hold what must be true of any real run (counts, order, plausibility),
not values."""
import json
import re
import socket
import subprocess

import pytest

from conftest import DEBIAN_PYTHON, run_coldstart

WSGI_APP = """
import json, email.mime.text

def app(environ, start_response):
    body = b"ok\\n"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
"""

ASGI_APP = """
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"ok\\n"})
"""

# argv: port.  Ready at its first answer (200); every later request answered 500.
SOURING_SERVER = """
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
n = 0
while True:
    c, _ = s.accept()
    c.recv(4096)
    status = b"200 OK" if n == 0 else b"500 Internal Server Error"
    n += 1
    c.sendall(b"HTTP/1.1 " + status + b"\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\nok")
    c.close()
"""

# argv: port.  Ready at its first answer; every later connection is accepted and never answered.
HANGING_SERVER = """
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
c, _ = s.accept()
c.recv(4096)
c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\nok")
c.close()
held = []
while True:
    held.append(s.accept()[0])
"""

REQUESTS = 40


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def has_module(name):
    return subprocess.run([DEBIAN_PYTHON, "-c", "import " + name], capture_output=True).returncode == 0


def check_requests(r, cmp_path, md_path):
    """What any comparison with --requests must show: the figures in an
    80-column table, counts that add up, latencies that are positive with
    p95 >= median in every run, and the verdicts in the Markdown."""
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    assert "  once ready, %d requests a run, one at a time: req p50, p95 their latency" % REQUESTS in lines
    for fig in ("req p50", "req p95", "ready"):
        assert re.search(r"^  %s +median ± MAD" % fig, r.stdout, re.M), r.stdout
        assert re.search(r"^(  B vs A)? +%s +([\d.]+x (slower|faster)|same)" % fig, r.stdout, re.M), r.stdout
    # A server is ranked by what its users wait for: readiness first, then the requests, the wall last.
    order = [line.split()[0] + " " + line.split()[1] for line in lines if "median ± MAD" in line]
    assert order[0] == "ready median" and order.index("req p50") < order.index("wall median"), order
    assert re.search(r"^  B vs A   ready ", r.stdout, re.M), r.stdout
    cmp = json.loads(cmp_path.read_text())
    assert cmp["requests"] == REQUESTS
    for v in cmp["variants"]:
        assert (v["requests_asked"], v["requests_failed"]) == (3 * REQUESTS, 0), v
        med, p95 = v["metrics"]["request_median_us"], v["metrics"]["request_p95_us"]
        assert med["n"] == 3 and p95["n"] == 3
        for run in v["runs"]:
            assert run["requests_asked"] == REQUESTS and run["requests_ok"] == REQUESTS, run
            # A loopback answer of three bytes: more than nothing, less than a second.
            assert 0 < run["request_median_us"] <= run["request_p95_us"] < 1_000_000, run
            assert run["ready_us"] > 0 and run["status"] == "stopped", run
    for key in ("request_median_us", "request_p95_us", "ready_us"):
        test = cmp["comparisons"][0][key]
        # Three runs a side: nothing can be significant, and the Markdown says so.
        assert test["exact"] and not test["significant"], test
    md = md_path.read_text()
    header = md.splitlines()[2]
    assert "| req p50 | req p95 | vs A (ready) | p |" in header
    # Every figure shown has its column: the rows have as many cells as the header (listen had none).
    rows = [line for line in md.splitlines()[3:] if re.match(r"\| [A-Z] \| ", line)][:len(cmp["variants"])]
    assert [row.count(" | ") for row in rows] == [header.count(" | ")] * len(rows), (header, rows)
    assert re.search(r"^\| B \| req p95 \| .* \| cannot be significant \|$", md, re.M), md
    return cmp


def test_gunicorn_with_and_without_preload(tmp_path):
    (tmp_path / "app.py").write_text(WSGI_APP)
    port = free_port()
    out, md = tmp_path / "c.json", tmp_path / "c.md"
    r = run_coldstart("compare", "-n", "3", "--warmup", "0", "--ready", "http://127.0.0.1:%d/" % port,
                      "--requests", REQUESTS, "-o", out, "--markdown", md,
                      "gunicorn -b 127.0.0.1:%d app:app" % port,
                      "gunicorn --preload -b 127.0.0.1:%d app:app" % port, cwd=tmp_path, timeout=600)
    cmp = check_requests(r, out, md)
    a, b = cmp["variants"]
    # Without --preload the master listens before its worker has imported the app: listening comes first.
    assert "listening_us" in a["metrics"]
    assert all(run["listening_us"] < run["ready_us"] for run in a["runs"]), a["runs"]


def test_uvicorn_one_worker_and_two(tmp_path):
    if not has_module("uvicorn"):
        pytest.skip("uvicorn is not installed (tests/install-deps.sh installs python3-uvicorn)")
    (tmp_path / "asgi.py").write_text(ASGI_APP)
    port = free_port()
    out, md = tmp_path / "c.json", tmp_path / "c.md"
    r = run_coldstart("compare", "-n", "3", "--warmup", "0", "--ready", "http://127.0.0.1:%d/" % port,
                      "--requests", REQUESTS, "-o", out, "--markdown", md, "--name", "1 worker",
                      "--name", "2 workers",
                      "%s -m uvicorn --port %d asgi:app" % (DEBIAN_PYTHON, port),
                      "%s -m uvicorn --workers 2 --port %d asgi:app" % (DEBIAN_PYTHON, port),
                      cwd=tmp_path, timeout=600)
    check_requests(r, out, md)
    assert "  A  1 worker" in r.stdout and "  B  2 workers" in r.stdout


def test_failed_requests_are_said(tmp_path):
    """A server that is ready (its first answer is 200) and then answers 500:
    the failures are said in the table, the Markdown and the JSON."""
    (tmp_path / "souring.py").write_text(SOURING_SERVER)
    port = free_port()
    out, md = tmp_path / "c.json", tmp_path / "c.md"
    cmd = "%s %s %d" % (DEBIAN_PYTHON, tmp_path / "souring.py", port)
    r = run_coldstart("compare", "-n", "1", "--warmup", "0", "--ready", "http://127.0.0.1:%d/" % port,
                      "--requests", "5", "-o", out, "--markdown", md, cmd, cmd)
    assert r.returncode == 0, r.stderr
    assert "  ! A: 5 of 5 requests after ready failed: the latency is the answered ones'" in r.stdout.splitlines()
    assert "**A: 5 of 5 requests after ready failed**" in md.read_text()
    assert "requests after ready: 5 of 5 failed (request 1: GET / answered 500)" in r.stderr
    a = json.loads(out.read_text())["variants"][0]
    assert (a["requests_asked"], a["requests_failed"]) == (5, 5)
    assert a["metrics"]["request_median_us"]["n"] == 0 and a["runs"][0]["request_median_us"] is None


def test_a_request_never_answered_ends_the_requests(tmp_path):
    """A server that stops answering after ready: the first request waits
    --ready-timeout, the rest are not sent, and the run ends (no hang)."""
    (tmp_path / "hang.py").write_text(HANGING_SERVER)
    port = free_port()
    out = tmp_path / "c.json"
    cmd = "%s %s %d" % (DEBIAN_PYTHON, tmp_path / "hang.py", port)
    r = run_coldstart("compare", "-n", "1", "--warmup", "0", "--ready", "http://127.0.0.1:%d/" % port,
                      "--ready-timeout", "5", "--requests", "1000", "--top", "0", "-o", out, cmd, cmd, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("requests after ready: 1000 of 1000 failed (request 1: no answer within 5000 ms)") == 2
    for v in json.loads(out.read_text())["variants"]:
        assert (v["requests_asked"], v["requests_failed"]) == (1000, 1000), v
        run = v["runs"][0]
        # Stopped after the one request's 5 s, not after 1000 of them.
        assert run["status"] == "stopped" and run["wall_us"] < 30_000_000, run


def test_warm_and_cold_as_variants(tmp_path):
    out = tmp_path / "c.json"
    r = run_coldstart("compare", "-n", "2", "--warmup", "0", "--cache", "warm", "--cache", "cold", "-o", out,
                      "--python", DEBIAN_PYTHON, "-c", "import json, email.mime.text")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("coldstart compare: 2 cache states, 2 measured runs each")
    assert "  A  warm" in r.stdout and "  B  cold" in r.stdout
    cmp = json.loads(out.read_text())
    a, b = cmp["variants"]
    assert (a["cold"], b["cold"]) == (False, True)
    # --cold needs a warm-up that learns the files; a warm variant's runs are never evicted.
    assert cmp["warmup"] == 1
    assert all(run["cold"] is None for run in a["runs"])
    assert all(run["cold"] is not None for run in b["runs"])
    assert b["not_cold_runs"] is not None and a["not_cold_runs"] is None


def test_warm_and_cold_multiply_commands(tmp_path):
    out = tmp_path / "c.json"
    r = run_coldstart("compare", "-n", "1", "--warmup", "0", "-o", out, "--cache", "warm", "--cache", "cold",
                      "%s -c 'import json'" % DEBIAN_PYTHON, "%s -c 'import csv'" % DEBIAN_PYTHON)
    assert r.returncode == 0, r.stderr
    labels = [v["label"] for v in json.loads(out.read_text())["variants"]]
    assert labels == ["%s -c 'import json', warm" % DEBIAN_PYTHON, "%s -c 'import json', cold" % DEBIAN_PYTHON,
                      "%s -c 'import csv', warm" % DEBIAN_PYTHON, "%s -c 'import csv', cold" % DEBIAN_PYTHON]


@pytest.mark.parametrize("args,said", [
    (["--requests", "0", "--ready", "http://127.0.0.1:9/", "a", "b"],
     "--requests '0': expected a number from 1 to 100000"),
    (["--requests", "100001", "--ready", "http://127.0.0.1:9/", "a", "b"],
     "--requests '100001': expected a number from 1 to 100000"),
    (["--requests", "5", "--ready", "tcp:9", "a", "b"], "--requests needs --ready http://"),
    (["--requests", "5", "a", "b"], "--requests needs --ready http://"),
    (["--cache", "lukewarm", "a", "b"], "--cache 'lukewarm': expected warm or cold"),
    (["--cold", "--cache", "warm", "--cache", "cold", "-c", "pass"], "--cold makes every variant cold"),
])
def test_usage_errors(args, said):
    r = run_coldstart("compare", *args)
    assert r.returncode == 2, r.stderr
    assert said in r.stderr
