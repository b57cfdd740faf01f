"""A plan's index is checked a column at a time (plan._good_index, or the
same check in C, the plan extension's check_index, when install() could
load it first) and, when anything there is unusual, row by row (_bad_row),
which says what is wrong: the column checks must accept exactly the plans
the row check accepts.  The plans are real (COLDSTART_PLAN_RECORD of a
script importing a package, so rows have search lists), applied by a real
interpreter; the extension is the one `coldstart plan` builds for it."""
import json
import os
import shutil
import subprocess
import tempfile
import textwrap

import pytest

from conftest import (ROOT, clean_env, interpreter_params, plan_env,
                      plan_with_extension)

PYDIR = os.path.join(ROOT, "python")
PY = "/usr/bin/python3"

USE = """
import json, sys, textwrap, email.mime.text, xml.dom.minidom
p = sys.modules.get("coldstart.plan")
print(json.dumps({"applied": bool(p and p.installed())}))
"""

# Every field of a row set, one at a time, to values of each kind a damaged
# plan could hold; the column check and the row check must agree on each.
MUTATE = r"""
import json, random, sys
sys.path.insert(0, sys.argv[2])
import coldstart.plan as p
plan = p.read(sys.argv[1])
rows = plan["index"]
c = p.load_plancode(sys.argv[5]) if len(sys.argv) > 5 else None
assert p._good_index(rows) and all(p._bad_row(r) is None for r in rows)
assert c is None or c.check_index(rows, p._KINDS, p._ACTIONS)
assert sum(r[8] is not None for r in rows), "no package rows"
BAD = [None, "", ".", "..", "a..b", ".a", "a.", "a/b", "a\0b", "\0", "/",
       "/a", "/a\0", "rel", 0, -1, -2, 1, True, False, 1.5, 2 ** 70, [],
       ["/x"], ["x"], ["/x", 3], ["a", "b.c"], ["a"], [""], [None], {},
       "source", "extension", "load", "defer", "zzz", "\0a", "a\0", "a.b",
       ["/x", "/y"], ["a", "b"]]
rnd = random.Random(int(sys.argv[3]))
accepted_bad = rejected_good = 0
for _ in range(int(sys.argv[4])):
    sample = [list(r) for r in rnd.sample(rows, rnd.choice([1, 3, 20]))]
    for _ in range(rnd.choice([1, 1, 2])):
        i = rnd.randrange(len(sample))
        f = rnd.randrange(len(p.INDEX_FIELDS) + 2)
        if f == len(p.INDEX_FIELDS):
            sample[i] = sample[i][:-1]
        elif f > len(p.INDEX_FIELDS):
            sample[i] = tuple(sample[i])
        elif type(sample[i]) is list and f < len(sample[i]):
            sample[i][f] = rnd.choice(BAD)
    good = all(type(r) is list and p._bad_row(r) is None for r in sample)
    fast = p._good_index(sample)
    if c is not None:
        assert c.check_index(sample, p._KINDS, p._ACTIONS) == fast, sample
    accepted_bad += fast and not good
    rejected_good += good and not fast
    try:
        p.validate(dict(plan, index=sample, code=None))
        valid = True
    except p.PlanError:
        valid = False
    assert valid == good, sample
print(json.dumps({"accepted_bad": accepted_bad,
                  "rejected_good": rejected_good}))
"""


@pytest.fixture
def workdir():
    d = tempfile.mkdtemp(prefix="planvalid", dir="/tmp")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _record(workdir, use=USE):
    with open(os.path.join(workdir, "use.py"), "w") as f:
        f.write(textwrap.dedent(use))
    plan = os.path.join(workdir, "plan.json")
    p = subprocess.run([PY, "use.py"], cwd=workdir, capture_output=True,
                       text=True, timeout=120,
                       env=plan_env(COLDSTART_PLAN_RECORD=plan))
    assert p.returncode == 0, p.stdout + p.stderr
    return plan


def test_column_check_accepts_exactly_what_the_row_check_accepts(workdir):
    plan = _record(workdir)
    p = subprocess.run([PY, "-c", MUTATE, plan, PYDIR, "31", "6000",
                        _plancode(workdir, PY)],
                       capture_output=True, text=True, timeout=300,
                       env=clean_env(()))
    assert p.returncode == 0, p.stdout + p.stderr
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got == {"accepted_bad": 0, "rejected_good": 0}, got


@pytest.mark.parametrize("field,value", [(1, ["source"]), (5, {"defer": 1}),
                                         (0, ["json"]), (3, True)])
def test_unhashable_or_mistyped_field_is_a_malformed_plan(workdir, field,
                                                          value):
    """A row whose kind or action is a list or an object is malformed, said
    so in the one warning (it was a TypeError from a set lookup before);
    the script runs without the plan."""
    plan = _record(workdir)
    with open(plan) as f:
        data = json.load(f)
    names = [r[0] for r in data["index"]]
    data["index"][names.index("textwrap")][field] = value
    with open(plan, "w") as f:
        json.dump(data, f)
    p = subprocess.run([PY, "use.py"], cwd=workdir, capture_output=True,
                       text=True, timeout=60,
                       env=plan_env(COLDSTART_PLAN=plan))
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads(p.stdout.strip().splitlines()[-1]) == {"applied": False}
    lines = [ln for ln in p.stderr.splitlines()
             if ln.startswith("coldstart plan")]
    assert len(lines) == 1 and "is malformed: a malformed index row" in \
        lines[0] and ("textwrap" in lines[0] or field == 0), p.stderr


# The archive's entries (code.at), the all table and the from table are
# checked a column at a time too (_good_spans, _good_all, _good_from),
# falling back to the entry-by-entry checks (_bad_span, _bad_all,
# _bad_lazy) to say what is wrong: the two must agree on every input.  So
# must the two readers of code.at's compact form (parse_at, _parse_at_py).
AGREE = r"""
import json, random, sys
sys.path.insert(0, sys.argv[1])
import coldstart.plan as p
import coldstart.plan_code as pc
rnd = random.Random(int(sys.argv[2]))
c = p.load_plancode(sys.argv[4]) if len(sys.argv) > 4 else None
# code.at's compact form, damaged: what the text may hold, and more.
ALPH = "0123456789abcdef" + " ,-" + "AFgx\t" + "\u00e9"
BAD = [None, -1, 0, 1, True, 1.5, 2 ** 70, "", "*", "a", "a.b", ".a", "a..b",
       "a/b", "a\0b", [], ["x"], {}, (1, 2)]
SIZE = 1 << 20
spans = 0
for _ in range(int(sys.argv[3])):
    n = rnd.choice([2, 7])
    at = []
    for _ in range(rnd.choice([1, 3, 20])):
        if rnd.random() < 0.2:
            at.append(None)
            continue
        off = rnd.randrange(SIZE)
        at.append([off, rnd.randrange(1, SIZE - off + 1)] +
                  [rnd.randrange(1 << 32) for _ in range(n - 2)])
    # The compact form of the entries (plan_code.encode_at) reads back as
    # they were; damaged, the extension's parse_at reads what Python's
    # reads (the same lists, or None for the same texts).
    text = pc.encode_at(at)
    assert p._parse_at_py(text) == at, text
    t = list(text)
    for _ in range(rnd.choice([0, 1, 1, 2, 3])):
        j = rnd.randrange(len(t) + 1)
        m = rnd.randrange(3)
        if m == 0 or not t:
            t.insert(j, rnd.choice(ALPH))
        elif m == 1:
            del t[min(j, len(t) - 1)]
        else:
            t[min(j, len(t) - 1)] = rnd.choice(ALPH)
    t = "".join(t)
    assert c is None or c.parse_at(t) == p._parse_at_py(t), t
    if rnd.random() < 0.1:
        t = rnd.choice(["", "-", "- -", " ", "-,1", "1,", ",1", "1 ", " 1",
                        "f" * 16, "f" * 17, "0" * 17, "1,,2", "1 - 2"])
        assert c is None or c.parse_at(t) == p._parse_at_py(t), t
    for _ in range(rnd.choice([0, 1, 1, 2])):
        i = rnd.randrange(len(at))
        v = at[i]
        k = rnd.randrange(4)
        if type(v) is not list or k == 0:
            at[i] = rnd.choice(BAD + [[1, 2, 3, 4, 5, 6, 7], (0, 1)])
        elif k == 1 and v:
            at[i] = v[:rnd.randrange(len(v))]
        elif k == 2 and v:
            v[rnd.randrange(len(v))] = rnd.choice(BAD)
        elif len(v) > 1 and type(v[0]) is int:
            v[1] = SIZE - v[0] + rnd.choice([0, 1])
    slow = all(v is None or not (p._bad_span(v, SIZE, n) or v[1] == 0)
               for v in at)
    assert p._good_spans(at, SIZE, n) == slow, (at, n)
    assert c is None or c.check_spans(at, SIZE, n) == slow, (at, n)
    spans += 1
    alls = {}
    for _ in range(rnd.choice([1, 2, 8])):
        names = [rnd.choice(["f", "g", "_x"]) for _ in range(rnd.randrange(4))]
        alls[rnd.choice(["a", "pkg.mod", "x_y", "b"])] = \
            {"tuple": names} if rnd.random() < 0.3 else names
    for _ in range(rnd.choice([0, 1, 1, 2])):
        k = rnd.choice(list(alls))
        v = alls[k]
        m = rnd.randrange(3)
        if m == 0:
            alls[k] = rnd.choice(BAD + [{"tuple": 3}, {"x": []}])
        elif m == 1:
            alls[rnd.choice(["", ".a", "a..b", "a/b", "a\0"])] = v
        elif type(v) is list and v:
            v[rnd.randrange(len(v))] = rnd.choice(BAD)
    assert p._good_all(alls) == (p._bad_all(alls) is None), alls
    assert c is None or c.check_all(alls) == p._good_all(alls), alls
    table = {}
    for _ in range(rnd.choice([1, 2, 8])):
        rows = []
        for _ in range(rnd.randrange(4)):
            r = [rnd.choice(["a", "pkg.mod", "_x"]), rnd.choice(["f g", "*"])]
            if r[1] == "*" or rnd.random() < 0.2:
                r += ["f g", "h"][:rnd.choice([1, 2])]
            rows.append(r)
        table[rnd.choice(["a", "pkg.mod", "x_y", "b"])] = rows
    for _ in range(rnd.choice([0, 1, 1, 2])):
        k = rnd.choice(list(table))
        rows = table[k]
        m = rnd.randrange(4)
        if m == 0:
            table[k] = rnd.choice(BAD)
        elif m == 1:
            table[rnd.choice(["", ".a", "a..b", "a/b", "a\0"])] = rows
        elif type(rows) is list and rows:
            r = rows[rnd.randrange(len(rows))]
            if type(r) is not list or not r:
                continue
            if m == 2:
                r[rnd.randrange(len(r))] = rnd.choice(BAD)
            else:
                r[:] = r[:rnd.randrange(len(r))] if rnd.random() < 0.5 \
                    else r + ["x", "y", "z"][:rnd.randrange(1, 3)]
    assert p._good_from(table) == (p._bad_lazy(table) is None), table
    assert c is None or c.check_from(table) == p._good_from(table), table
print(json.dumps({"spans": spans}))
"""


def _plancode(workdir, py):
    """The _plancode extension `coldstart plan` builds for py (it checks
    the plan's tables in C when install() loads it first)."""
    with open(os.path.join(workdir, "t.py"), "w") as f:
        f.write("import json\n")
    data = plan_with_extension(workdir, py, "t.py",
                               os.path.join(workdir, "ext.json"))
    return data["code"]["ext"]["path"]


@pytest.mark.parametrize("py", interpreter_params(["3.8", "3.13"]))
def test_column_checks_of_archive_entries_all_and_from_agree(workdir, py):
    # The Python checks against the row checks, and the extension's C
    # checks (built for py: the oldest and newest C API it is built for)
    # against the Python ones.
    ext = _plancode(workdir, py)
    p = subprocess.run([py, "-c", AGREE, PYDIR, "7", "20000", ext],
                       capture_output=True, text=True, timeout=300,
                       env=clean_env(()))
    assert p.returncode == 0, p.stdout + p.stderr
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got == {"spans": 20000}, got


# check()'s loop over the planned files (stale files, and files whose ctime
# or inode changed) in C, the extension's stale(), against the loop in
# Python, on a real plan whose rows and archive entries are damaged at
# random, and whose files are touched, copied over and removed.
STALE = r"""
import json, os, random, shutil, sys
sys.path.insert(0, sys.argv[1])
import coldstart.plan as p
c = p.load_plancode(sys.argv[3])
plan = p.read(sys.argv[2])
rnd = random.Random(5)
d = os.path.dirname(os.path.abspath(sys.argv[2]))
rows = plan["index"]
n = len(rows)
at0 = [[0, 1, 0, 0, 0, 0, 0] for _ in rows]
for i, r in enumerate(rows):
    st = os.stat(r[2])
    at0[i][3], at0[i][4] = st.st_ctime_ns, st.st_ino
mine = [i for i, r in enumerate(rows) if r[2].startswith(d + "/")]
assert mine, "no planned file in the work directory"
counts = {"stale": 0, "suspect": 0, "fits": 0}
for k in range(400):
    index = [list(r) for r in rows]
    at = [list(a) for a in at0] if rnd.random() < 0.8 else None
    for _ in range(rnd.choice([0, 1, 2])):
        i = rnd.randrange(n)
        m = rnd.randrange(6)
        if m == 0:
            index[i][3] += rnd.choice([-1, 1, 2 ** 70])
        elif m == 1:
            index[i][4] += rnd.choice([-1, 1, 2 ** 70])
        elif m == 2:
            index[i][2] = rnd.choice(["/nonexistent/x.py", index[i][2] + "\0"])
        elif at is not None and m == 3:
            at[i][3] += 1
        elif at is not None and m == 4:
            at[i][4] = rnd.choice([at[i][4] + 1, 2 ** 70])
        elif at is not None:
            at[i] = rnd.choice([None, at[i][:2]])
    plan2 = dict(plan, index=index, code=dict(plan.get("code") or {}, at=at)
                 if at is not None else None)
    p._checks[:] = []
    slow = (p.check(plan2), sorted(plan2["_suspect"]))
    p._checks[:] = [c]
    fast = (p.check(plan2), sorted(plan2["_suspect"]))
    assert slow == fast, (slow, fast)
    counts["stale" if slow[0] else "suspect" if slow[1] else "fits"] += 1
    if k % 100 == 99:
        # A file copied over itself keeping size and mtime (cp -p): a new
        # inode and ctime, the same size and mtime.
        f = rows[rnd.choice(mine)][2]
        shutil.copy2(f, f + ".tmp")
        os.replace(f + ".tmp", f)
print(json.dumps(counts))
"""


def test_stale_files_are_found_alike_in_c_and_python(workdir):
    # A module of the work directory's own, planned too.
    with open(os.path.join(workdir, "mod.py"), "w") as f:
        f.write("X = 1\n")
    plan = _record(workdir, USE + "import mod\n")
    p = subprocess.run([PY, "-c", STALE, PYDIR, plan,
                        _plancode(workdir, PY)],
                       capture_output=True, text=True, timeout=300,
                       cwd=workdir, env=clean_env(()))
    assert p.returncode == 0, p.stdout + p.stderr
    got = json.loads(p.stdout.strip().splitlines()[-1])
    # Each outcome happened, so each was compared.
    assert min(got.values()) > 20, got
