"""Inputs named by a file or the command line are read within bounds.

A FIFO where a regular file is required is named as one instead of blocking
coldstart; a file too large to be what it claims is refused without being
read.  Each case ran forever (or read without limit) before.
"""
import json
import os
import subprocess

import pytest

from conftest import DEBIAN_PYTHON, run_coldstart


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
