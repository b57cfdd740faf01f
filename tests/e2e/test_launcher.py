"""A launcher's time is its own (issue 27, item 7).

A pyenv shim is a bash script that runs pyenv's scripts, which exec the real
interpreter in the same process: hundreds of milliseconds before Python
starts.  coldstart dates the interpreter's exec from the kernel's process
events (CLOCK_MONOTONIC, the wall's clock), shows the time before it as the
launcher's (text report, `launcher_us` in JSON, the timeline's first line),
and counts the target process's lifetime, its "% of its lifetime" and its
timeline from the interpreter's exec, not from coldstart's exec of the shim.
"""
import json
import os
import pathlib
import re
import subprocess
import tempfile

import pytest

from conftest import COLDSTART, DEBIAN_PYTHON

PYENV_SHIM = "/root/.pyenv/shims/python3"

# Prints the interpreter's own clock at its first line: its exec came before.
FIRST_LINE = "import time, sys; t = time.monotonic_ns(); import json; open(sys.argv[1], 'w').write(str(t))\n"


def needs_process_events(prof):
    if any("process events" in w["msg"] or "cannot listen" in w["msg"] for w in prof["warnings"]):
        pytest.skip("the kernel's process events need CAP_NET_ADMIN: %s" % prof["warnings"])


def check_run(prof, first_line_ns, at_least_us):
    run = prof["runs"][0]
    main = run["processes"][0]
    launcher = run.get("launcher_us")
    assert launcher is not None and launcher >= at_least_us, (launcher, run["wall_us"])
    # The run's exec: the wall ends wall_us after it; the interpreter starts launcher_us after it.
    assert main["start_ns"] <= first_line_ns, (main["start_ns"], first_line_ns)
    life_us = (main["end_ns"] - main["start_ns"]) // 1000
    assert 0 < life_us <= run["wall_us"] - launcher + 1000, (life_us, run["wall_us"], launcher)
    return run, main, life_us


@pytest.mark.skipif(not os.path.exists(PYENV_SHIM), reason="no pyenv shim at %s" % PYENV_SHIM)
def test_pyenv_shim_time_is_the_launchers(coldstart, tmp_path):
    (tmp_path / "app.py").write_text(FIRST_LINE)
    out, mark = tmp_path / "p.json", tmp_path / "first"
    r = coldstart("profile", "--timeline", "-o", out, "--python", PYENV_SHIM, tmp_path / "app.py", mark,
                  env={"COLUMNS": "200"}, timeout=120)
    assert r.returncode == 0, r.stderr
    prof = json.loads(out.read_text())
    needs_process_events(prof)
    run, main, life_us = check_run(prof, int(mark.read_text()), 1000)
    text = r.stdout
    m = re.search(r"^  launcher +pyenv shim: ([\d.]+ (?:us|ms|s)) before the interpreter started", text, re.M)
    assert m, text[:1500]
    # "% of its lifetime (X)": the interpreter's lifetime, not the wall's.
    m = re.search(r"of its lifetime \(([\d.]+) ms\)", text)
    assert m and abs(float(m.group(1)) * 1000 - life_us) <= 100, (m and m.group(0), life_us)
    # The timeline starts at the interpreter's exec and says what came before.
    m = re.search(r"^  launcher +[\d.]+ (?:us|ms|s) \(pyenv shim\) before the interpreter's exec", text, re.M)
    assert m, text
    m = re.search(r"^  exec to exit +([\d.]+) ms wall", text, re.M)
    assert m and float(m.group(1)) * 1000 <= run["wall_us"] - run["launcher_us"] + 1000, (m and m.group(0), run)


def test_a_shell_that_execs_python_is_a_launcher(coldstart, tmp_path):
    """`sh -c 'sleep 0.3; exec python3 ...'`: at least 300 ms of launcher, and
    the interpreter's start between that and its own first line."""
    (tmp_path / "app.py").write_text(FIRST_LINE)
    out, mark = tmp_path / "p.json", tmp_path / "first"
    r = coldstart("profile", "--no-report", "-o", out, "--", "/bin/sh", "-c",
                  'sleep 0.3; exec %s "$0" "$1"' % DEBIAN_PYTHON, tmp_path / "app.py", mark, timeout=120)
    assert r.returncode == 0, r.stderr
    prof = json.loads(out.read_text())
    needs_process_events(prof)
    check_run(prof, int(mark.read_text()), 300_000)


def test_no_launcher_no_launcher_time(coldstart, tmp_path):
    out = tmp_path / "p.json"
    r = coldstart("profile", "-o", out, "--python", DEBIAN_PYTHON, "-c", "import json")
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["runs"][0]["launcher_us"] == -1
    assert "  launcher " not in r.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: runs coldstart as the user nobody")
def test_without_process_events_the_launcher_is_said_to_be_in_the_lifetime(coldstart, tmp_path):
    """The kernel's process events need CAP_NET_ADMIN: as the real user nobody, a launcher
    script's time stays in the lifetime, and a warning says so and why."""
    # pytest's tmp_path lies under a directory only root may enter.
    with tempfile.TemporaryDirectory(prefix="coldstart-nobody-") as top:
        os.chmod(top, 0o777)
        check_as_nobody(pathlib.Path(top))


def check_as_nobody(d):
    launcher = d / "py"
    launcher.write_text('#!/bin/sh\nexec %s "$@"\n' % DEBIAN_PYTHON)
    launcher.chmod(0o755)
    out = d / "p.json"
    r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "env", "HOME=%s" % d,
                        COLDSTART, "profile", "--no-report", "-o", out, "--python", launcher, "-c", "import json"],
                       cwd=d, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    prof = json.loads(out.read_text())
    assert prof["python_launcher"] == "launcher script"
    assert prof["runs"][0]["launcher_us"] == -1
    assert any(w["msg"].startswith("the launcher script's time is counted in the interpreter's lifetime: "
                                   "cannot listen to process events") for w in prof["warnings"]), prof["warnings"]
