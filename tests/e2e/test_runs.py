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
