"""Inputs named by a file or the command line are read within bounds.

A FIFO where a regular file is required is named as one instead of blocking
coldstart; a file too large to be what it claims is refused without being
read.  Each case ran forever (or read without limit) before.
"""
import json
import os
import subprocess

import pytest

from conftest import COLDSTART, DEBIAN_PYTHON, run_coldstart


@pytest.fixture
def app_profile(tmp_path):
    (tmp_path / "app.py").write_text("import mod\n")
    (tmp_path / "mod.py").write_text("import json\n")
    out = tmp_path / "app.json"
    r = run_coldstart("profile", "--python", DEBIAN_PYTHON, "--no-report", "-q", "-o", str(out), "app.py",
                      cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    return out


def test_why_source_that_became_a_fifo_is_named_not_read(app_profile, tmp_path):
    mod = tmp_path / "mod.py"
    mod.unlink()
    os.mkfifo(str(mod))
    r = run_coldstart("why", "json", str(app_profile), "--no-cache", "--json", timeout=60)
    assert r.returncode == 0, r.stderr
    bad = json.loads(r.stdout)["source"]["unreadable"]
    assert bad == [{"module": "mod", "error": "cannot read %s: not a regular file" % mod}]


def test_why_source_larger_than_the_bound_is_not_read(app_profile, tmp_path):
    mod = tmp_path / "mod.py"
    with open(str(mod), "r+b") as f:
        f.truncate(33 << 20)  # sparse: costs no disk
    r = run_coldstart("why", "json", str(app_profile), "--no-cache", "--json", timeout=60)
    assert r.returncode == 0, r.stderr
    bad = json.loads(r.stdout)["source"]["unreadable"]
    assert bad == [{"module": "mod", "error": "cannot read %s: larger than 32 MiB" % mod}]


@pytest.mark.parametrize("argv", [
    ["report", "IN"], ["check", "IN", "--budget", "total=1s"], ["export", "IN", "-o", "OUT.svg"],
    ["why", "json", "IN"], ["diff", "IN", "IN"], ["inspect", "--profile", "IN"],
], ids=["report", "check", "export", "why", "diff", "inspect"])
def test_profile_named_fifo_is_refused_not_waited_on(tmp_path, argv):
    fifo = str(tmp_path / "p.json")
    os.mkfifo(fifo)
    args = [a.replace("IN", fifo).replace("OUT", str(tmp_path / "out")) for a in argv]
    r = run_coldstart(*args, timeout=30)
    assert r.returncode == 1, r.stderr
    assert "cannot read '%s': a named pipe (FIFO), which blocks until something writes to it" % fifo in r.stderr


def test_profile_through_a_pipe_is_still_read(tmp_path):
    from conftest import FIXTURES
    prof = os.path.join(FIXTURES, "profile", "py3.12.json")
    # /dev/stdin is a link to a pipe here, as <(zcat p.json.gz) would be.
    r = subprocess.run(["sh", "-c", 'cat "$1" | "$0" report --no-report /dev/stdin -o "$2"', COLDSTART,
                        prof, str(tmp_path / "copy.json")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "copy.json").read_text())["format"] == "coldstart-profile"


def test_pyx_scanner_takes_a_lone_backslash_line():
    # Found by tests/fuzz/fuzz_py.py imports: a line continued into a blank
    # or comment line left nothing to split (IndexError: the whole .pyx was
    # then read as "native").
    import sys
    from conftest import ROOT
    sys.path.insert(0, os.path.join(ROOT, "python"))
    try:
        from coldstart import _imports
    finally:
        sys.path.pop(0)
    out = _imports.read_pyx(b"\\\n# comment\nimport numpy\n")
    assert [t[4] for t in out] == ["numpy"]
