"""The checksums of a plan's code archive (python/coldstart/_plan_crc.h,
docs/plan.md "The code archive"): coldstart plan records each part's CRC-32
and CRC-32C; the applier checks the CRC-32C on the CPU's crc32 instruction
when the _plancode extension is loaded, zlib's CRC-32 otherwise.  A flipped
byte in any part (a module's code, the regex table, the string table) is
caught either way, on every interpreter the applier supports, and a plan
from before the CRC-32Cs applies as it did (CRC-32 only).

Real plans made by coldstart plan, real archives damaged on disk, applied
in real interpreters.
"""
import json
import os
import shutil
import subprocess
import tempfile
import textwrap
import zlib

import pytest

from conftest import (ROOT, archive_entries, clean_env, interpreter_params, plan_env,
                      plan_with_extension)

PY = "/usr/bin/python3"

TOOL = """
    import json, re, sys
    import helper
    pat = re.compile(r"(?P<k>[a-z]+)=(?P<v>\\d+)")
    ns = {}
    exec(compile("def f(x):\\n    return x * 7\\n", "<gen>", "exec"), ns)
    p = sys.modules.get("coldstart.plan")
    print(json.dumps({
        "applied": bool(p and p.installed()), "who": helper.who(),
        "re": pat.match("a=1").group("v"), "f": ns["f"](6),
        "sum": getattr(p._sum[0], "__name__", None) if p else None,
        "table": bool(p and p._plancode)}))
"""

HELPER = "def who():\n    return 'helper'\n"
ANSWER = {"applied": True, "who": "helper", "re": "1", "f": 42}


@pytest.fixture
def workdir():
    d = tempfile.mkdtemp(prefix="plancrc", dir="/tmp")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def write(path, text):
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))


def make_plan(workdir, py):
    write(os.path.join(workdir, "tool.py"), TOOL)
    write(os.path.join(workdir, "helper.py"), HELPER)
    plan = os.path.join(workdir, "p.json")
    data = plan_with_extension(workdir, py, "tool.py", plan)
    # The entries as lists, for the tests to read and damage.
    data["code"]["at"] = archive_entries(data["code"])
    return plan, data


def apply(workdir, py, plan, **extra):
    e = plan_env(COLDSTART_PLAN=plan, **extra)
    p = subprocess.run([py, "tool.py"], cwd=workdir, capture_output=True,
                       text=True, timeout=120, env=e)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Traceback" not in p.stderr, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    lines = [ln for ln in p.stderr.splitlines()
             if ln.startswith("coldstart plan")]
    return out, lines


def parts(data):
    """(what, entry) of each part of the archive the tool's plan has."""
    c = data["code"]
    names = [r[0] for r in data["index"]]
    out = [("helper", c["at"][names.index("helper")])]
    for k in ("regex", "strings"):
        assert c.get(k), "the plan has no %s table: %r" % (k, c)
        out.append((k, c[k]))
    return out


def damaged(workdir, data, entry, fix_crc32=None):
    """A copy of the plan and archive (q.json) with one byte of the part at
    entry flipped; with fix_crc32, the plan's CRC-32 of that part (at that
    place in the entry) is the damaged bytes', so only the CRC-32C can
    see the change."""
    src = os.path.join(workdir, data["code"]["path"])
    with open(src, "rb") as f:
        blob = bytearray(f.read())
    off, length = entry[:2]
    i = off + length // 2
    blob[i] ^= 0x20
    d = json.loads(json.dumps(data))
    d["code"]["path"] = "q.json.code"
    with open(os.path.join(workdir, "q.json.code"), "wb") as f:
        f.write(blob)
    if fix_crc32 is not None:
        for e in [d["code"]["regex"], d["code"]["strings"]] + \
                [a for a in d["code"]["at"] if a]:
            if e[:2] == entry[:2]:
                e[fix_crc32] = zlib.crc32(bytes(blob[off:off + length]))
    st = os.stat(os.path.join(workdir, "q.json.code"))
    d["code"]["size"], d["code"]["mtime_ns"] = st.st_size, st.st_mtime_ns
    q = os.path.join(workdir, "q.json")
    with open(q, "w") as f:
        json.dump(d, f)
    return q


CHECK_CRC32C = r"""
import json, random, sys
sys.path.insert(0, sys.argv[1])
from coldstart import plan
m = plan.load_plancode(sys.argv[2])
def ref(data):
    c = 0xFFFFFFFF
    for b in bytearray(data):
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    return c ^ 0xFFFFFFFF
r = random.Random(5)
bad = []
lanes = 3 * 4096
for n in list(range(0, 40)) + [lanes - 1, lanes, lanes + 1, lanes + 9,
                               2 * lanes + 3, 5 * lanes + 17, 100003]:
    for skip in (0, 3):
        d = bytes(bytearray(r.getrandbits(8) for _ in range(n + skip)))[skip:]
        want = ref(d) if n < 2000 or skip == 0 else m.crc32c_table(d)
        got = (m.crc32c(d), m.crc32c_table(d), m.crc32c(memoryview(d)))
        if got != (want,) * 3:
            bad.append((n, skip, got, want))
print(json.dumps({"hw": m.crc32c_hw(), "check": m.crc32c(b"123456789"),
                  "bad": bad[:3]}))
"""


# coldstart plan plans 3.8 and newer (3.7 is refused with its reason).
@pytest.mark.parametrize("py", interpreter_params(
    ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13"]))
def test_a_flipped_byte_in_any_part_is_caught_with_crc32c(workdir, py):
    plan, data = make_plan(workdir, py)
    assert data["code"].get("sums") == ["crc32", "crc32c"], data["code"]
    # The extension's CRC-32C is the CRC-32C, on the crc32 instruction and
    # on tables alike, about the three-stream lanes and unaligned.
    p = subprocess.run([py, "-c", CHECK_CRC32C, os.path.join(ROOT, "python"),
                        data["code"]["ext"]["path"]], capture_output=True,
                       text=True, timeout=120, env=clean_env(()))
    assert p.returncode == 0, p.stdout + p.stderr
    got = json.loads(p.stdout)
    assert got["check"] == 0xE3069283 and got["bad"] == [], got
    hw = got["hw"]
    out, lines = apply(workdir, py, plan)
    assert lines == [] and dict(out, sum=None, table=None) == dict(
        ANSWER, sum=None, table=None) and out["table"], (out, lines)
    # On this CPU the crc32 instruction, where there is none zlib's.
    assert out["sum"] == ("crc32c" if hw else "crc32"), out
    for what, entry in parts(data):
        # The plan's CRC-32 made to match the damaged bytes: the CRC-32C
        # alone catches the flipped byte (zlib's catches it otherwise).
        q = damaged(workdir, data, entry,
                    fix_crc32=(2 if what == "helper" else 3) if hw else None)
        out, lines = apply(workdir, py, q)
        assert dict(out, sum=None, table=None) == dict(
            ANSWER, sum=None, table=None), (what, out, lines)
        assert len(lines) == 1 and \
            "not the ones the plan recorded" in lines[0], (what, lines)
        if what == "strings":
            assert out["table"] is False, out
        # Without the CRC-32C (as without the extension): zlib's CRC-32,
        # which catches a flipped byte too.
        q = damaged(workdir, data, entry)
        out, lines = apply(workdir, py, q, COLDSTART_PLAN_CRC32C="0")
        assert out["sum"] == "crc32" and out["who"] == "helper", out
        assert len(lines) == 1 and \
            "not the ones the plan recorded" in lines[0], (what, lines)


def test_a_plan_from_before_the_crc32cs_applies_and_is_checked(workdir):
    """A plan written before code.sums (CRC-32s only) is read as it was
    written: applied, zlib's CRC-32 checked (a flipped byte caught); a plan
    naming checksums this coldstart does not know is refused whole, with one
    line, never read with the wrong ones."""
    plan, data = make_plan(workdir, PY)
    old = json.loads(json.dumps(data))
    c = old["code"]
    del c["sums"]
    c["at"] = [a[:6] if a else a for a in c["at"]]
    c["regex"], c["strings"] = c["regex"][:4], c["strings"][:4]
    with open(plan, "w") as f:
        json.dump(old, f)
    out, lines = apply(workdir, PY, plan)
    assert lines == [] and out["sum"] == "crc32" and out["table"], \
        (out, lines)
    q = damaged(workdir, old, parts(old)[0][1])
    out, lines = apply(workdir, PY, q)
    assert out["who"] == "helper" and len(lines) == 1 and \
        "helper" in lines[0] and "not the ones the plan recorded" in \
        lines[0], (out, lines)
    # Checksums of a later format: refused, not misread.
    new = json.loads(json.dumps(data))
    new["code"]["sums"] = ["crc32", "xxh3"]
    with open(plan, "w") as f:
        json.dump(new, f)
    out, lines = apply(workdir, PY, plan)
    assert out["applied"] is False and out["who"] == "helper", out
    assert len(lines) == 1 and "code.sums" in lines[0] and \
        "malformed" in lines[0], lines


def test_the_crc32c_costs_less_than_zlib_s_crc32(workdir):
    """The point of the CRC-32C: on a CPU with the crc32 instruction it
    checks the same bytes in fewer instructions than zlib's crc32 (counted
    by valgrind, which load does not move)."""
    plan, data = make_plan(workdir, PY)
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed (tests/install-deps.sh)")
    prog = textwrap.dedent(r"""
        import os, sys, zlib
        sys.path.insert(0, sys.argv[1])
        from coldstart import plan
        m = plan.load_plancode(sys.argv[2])
        if not m.crc32c_hw():
            sys.exit(3)
        data = os.urandom(8 << 20)
        f = m.crc32c if sys.argv[3] == "crc32c" else zlib.crc32
        for _ in range(4 if sys.argv[3] != "none" else 0):
            f(data)
    """)
    counts = {}
    for which in ("crc32c", "zlib", "none"):
        out = os.path.join(workdir, "cg." + which)
        p = subprocess.run(
            ["valgrind", "--tool=cachegrind", "--cache-sim=no",
             "--cachegrind-out-file=" + out, PY, "-c", prog,
             os.path.join(ROOT, "python"), data["code"]["ext"]["path"],
             which], capture_output=True, text=True, timeout=600,
            env=clean_env(()))
        if p.returncode == 3:
            pytest.skip("this CPU has no crc32 instruction (SSE 4.2)")
        assert p.returncode == 0, p.stderr[-2000:]
        with open(out) as f:
            counts[which] = int([ln for ln in f if ln.startswith(
                "summary:")][0].split()[1])
    crc32c = counts["crc32c"] - counts["none"]
    crc32 = counts["zlib"] - counts["none"]
    # 32 MiB each: zlib's about 2 instructions a byte, the crc32
    # instruction's path about 0.2.
    assert crc32c * 5 < crc32, counts
