"""`coldstart why` runs the interpreter a profile names only when it can be trusted.

A profile is a file: one from CI, a ticket or a colleague may have been
edited to name any program as its "python".  why runs the recorded
interpreter (to read import statements) only when it is a regular file owned
by root or the user and writable by nobody else, in directories likewise;
otherwise it answers from the recorded tree, says which interpreter it did
not run and how to allow it (--python), and exits 0 as for a missing
interpreter.  The planted programs belong to the real user nobody.
"""
import json
import os
import shutil
import stat
import tempfile

import pytest

from conftest import DEBIAN_PYTHON, run_coldstart

NOBODY = 65534


@pytest.fixture(scope="module")
def profile_json(tmp_path_factory):
    d = tmp_path_factory.mktemp("why-trust")
    out = d / "p.json"
    r = run_coldstart("profile", "--python", DEBIAN_PYTHON, "--no-report", "-q", "-o", str(out), "-c",
                      "import json")
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


@pytest.fixture
def shared():
    """A directory nobody owns, as a colleague's checkout or an unpacked ticket would be."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the planted interpreter must belong to another user (nobody)")
    d = tempfile.mkdtemp(prefix="cs-why-", dir="/var/tmp")
    os.chmod(d, 0o755)
    os.chown(d, NOBODY, NOBODY)
    try:
        yield d
    finally:
        shutil.rmtree(d)


def _plant(path, marker, owner=NOBODY, mode=0o755):
    with open(path, "w") as f:
        f.write("#!/bin/sh\necho ran > %s\nexec %s \"$@\"\n" % (marker, DEBIAN_PYTHON))
    os.chmod(path, mode)
    os.chown(path, owner, owner)


def _why(profile, tmp_path, python, *extra):
    p = dict(profile, python=python)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(p))
    return run_coldstart("why", "json", str(path), "--no-cache", *extra, cwd=str(tmp_path))


def test_interpreter_owned_by_another_user_is_not_run(profile_json, shared, tmp_path):
    evil = os.path.join(shared, "evilpy")
    marker = os.path.join(shared, "marker")
    _plant(evil, marker)
    r = _why(profile_json, tmp_path, evil)
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(marker), "the profile's program ran"
    assert "not running '%s', the interpreter the profile names: '%s' is owned by uid %d" % (
        evil, evil, NOBODY) in r.stderr
    assert "--python '%s' runs it if you trust it" % evil in r.stderr
    assert "Import statements not read" in r.stdout
    assert "json" in r.stdout


def test_relative_interpreter_in_a_foreign_directory_is_not_run(profile_json, shared, tmp_path):
    marker = os.path.join(shared, "marker")
    _plant(os.path.join(shared, "evilpy"), marker)
    p = dict(profile_json, python="./evilpy")
    path = os.path.join(shared, "edited.json")
    with open(path, "w") as f:
        json.dump(p, f)
    r = run_coldstart("why", "json", path, "--no-cache", "--json", cwd=shared)
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(marker)
    src = json.loads(r.stdout)["source"]
    assert src["read"] is False and "not running './evilpy'" in src["error"]


def test_root_owned_interpreter_in_a_directory_nobody_writes_to_is_not_run(profile_json, shared, tmp_path):
    evil = os.path.join(shared, "py")
    marker = os.path.join(str(tmp_path), "marker")
    _plant(evil, marker, owner=0)
    r = _why(profile_json, tmp_path, evil)
    assert r.returncode == 0
    assert not os.path.exists(marker)
    assert "'%s' is owned by uid %d" % (shared, NOBODY) in r.stderr


def test_group_writable_interpreter_is_not_run(profile_json, tmp_path):
    d = tmp_path / "bin"
    d.mkdir()
    evil = str(d / "py")
    marker = str(tmp_path / "marker")
    _plant(evil, marker, owner=os.geteuid(), mode=0o775)
    r = _why(profile_json, tmp_path, evil)
    assert not os.path.exists(marker)
    assert "'%s' is writable by its group" % evil in r.stderr


def test_interpreter_given_with_python_runs(profile_json, shared, tmp_path):
    evil = os.path.join(shared, "evilpy")
    marker = os.path.join(shared, "marker")
    _plant(evil, marker)
    r = _why(profile_json, tmp_path, "/nonexistent/python", "--python", evil)
    assert r.returncode == 0, r.stderr
    assert os.path.exists(marker), "--python is the user's own choice"
    assert "Statements of" in r.stdout


def test_trusted_recorded_interpreter_still_reads_the_source(profile_json, tmp_path):
    r = _why(profile_json, tmp_path, DEBIAN_PYTHON)
    assert r.returncode == 0, r.stderr
    assert "Statements of" in r.stdout and "not running" not in r.stderr
