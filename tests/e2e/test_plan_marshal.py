"""The check of marshal data before the plan's string table and its code are
read (python/coldstart/_plan_marshal.h, docs/plan.md "What a plan may
change").  The archive's CRC comes first; this covers bytes damaged in a
way the CRC did not see, where CPython's own reader would end the process.

Each damaged input is first shown to do harm to a bare marshal.loads (a
segfault or a run that does not end), so the test cannot pass by
checking nothing; then _plancode, built for that interpreter, refuses it
and every module of the interpreter's standard library passes."""
import os
import subprocess
import textwrap

import pytest

from conftest import DEBIAN_PYTHON, ROOT, interpreter_params

PLANCODE_C = os.path.join(ROOT, "python", "coldstart", "_plancode.c")
# _plancode is built for 3.8 and later (cmd_plan's set_plancode).
WANTED = ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13"]

CRAFT = r'''
import struct
def L(n):
    return struct.pack("<i", n)
REF = 0x80
# A dict whose key is a tuple holding itself: hashing it recurses forever.
cyclic = b"{" + bytes([ord("(") | REF]) + L(1) + b"r" + L(0) + b"N0"
# t[i] = (t[i-1], t[i-1]) by reference, 40 levels: 100 bytes that hashing
# walks 2**40 times.
def dag(k):
    out = bytes([ord(")") | REF, 1]) + b"z\x01a"
    for i in range(1, k + 1):
        out += bytes([ord(")") | REF, 2]) + b"r" + L(i - 1) + b"r" + L(i - 1)
    return out
shared = b"{" + dag(40) + b"N0"
# A tuple that declares 2**30 items and holds ten.
huge = b"(" + L(1 << 30) + b"N" * 10
'''


def _build(python, out):
    info = subprocess.run([python, "-S", "-E", "-c",
                           "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'));"
                           "print(sysconfig.get_paths()['include'])"],
                          capture_output=True, text=True, check=True).stdout.split("\n")
    so = os.path.join(out, "_plancode" + info[0])
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-std=c11", "-I", info[1], "-o", so, PLANCODE_C],
                   check=True)
    return so


def _run(python, workdir, body, timeout=60):
    with open(os.path.join(workdir, "craft.py"), "w") as f:
        f.write(CRAFT)
    with open(os.path.join(workdir, "t.py"), "w") as f:
        f.write(textwrap.dedent(body))
    try:
        return subprocess.run([python, "-S", "t.py"], cwd=workdir, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


@pytest.fixture(params=interpreter_params(WANTED))
def python(request):
    return request.param


def test_cycle_ends_a_bare_reader(python, workdir):
    # The harm: a segfault (the stack overflows hashing the key).
    p = _run(python, workdir, """
        import marshal, craft
        marshal.loads(craft.cyclic)
        print("read")
        """)
    assert p is not None and p.returncode < 0, p and (p.returncode, p.stdout, p.stderr)


def test_shared_references_do_not_end(workdir):
    # The harm: 2**40 visits; five seconds are enough to see it go on.
    p = _run(DEBIAN_PYTHON, workdir, """
        import marshal, craft
        marshal.loads(craft.shared)
        print("read")
        """, timeout=5)
    assert p is None, (p.returncode, p.stdout, p.stderr)


def test_check_refuses_damage_and_passes_the_stdlib(python, workdir):
    _build(python, workdir)
    p = _run(python, workdir, """
        import importlib.util, marshal, os, sys, sysconfig, craft
        so = [f for f in os.listdir(".") if f.startswith("_plancode")][0]
        spec = importlib.util.spec_from_file_location("_plancode", so)
        pc = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(pc)
        for name in ("cyclic", "shared", "huge"):
            print(name, pc.check_marshal(getattr(craft, name)))
        print("deep", pc.check_marshal(b")\\x01" * 600 + b"N"))
        print("truncated", pc.check_marshal(marshal.dumps(compile("x = 1", "<s>", "exec"))[:-3]))
        # A string table made as plan_code.py makes it passes, and
        # apply() refuses the damaged one with an error, not a crash.
        ok = marshal.dumps({"x = 1": (("<string>", "exec", 0, -1,
                                        marshal.dumps(compile("x = 1", "<string>", "exec"))),)})
        print("table", pc.check_marshal(ok))
        try:
            pc.apply(craft.cyclic)
        except ValueError as e:
            print("apply", e)
        # A table whose checksum matched: its structure is walked all the
        # same (only its rows' code is not).
        try:
            pc.apply_checked(craft.cyclic)
        except ValueError as e:
            print("apply_checked", e)
        # The modules at the top of the standard library and its packages
        # (email, json, asyncio, ...: every kind of constant and nesting),
        # not their tests.
        lib = sysconfig.get_paths()["stdlib"]
        n = bad = 0
        for root, dirs, files in os.walk(lib):
            dirs[:] = [d for d in dirs if d not in ("site-packages", "dist-packages", "test", "tests",
                                                    "idle_test", "lib2to3", "idlelib")]
            for f in sorted(files):
                if not f.endswith(".py"):
                    continue
                try:
                    with open(os.path.join(root, f), "rb") as fh:
                        code = compile(fh.read(), f, "exec")
                except (SyntaxError, ValueError):
                    continue
                n += 1
                if not pc.check_marshal(marshal.dumps(code)):
                    bad += 1
                    print("refused", os.path.join(root, f))
        print("stdlib", n, bad)
        """, timeout=300)
    assert p is not None and p.returncode == 0, p and (p.stdout + p.stderr)
    out = dict(line.split(" ", 1) for line in p.stdout.splitlines())
    for name in ("cyclic", "shared", "huge", "deep", "truncated"):
        assert out[name] == "False", (name, p.stdout)
    assert out["table"] == "True"
    assert out["apply"] == "the string table is malformed"
    assert out["apply_checked"] == "the string table is malformed"
    n, bad = map(int, out["stdlib"].split())
    assert n > 500 and bad == 0, p.stdout
