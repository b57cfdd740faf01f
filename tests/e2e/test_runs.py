"""What a run of `coldstart profile` promises around the target itself:
a target with nothing to profile is an error (exit 10), coldstart started with
its standard descriptors closed still works, and a signal after the last run
ends coldstart with 128+N as one during a run does (docs/exit-codes.md).
"""
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import COLDSTART, DEBIAN_PYTHON

NO_IMPORT = "no import was recorded: the target printed no -X importtime rows"


@pytest.mark.parametrize("cmd", [["ls", "/"], [DEBIAN_PYTHON, "-I", "-c", "import json"],
                                 [DEBIAN_PYTHON, "-E", "-c", "import json"]],
                         ids=["not-python", "python-I", "python-E"])
def test_target_without_imports_exits_10(coldstart, tmp_path, cmd):
    out = tmp_path / "p.json"
    r = coldstart("profile", "--no-report", "-o", out, "--", *cmd)
    assert r.returncode == 10, r.stderr
    assert NO_IMPORT in r.stderr
    assert "no measured run recorded an import: nothing to profile" in r.stderr
    # The run itself is still saved: what happened is worth keeping.
    doc = json.loads(out.read_text())
    assert doc["runs"][0]["status"] == "exited" and doc["runs"][0]["exit_code"] == 0
    assert all(not p["nodes"] for p in doc["runs"][0]["processes"])


def test_tracer_alone_is_a_profile(coldstart, tmp_path):
    """Rows lost (the target's stderr goes elsewhere) but the tracer saw every import."""
    out = tmp_path / "p.json"
    r = coldstart("profile", "--no-report", "-o", out, "--",
                  "sh", "-c", "%s -c 'import json' 2>/dev/null" % DEBIAN_PYTHON)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    names = [n[0] for p in doc["runs"][0]["processes"] for n in p["nodes"]]
    assert "json" in names
    assert any("the imports are the tracer's alone" in w["msg"] for w in doc["warnings"])


def test_without_tracer_no_rows_exits_10(coldstart):
    r = coldstart("profile", "--no-report", "--no-trace", "--",
                  "sh", "-c", "%s -c 'import json' 2>/dev/null" % DEBIAN_PYTHON)
    assert r.returncode == 10, r.stderr


def test_failing_target_keeps_its_own_code(coldstart):
    """The target's failure explains more than the missing rows."""
    assert coldstart("profile", "--no-report", "--", "false").returncode == 5
    assert coldstart("profile", "--no-report", "--exit-code", "--", "ls", "/").returncode == 0


def run_with_closed(closed, tmp_path):
    out = tmp_path / "p.json"
    script = tmp_path / "t.py"
    script.write_text("import json, sys\nsys.stderr.write('the target writes to stderr\\n')\n")
    p = subprocess.run([COLDSTART, "profile", "-o", str(out), "--python", DEBIAN_PYTHON, str(script)],
                       preexec_fn=lambda: [os.close(fd) for fd in closed],
                       stdout=subprocess.PIPE, timeout=120)
    return p, out


@pytest.mark.parametrize("closed", [(0, 2), (0, 1, 2), (0,), (2,)], ids=lambda c: "closed-" + "-".join(map(str, c)))
def test_closed_standard_descriptors(tmp_path, closed):
    """Closed 0 and 2 once let the signal pipe take them: the target's stderr was read as signals (exit 232)."""
    p, out = run_with_closed(closed, tmp_path)
    assert p.returncode == 0
    doc = json.loads(out.read_text())
    names = [n[0] for n in doc["runs"][0]["processes"][0]["nodes"]]
    assert "json" in names
    # The report goes where stdout is: to /dev/null when it was closed.
    assert (b"interpreter" in p.stdout) == (1 not in closed)


def wchan(pid):
    try:
        with open("/proc/%d/wchan" % pid) as f:
            return f.read()
    except OSError:
        return ""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signal_after_the_last_run_exits_128_plus_n(tmp_path, sig):
    """-o names a FIFO: after its run, coldstart waits to open it for the JSON,
    which is a moment after the last run; a signal then must end it."""
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    p = subprocess.Popen([COLDSTART, "profile", "--no-report", "-o", str(fifo), "--python", DEBIAN_PYTHON,
                          "-c", "import json"], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while "fifo" not in wchan(p.pid) and "wait_for_partner" not in wchan(p.pid):
            assert p.poll() is None and time.monotonic() < deadline, "never reached the report"
            time.sleep(0.01)
        p.send_signal(sig)
        rc = p.wait(timeout=10)
    finally:
        if p.poll() is None:
            # Before the fix the signal was swallowed: let it finish to see its code.
            with open(fifo, "rb") as f:
                f.read()
            rc = p.wait(timeout=30)
    assert rc == 128 + sig, p.stderr.read()


RUN_BY_RUN = """
import os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
path = os.path.join(here, "count")
n = int(open(path).read()) if os.path.exists(path) else 0
with open(path, "w") as f:
    f.write(str(n + 1))
if n == 0:
    import first
    time.sleep(0.6)
elif n == 1:
    import second
    time.sleep(0.3)
"""


def test_findings_come_from_the_run_the_report_shows(coldstart, tmp_path):
    """With -n the report shows the run nearest the median wall; its findings
    must be that run's, not the first run's.  The first run imports 'first'
    and is the longest (0.6 s more), the second imports 'second' (the median,
    0.3 s more), the third nothing; each module costs 60 ms."""
    for name in ("first", "second"):
        (tmp_path / (name + ".py")).write_text("import time\ntime.sleep(0.06)\n")
    (tmp_path / "app.py").write_text(RUN_BY_RUN)
    out = tmp_path / "n.json"
    r = coldstart("profile", "-n", "3", "--warmup", "0", "-o", out, "--python", DEBIAN_PYTHON, tmp_path / "app.py")
    assert r.returncode == 0, r.stderr
    prof = json.loads(out.read_text())
    heavy = [f["module"] for f in prof["findings"] if f["id"] == "heavy-import"]
    assert heavy == ["second"], heavy
    assert "'second'" in r.stdout.splitlines()[2], r.stdout.splitlines()[:3]
