"""The code archive's head part (docs/plan.md, "The head part"): `coldstart
plan` marshals the members the applier reads at every start (the index,
the from and all tables, ...) at the end of the archive, in C, and
applying the plan reads them from there with one marshal.loads.  Read so
they must be exactly what the plan file's JSON says, on every interpreter;
an edited plan file, a damaged part or an archive that cannot be opened
are read as JSON, and the program runs as without the part.  The plans are
real (`coldstart plan` of scripts whose modules give the head every kind
of value: packages, from and star imports, a module named outside ASCII, a
file dated before 1970), applied by real interpreters."""
import json
import os
import subprocess

import pytest

from conftest import ROOT, clean_env, interpreter_params, plan_with_extension

PYDIR = os.path.join(ROOT, "python")

# The applier from argv[1] as P, with `used` saying, for each reading of
# the plan's head part, whether the members came from it.
COUNTED = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
from coldstart import plan as P
used = []
orig = P._head_part
def counted(*a):
    r = orig(*a)
    used.append(r is not None)
    return r
P._head_part = counted
"""

# Reads the plan as install() does (fast: the head part when it may) and
# with the head part left out (the JSON parser); prints whether the head
# part was used and whether the two agree member by member.
READ = COUNTED + r"""
fast = P.read(sys.argv[2], checks=True)
del P._checks[:]
slow = P.read(sys.argv[2], checks=True, fast=False)
keys = ("format", "version", "python", "sys_path", "opcodes", "from", "all",
        "program", "index", "code")
print(json.dumps({"used": used,
                  "differ": [k for k in keys if fast.get(k) != slow.get(k)],
                  "keys": sorted(set(fast) ^ set(slow)),
                  "index": fast["index"]}))
"""

SCRIPT = """
import json, email.mime.text, xml.dom.minidom
from pkg import *
import pkg.sub
import caf\u00e9
import old
print(json.dumps([Thing.__name__, pkg.sub.VALUE, caf\u00e9.NAME, old.WHEN]))
"""


def make_program(d):
    os.makedirs(os.path.join(d, "pkg"))
    with open(os.path.join(d, "pkg", "__init__.py"), "w") as f:
        f.write("from .sub import Thing\n__all__ = ['Thing']\n")
    with open(os.path.join(d, "pkg", "sub.py"), "w") as f:
        f.write("class Thing:\n    pass\nVALUE = 7\n")
    with open(os.path.join(d, "caf\u00e9.py"), "w", encoding="utf-8") as f:
        f.write("NAME = 'caf\u00e9'\n")
    old = os.path.join(d, "old.py")
    with open(old, "w") as f:
        f.write("WHEN = 'before 1970'\n")
    # A negative mtime: the index's integer outside 32 bits with a sign.
    os.utime(old, ns=(-86400 * 10**9 - 5, -86400 * 10**9 - 5))
    with open(os.path.join(d, "main.py"), "w", encoding="utf-8") as f:
        f.write(SCRIPT)


def read(py, plan):
    p = subprocess.run([py, "-c", READ, PYDIR, plan], capture_output=True,
                       text=True, timeout=120, env=clean_env())
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def run(py, d, plan=None):
    env = clean_env()
    if plan:
        env["COLDSTART_PLAN"] = plan
        env["PYTHONPATH"] = PYDIR
    p = subprocess.run([py, "main.py"], cwd=d, capture_output=True,
                       text=True, timeout=120, env=env)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture
def planned(tmp_path, request):
    py = request.param
    if py is None:
        pytest.skip("no interpreter")
    d = str(tmp_path / "prog")
    make_program(d)
    out = str(tmp_path / "p.json")
    data = plan_with_extension(d, py, "main.py", out)
    return py, d, out, data


@pytest.mark.parametrize("planned", interpreter_params(["3.8", "3.13"]),
                         indirect=True)
def test_the_head_part_reads_as_the_json_does(planned):
    py, d, out, data = planned
    head = data["code"].get("head")
    assert head and len(head) == 5, data["code"]
    keys = list(data)
    # The applier reads up to the index: the code member first, the head's
    # members right after it, in the order the part holds them.
    assert keys[:3] == ["format", "version", "code"], keys
    assert keys.index("index") < keys.index("modules"), keys
    r = read(py, out)
    assert r["used"] == [True], r
    assert r["differ"] == [] and r["keys"] == [], r
    names = [row[0] for row in r["index"]]
    assert "caf\u00e9" in names and "old" in names and "pkg.sub" in names
    assert [row[4] for row in r["index"] if row[0] == "old"] == [-86400 * 10**9 - 5]
    # What the program prints is the same with the plan as without.
    want = run(py, d)
    assert want[0] == 0, want
    assert run(py, d, out) == want


@pytest.mark.parametrize("planned", interpreter_params([]), indirect=True)
def test_an_edited_plan_is_read_as_json(planned):
    py, d, out, data = planned
    text = open(out).read()
    # A module's action, edited by hand and keeping the file's length (so
    # that only the text's checksum can tell).
    row = next(r for r in data["index"] if r[5] in ("defer", "eager"))
    was = json.dumps(row, separators=(",", ":"))
    row[5] = "eager" if row[5] == "defer" else "defer"
    now = json.dumps(row, separators=(",", ":"))
    assert was in text
    with open(out, "w") as f:
        f.write(text.replace(was, now))
    r = read(py, out)
    assert r["used"] == [False], r
    assert r["differ"] == [], r
    assert [x for x in r["index"] if x[0] == row[0]] == [row]


@pytest.mark.parametrize("planned", interpreter_params([]), indirect=True)
def test_an_edited_code_at_is_the_plans(planned):
    # code.at is not in the members' text the head part is bound to: the
    # part's copy of the entries is used only while code.at is unchanged.
    py, d, out, data = planned
    at = data["code"]["at"]
    first = at.split(" ")[0]
    assert first != "-", at[:80]
    with open(out) as f:
        text = f.read()
    assert text.count(json.dumps(at)) == 1
    with open(out, "w") as f:
        f.write(text.replace(json.dumps(at), json.dumps("-" + at[len(first):])))
    r = read(py, out)
    assert r["used"] == [True], r
    assert r["differ"] == [], r


@pytest.mark.parametrize("planned", interpreter_params([]), indirect=True)
def test_a_damaged_head_part_is_read_as_json(planned):
    py, d, out, data = planned
    off, length = data["code"]["head"][:2]
    archive = os.path.join(os.path.dirname(out), data["code"]["path"])
    with open(archive, "r+b") as f:
        f.seek(off + length // 2)
        b = f.read(1)
        f.seek(off + length // 2)
        f.write(bytes([b[0] ^ 0x55]))
    r = read(py, out)
    assert r["used"] == [False], r
    assert r["differ"] == [], r
    # The code parts are whole: the plan applies as before, without a word.
    want = run(py, d)
    got = run(py, d, out)
    assert got[:2] == want[:2], got
    assert "coldstart" not in got[2], got[2]


@pytest.mark.parametrize("planned", interpreter_params([]), indirect=True)
def test_without_the_archive_the_plan_is_read_as_json(planned):
    py, d, out, data = planned
    os.unlink(os.path.join(os.path.dirname(out), data["code"]["path"]))
    r = read(py, out)
    assert r["used"] == [False], r
    assert r["differ"] == [], r


INSTALL = COUNTED + r"""
finder = P.install(sys.argv[2])
print(json.dumps({"installed": finder is not None, "used": used}))
"""


@pytest.mark.parametrize("planned", interpreter_params([]), indirect=True)
def test_with_the_archive_off_the_head_part_is_not_read(planned):
    # COLDSTART_PLAN_ARCHIVE=0 turns the archive off (docs/plan.md): the
    # plan is then read as JSON, its head part left alone too.
    py, d, out, data = planned
    for off, want in (("1", [True]), ("0", [])):
        env = clean_env()
        env["COLDSTART_PLAN_ARCHIVE"] = off
        p = subprocess.run([py, "-c", INSTALL, PYDIR, out], capture_output=True,
                           text=True, timeout=120, env=env)
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout) == {"installed": True, "used": want}, off


FDS = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
from coldstart import plan as P
opened = []
orig = P.open_trusted
def counted(path, what):
    opened.append(what)
    return orig(path, what)
P.open_trusted = counted
def fds():
    return sorted(os.listdir("/proc/self/fd"))
before = fds()
program = None if sys.argv[3] == "same" else ["/somewhere/else.py"]
finder = P.install(sys.argv[2], program=program)
left = sorted(set(fds()) - set(before))
print(json.dumps({"installed": finder is not None, "opened": opened,
                  "left": len(left), "code_fd": len(P._code_fd)}))
"""


@pytest.mark.parametrize("planned", interpreter_params([]), indirect=True)
def test_the_archive_the_head_part_came_from_is_the_one_read(planned):
    # The archive is opened and walked once: the descriptor the head part
    # was read through is the one the modules' code is read through; a
    # plan refused after its head part was read (made for another
    # program) leaves no descriptor behind.
    py, d, out, data = planned
    got = {}
    for which in ("same", "other"):
        p = subprocess.run([py, "-c", FDS, PYDIR, out, which],
                           capture_output=True, text=True, timeout=120,
                           env=clean_env())
        assert p.returncode == 0, p.stderr
        got[which] = json.loads(p.stdout)
    same, other = got["same"], got["other"]
    assert same["installed"] and same["code_fd"] == 1, same
    assert same["opened"].count("code archive") == 1, same
    # What stays open: the archive, and nothing else the reading opened.
    assert same["left"] == 1, same
    assert not other["installed"], other
    assert other["opened"].count("code archive") == 1, other
    assert other["left"] == 0 and other["code_fd"] == 0, other
