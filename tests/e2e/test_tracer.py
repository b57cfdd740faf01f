"""End-to-end tests of the in-process tracer on every interpreter found.

The Python side is run directly (PYTHONPATH=<bootstrap>, COLDSTART_TRACE_DIR)
with both the C extension (built here for each interpreter with its own
headers) and the pure-Python fallback; the C side through the coldstart
binary (`coldstart profile -o profile.json`).
"""
import glob
import json
import os
import re
import shutil
import signal
import statistics
import subprocess

import pytest

from conftest import OLD_PYTHONS, PYTHONS, ROOT, SAMPLES, python_version

BOOT = os.path.join(ROOT, "python", "coldstart", "_boot")
TRACER_C = os.path.join(ROOT, "python", "coldstart", "_tracer.c")
SIDEFX = os.path.join(SAMPLES, "side-effects", "app.py")

FAILED, STARTUP, TRACE_ONLY, OPEN, COMPILED, NATIVE, GC = 2, 4, 8, 32, 64, 128, 512

_built = {}


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTHON") and not k.startswith("COLDSTART")}
    env.update(extra)
    return env


def build_tracer(python, where):
    """Compiles the extension for python (cached per interpreter for the session)."""
    if python in _built:
        return _built[python]
    info = subprocess.run([python, "-S", "-E", "-c",
                           "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'));"
                           "print(sysconfig.get_paths()['include'])"],
                          capture_output=True, text=True, check=True).stdout.split("\n")
    out = os.path.join(where, "tracer-%d" % len(_built))
    os.makedirs(out)
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-std=c11", "-I", info[1], "-o",
                    os.path.join(out, "_tracer" + info[0]), TRACER_C], check=True)
    _built[python] = out
    return out


@pytest.fixture(scope="session")
def tracer_build_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tracers"))


@pytest.fixture(params=["c", "py"])
def impl(request):
    return request.param


def traced(python, impl, args, tdir, build_dir, extra_path=None, env=None, cwd=None, importtime=False,
           timeout=120):
    """Runs python with the bootstrap; returns the CompletedProcess."""
    e = clean_env(COLDSTART_TRACE_DIR=str(tdir))
    e["PYTHONPATH"] = BOOT + (os.pathsep + extra_path if extra_path else "")
    if impl == "py":
        e["COLDSTART_TRACER"] = "py"
    else:
        e["COLDSTART_TRACER_PATH"] = build_tracer(python, build_dir)
    if env:
        e.update(env)
    argv = [python] + (["-X", "importtime"] if importtime else []) + list(args)
    return subprocess.run(argv, capture_output=True, text=True, env=e, cwd=cwd, timeout=timeout)


def unescape(s):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            if n == "x":
                out.append(chr(int(s[i + 2:i + 4], 16)))
                i += 4
                continue
            out.append({"t": "\t", "n": "\n", "r": "\r"}.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


class Trace:
    """A trace file read the way docs/trace-format.md says."""

    def __init__(self, path):
        raw = open(path, "rb").read()
        self.raw = raw
        text = raw.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
        lines = text.split("\n")[:-1]  # a last line without newline is ignored
        assert lines[0] == "#coldstart-trace 2", path
        self.recs = [[unescape(f) for f in line.split("\t")] for line in lines[1:]]
        h = self.recs[0]
        assert h[0] == "H"
        self.pid, self.ppid, self.impl, self.version, self.audit = \
            int(h[2]), int(h[3]), h[5], h[6], h[7] == "audit"
        self.origin, self.startup_cpu, self.fork_depth = h[8], int(h[9]), int(h[10])
        self.spawner = int(h[11])
        self.modules = [m for r in self.recs if r[0] == "N" and r[3] == "modules" for m in r[4].split("\n")]
        self.argv = next((r[2:] for r in self.recs if r[0] == "V"), [])
        self.clean_exit = any(r[0] == "Q" for r in self.recs)
        self.nodes, self.events = [], []
        stacks = {}
        for r in self.recs:
            if r[0] in "SEF" and len(r[0]) == 1:
                # S/E/F: t tid cpu rss name [exc]
                t, tid, cpu, name = int(r[1]), r[2], int(r[3]), r[5]
                st = stacks.setdefault(tid, [])
                if r[0] == "S":
                    node = {"name": name, "start": t, "end": None, "parent": st[-1] if st else None,
                            "failed": None, "children": [], "cpu_start": cpu, "cpu": None}
                    if st:
                        st[-1]["children"].append(node)
                    self.nodes.append(node)
                    st.append(node)
                elif st and st[-1]["name"] == name:
                    node = st.pop()
                    node["end"] = t
                    node["cpu"] = cpu - node["cpu_start"]
                    node["failed"] = r[6] if r[0] == "F" else None
            elif r[0] == "A":
                st = stacks.get(r[2], [])
                self.events.append({"t": int(r[1]), "name": r[3], "detail": r[4],
                                    "module": st[-1]["name"] if st else None})

    def node(self, name):
        for n in self.nodes:
            if n["name"] == name:
                return n
        raise AssertionError("no import of %r in the trace of pid %d" % (name, self.pid))

    def events_of(self, name):
        return [e for e in self.events if e["name"] == name]


def traces(tdir):
    return [Trace(p) for p in sorted(glob.glob(os.path.join(str(tdir), "*.trace")))]


def one_trace(tdir):
    found = traces(tdir)
    assert len(found) == 1, [t.argv for t in found]
    return found[0]


def needs_audit(python):
    if python_version(python) < (3, 8):
        pytest.skip("Python 3.7 has no audit hooks (PEP 578): the tracer records imports only")


# --- the Python side, run directly -------------------------------------------------------------

PROBE = r"""
import json, sys
import __main__
print("PROBE " + json.dumps({
    "path": sys.path, "argv": sys.argv,
    "main": getattr(__main__, "__file__", None),
    "main_spec": getattr(getattr(__main__, "__spec__", None), "name", None),
    "sitecustomize": getattr(sys.modules.get("sitecustomize"), "__file__", None),
    "user_marker": getattr(__import__("builtins"), "USER_SITECUSTOMIZE", None),
    "tracer_modules": sorted(m for m in sys.modules if m.startswith("coldstart")),
}))
"""


def probe_output(proc):
    assert proc.returncode == 0, proc.stderr
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("PROBE ")]
    assert line, proc.stdout
    return json.loads(line[0][6:])


@pytest.mark.parametrize("mode", ["script", "module", "code"])
@pytest.mark.parametrize("user_site", [True, False], ids=["user-sitecustomize", "none"])
def test_bootstrap_is_transparent(python, impl, mode, user_site, tmp_path, tracer_build_dir):
    """sys.path, sys.argv, __main__ and sitecustomize are what they are without coldstart."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "probe.py").write_text(PROBE)
    user = tmp_path / "user"
    user.mkdir()
    (user / "sitecustomize.py").write_text("import builtins\nbuiltins.USER_SITECUSTOMIZE = __file__\n")
    if mode == "script":
        args = [str(app / "probe.py"), "a1", "--flag"]
    elif mode == "module":
        args = ["-m", "probe", "a1", "--flag"]
    else:
        args = ["-c", PROBE, "a1", "--flag"]
    extra = str(user) if user_site else None
    base_env = clean_env(**({"PYTHONPATH": extra} if extra else {}))
    plain = subprocess.run([python] + args, capture_output=True, text=True, env=base_env, cwd=str(app))
    tdir = tmp_path / "t"
    tdir.mkdir()
    got = traced(python, impl, args, tdir, tracer_build_dir, extra_path=extra, cwd=str(app))
    want, have = probe_output(plain), probe_output(got)
    assert have["path"] == want["path"]
    assert have["argv"] == want["argv"]
    assert have["main"] == want["main"] and have["main_spec"] == want["main_spec"]
    assert have["tracer_modules"] == []
    assert have["user_marker"] == want["user_marker"]
    if user_site or want["sitecustomize"]:
        # The user's (or the distribution's) sitecustomize ran and is the module.
        assert have["sitecustomize"] == want["sitecustomize"]
    assert got.stderr == plain.stderr
    tr = one_trace(tdir)
    assert tr.impl == impl
    assert tr.pid > 0 and tr.argv[0] == python


@pytest.mark.parametrize("old", OLD_PYTHONS or [None])
def test_bootstrap_hands_over_on_old_pythons(old, tmp_path):
    """2.7 and 3.6 are not traced, but a bootstrap they inherit must not change them."""
    if old is None:
        pytest.skip("no Python 2.7 or 3.6 found")
    user = tmp_path / "user"
    user.mkdir()
    (user / "sitecustomize.py").write_text("import sys\nsys.USER_SITECUSTOMIZE = 1\n")
    code = "import sys, sitecustomize; print(repr((sys.path, sys.argv, sitecustomize.__file__, sys.USER_SITECUSTOMIZE)))"
    plain = subprocess.run([old, "-c", code, "x"], capture_output=True, text=True,
                           env=clean_env(PYTHONPATH=str(user)))
    tdir = tmp_path / "t"
    tdir.mkdir()
    got = subprocess.run([old, "-c", code, "x"], capture_output=True, text=True,
                         env=clean_env(PYTHONPATH=BOOT + os.pathsep + str(user), COLDSTART_TRACE_DIR=str(tdir)))
    assert plain.returncode == 0 and got.returncode == 0, got.stderr
    assert got.stdout.replace(".pyc'", ".py'") == plain.stdout.replace(".pyc'", ".py'")
    assert got.stderr == plain.stderr
    assert os.listdir(str(tdir)) == []


def test_imports_nest_and_failures_recorded(python, impl, tmp_path, tracer_build_dir):
    (tmp_path / "raiser.py").write_text("raise RuntimeError('no')\n")
    code = ("import importlib, json, email.parser\n"
            "importlib.import_module('colorsys')\n"
            "try:\n import coldstart_missing_module\nexcept ImportError: pass\n"
            "try:\n import raiser\nexcept RuntimeError: pass\n")
    (tmp_path / "t").mkdir()
    p = traced(python, impl, ["-c", code], tmp_path / "t", tracer_build_dir, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    tr = one_trace(tmp_path / "t")
    assert tr.clean_exit
    # Timestamps nest: each child inside its parent, siblings in order.
    last = {}
    for r in tr.recs:
        if r[0] in ("S", "E", "F", "f", "A"):
            t = int(r[1])
            assert t >= last.get(r[2], 0)
            last[r[2]] = t
    for n in tr.nodes:
        assert n["end"] is not None and n["start"] <= n["end"], n["name"]
        if n["parent"]:
            assert n["parent"]["start"] <= n["start"] and n["end"] <= n["parent"]["end"]
        for a, b in zip(n["children"], n["children"][1:]):
            assert a["end"] <= b["start"]
    assert tr.node("json.decoder")["parent"]["name"] == "json"
    assert tr.node("colorsys")["failed"] is None  # import_module() is seen
    assert tr.node("coldstart_missing_module")["failed"] == "ModuleNotFoundError"
    assert tr.node("raiser")["failed"] == "RuntimeError"
    # RSS at start and end of each import.
    rss = [int(r[4]) for r in tr.recs if r[0] in ("S", "E")]
    assert rss and all(v > 0 for v in rss)
    # The find phase record follows its import's start.
    finds = [r for r in tr.recs if r[0] == "f" and r[3] == "json.decoder"]
    assert finds and finds[0][4].endswith(os.path.join("json", "decoder.py"))


def parse_importtime(stderr):
    cum = {}
    for line in stderr.splitlines():
        m = re.match(r"import time:\s+(-?\d+) \|\s+(-?\d+) \| ( *)(\S+)$", line)
        if m and m.group(4) not in cum:
            cum[m.group(4)] = int(m.group(2))
    return cum


def test_cumulative_agrees_with_importtime(python, impl, tmp_path, tracer_build_dir):
    """Per module, the trace's duration is importtime's cumulative within 2% or 50 us.

    Both clocks run in the same process around the same call, so the only
    difference is the few instructions between them -- and the scheduler: on
    a loaded machine a preemption can land between importtime's timer and
    the tracer's.  Three runs are made and each module must agree in one of
    them; a systematic error fails all three.  A few instructions are a few
    microseconds: the median over the modules of their closest run is held
    under 12 us (measured here at a load average of 9: 2 us for the C tracer,
    4-5.5 us for the pure-Python one on every interpreter; 14.5-24 us for the
    latter when it wrote its end record after reading the end's clock, which
    the per-module bound let through in most runs).
    """
    best, closest = {}, {}
    for attempt in range(3):
        tdir = tmp_path / ("t%d" % attempt)
        tdir.mkdir()
        p = traced(python, impl, ["-c", "import json, email.parser, http.client, decimal, argparse"],
                   tdir, tracer_build_dir, importtime=True)
        assert p.returncode == 0, p.stderr
        it = parse_importtime(p.stderr)
        tr = one_trace(tdir)
        for n in tr.nodes:
            if n["name"] not in it or n["failed"] or n["end"] is None:
                continue
            trace_us = (n["end"] - n["start"]) / 1000.0
            diff = abs(trace_us - it[n["name"]])
            excess = diff - max(50.0, 0.02 * it[n["name"]])
            if n["name"] not in best or excess < best[n["name"]][0]:
                best[n["name"]] = (excess, it[n["name"]], round(trace_us, 1))
            closest[n["name"]] = min(closest.get(n["name"], diff), diff)
    assert len(best) >= 20
    bad = [(name, v[1], v[2]) for name, v in sorted(best.items()) if v[0] > 0]
    assert not bad, bad
    assert statistics.median(closest.values()) < 12, sorted(closest.items(), key=lambda kv: kv[1])


# Enough imports for the trace to fill several pages on every interpreter.
PAGES_OF_IMPORTS = ("import json, email.parser, http.client, decimal, argparse, asyncio, logging.handlers, "
                    "xml.dom.minidom, unittest, csv, tarfile, zipfile, urllib.request, sqlite3")


def test_end_record_page_fault_inside_the_import(python, impl, tmp_path, tracer_build_dir):
    """The first write to a page of the trace file is a page fault (ext4 reserves a block: about
    20 us here).  Both tracers take it before reading an import's end (the pure-Python one stores
    into a mapping of the file too), so importtime, timing the same call from outside, sees no
    more for the imports whose end record opened a page than for the others; taken after the
    end, it made those imports 20 us longer in importtime than in the trace, and as much as the
    file system took under load."""
    opened, others = [], []
    # The argv is in the trace's V record: an argument of another length each time shifts where
    # the page boundaries fall among the records.  The record keeps at most 400 characters of an
    # argument (DETAIL_MAX), so the lengths are spread below that (a longer one shifted nothing).
    # Records are shorter where there are no audit hooks (3.7), so fewer imports open a page per
    # run: collect until there are three.
    for attempt in range(16):
        if attempt >= 6 and len(opened) >= 3:
            break
        tdir = tmp_path / ("t%d" % attempt)
        tdir.mkdir()
        p = traced(python, impl, ["-c", PAGES_OF_IMPORTS, "x" * (attempt * 613 % 397)],
                   tdir, tracer_build_dir, importtime=True)
        assert p.returncode == 0, p.stderr
        it = parse_importtime(p.stderr)
        tr = one_trace(tdir)
        for n in tr.nodes:
            if n["name"] not in it or n["failed"] or n["end"] is None:
                continue
            off = tr.raw.find(("\nE\t%d\t" % n["end"]).encode()) + 1
            end = tr.raw.find(b"\n", off)
            excess = it[n["name"]] - (n["end"] - n["start"]) / 1000.0
            (opened if off // 4096 != (end + 1) // 4096 else others).append(excess)
    assert len(opened) >= 3, "the trace files are too short to cross a page"
    assert statistics.median(opened) < statistics.median(others) + 8, (sorted(opened), statistics.median(others))


def write_pkg(root):
    pkg = root / "cpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import a\n")
    (pkg / "a.py").write_text("VALUE = sum(range(10))\n")
    return pkg


def compiled_modules(tr):
    return sorted(e["module"] for e in tr.events_of("compile") if e["module"] and "cpkg" in e["detail"])


def test_compile_detected_without_bytecode_writes(python, impl, tmp_path, tracer_build_dir):
    needs_audit(python)
    write_pkg(tmp_path)
    code = "import cpkg"
    for i, env in enumerate([{"PYTHONDONTWRITEBYTECODE": "1"}, {"PYTHONDONTWRITEBYTECODE": "1"}, {}, {}]):
        tdir = tmp_path / ("t%d" % i)
        tdir.mkdir()
        p = traced(python, impl, ["-c", code], tdir, tracer_build_dir, cwd=str(tmp_path), env=env)
        assert p.returncode == 0, p.stderr
        got = compiled_modules(one_trace(tdir))
        if i < 3:
            # No .pyc (not written, or the first run that writes it): compiled every time.
            assert got == ["cpkg", "cpkg.a"], (i, got)
        else:
            assert got == [], "the .pyc written by the previous run was not used"


def test_compile_detected_in_read_only_tree(python, impl, tmp_path, tracer_build_dir):
    needs_audit(python)
    src = tmp_path / "src"
    src.mkdir()
    write_pkg(src)
    ro = tmp_path / "ro"
    ro.mkdir()
    if subprocess.run(["mount", "--bind", str(src), str(ro)], capture_output=True).returncode != 0:
        pytest.skip("cannot bind-mount (needs root and mount privileges) for a read-only tree")
    try:
        r = subprocess.run(["mount", "-o", "remount,ro,bind", str(ro)], capture_output=True)
        if r.returncode != 0:
            pytest.skip("cannot remount read-only: %s" % r.stderr.decode().strip())
        for i in range(2):
            tdir = tmp_path / ("t%d" % i)
            tdir.mkdir()
            p = traced(python, impl, ["-c", "import cpkg"], tdir, tracer_build_dir, cwd=str(ro))
            assert p.returncode == 0, p.stderr
            assert compiled_modules(one_trace(tdir)) == ["cpkg", "cpkg.a"]
        assert not (src / "cpkg" / "__pycache__").exists()
    finally:
        subprocess.run(["umount", str(ro)], capture_output=True)


OTHER_HOOKS = r"""
import ctypes, json, sys
seen = {"py": [], "c": []}
def py_hook(event, args):
    if event == "marshal.loads":
        seen["py"].append(len(args[0]))
sys.addaudithook(py_hook)
if sys.argv[1] == "c-hook":
    HOOK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.py_object, ctypes.c_void_p)
    def c_hook(event, args, data):
        if event == b"marshal.loads":
            seen["c"].append(len(args[0]))
        return 0
    keep = HOOK(c_hook)
    ctypes.pythonapi.PySys_AddAuditHook(keep, None)
import cpkg, json.decoder, email.mime.text
ext = sys.modules["_frozen_importlib_external"]
print("HOOKS " + json.dumps(dict(seen, direct=ext.marshal is not sys.modules["marshal"])), flush=True)
# A ctypes callback left on the hook list would be called after ctypes is torn down at exit.
if sys.argv[1] == "c-hook":
    import os
    os._exit(0)
"""


@pytest.mark.parametrize("hook", ["py-hook", "c-hook"])
def test_other_audit_hooks_see_every_marshal_loads(python, hook, tmp_path, tracer_build_dir):
    """The C tracer reads importlib's .pyc files without building marshal.loads's argument, a copy
    of each file, for itself alone; the app's own audit hooks, Python or C, added before or after
    it, still get every marshal.loads with the whole file, as without the tracer."""
    needs_audit(python)
    write_pkg(tmp_path)

    def run(traced_run):
        tdir = tmp_path / ("t%d" % len(list(tmp_path.iterdir())))
        tdir.mkdir()
        if traced_run:
            p = traced(python, "c", ["-c", OTHER_HOOKS, hook], tdir, tracer_build_dir, cwd=str(tmp_path))
        else:
            p = subprocess.run([python, "-c", OTHER_HOOKS, hook], capture_output=True, text=True,
                               env=clean_env(), cwd=str(tmp_path), timeout=120)
        assert p.returncode == 0, p.stderr
        line = [ln for ln in p.stdout.splitlines() if ln.startswith("HOOKS ")]
        assert line, p.stdout
        return json.loads(line[0][6:]), tdir

    run(False)  # writes cpkg's .pyc files
    plain, _ = run(False)
    with_tracer, tdir = run(True)
    assert with_tracer["py"] == plain["py"]
    assert with_tracer["c"] == plain["c"]
    if python_version(python) >= (3, 9):
        assert len(plain["py"]) >= 3, "no .pyc was loaded"
        # The shortcut is in place (3.8 raises no marshal.loads: nothing to save there).
        assert with_tracer["direct"]
    tr = one_trace(tdir)
    assert tr.node("cpkg.a")["parent"]["name"] == "cpkg"


def test_side_effects_attributed(python, impl, tmp_path, tracer_build_dir):
    tdir = tmp_path / "t"
    tdir.mkdir()
    p = traced(python, impl, [SIDEFX], tdir, tracer_build_dir)
    assert p.returncode == 0, p.stderr
    assert "side-effects sample" in p.stdout
    tr = one_trace(tdir)
    sleeps = tr.events_of("time.sleep")
    assert [(e["module"], e["detail"]) for e in sleeps] == [("sidefx.nap", "0.05")]
    assert tr.node("sidefx.plugins")["parent"]["name"] == "sidefx"
    assert tr.node("colorsys")["parent"]["name"] == "sidefx.plugins"
    assert tr.node("sidefx.broken")["failed"] == "RuntimeError"
    if python_version(python) < (3, 8):
        assert not tr.audit
        pytest.skip("Python 3.7 has no audit hooks: checked imports and the wrapped time.sleep only")
    assert tr.audit
    connects = tr.events_of("socket.connect")
    assert connects and all(e["module"] == "sidefx.net" for e in connects)
    assert "127.0.0.1" in connects[0]["detail"]
    assert {e["module"] for e in tr.events_of("socket.getaddrinfo")} == {"sidefx.net"}
    popens = tr.events_of("subprocess.Popen")
    assert [(e["module"], e["detail"]) for e in popens] == [("sidefx.proc", "['/bin/true']")]
    writes = [e for e in tr.events_of("open") if e["detail"].startswith("w:") and "coldstart-sidefx" in e["detail"]]
    assert [e["module"] for e in writes] == ["sidefx.writer"]


def test_sigkilled_process_leaves_partial_trace(python, impl, tmp_path, tracer_build_dir):
    (tmp_path / "outer.py").write_text("import killme\n")
    (tmp_path / "killme.py").write_text("import json\nimport os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    tdir = tmp_path / "t"
    tdir.mkdir()
    p = traced(python, impl, ["-c", "import outer"], tdir, tracer_build_dir, cwd=str(tmp_path))
    assert p.returncode == -signal.SIGKILL
    tr = one_trace(tdir)
    assert not tr.clean_exit
    assert tr.node("outer")["end"] is None
    assert tr.node("killme")["end"] is None
    assert tr.node("killme")["parent"]["name"] == "outer"
    assert tr.node("json")["end"] is not None
    assert tr.node("json")["parent"]["name"] == "killme"
    if impl == "c":
        # The mapped file keeps its zero tail: readers stop at the first NUL.
        assert b"\0" in tr.raw


CLOSER = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
os.closerange(3, 1024)  # as a daemonizing program does: the tracer's descriptors too
files = [open(os.path.join(sys.argv[2], "user%d.dat" % i), "wb") for i in range(8)]
for f in files:
    f.write(b"U" * 100000)
    f.flush()
for i in range(int(sys.argv[3])):
    __import__("m%04d" % i)
pid = os.fork()
if pid == 0:
    import m_child
    os._exit(0)
os.waitpid(pid, 0)
for f in files:
    f.write(b"V" * 10)
    f.close()
"""


CLOSER_IMPORTS = 3000  # about 0.6 MB of records: more than the zeros written ahead at the start


def closer_target(tmp_path):
    """CLOSER's arguments, with its modules written; check_closer_files() after it ran."""
    mods = tmp_path / "mods"
    mods.mkdir()
    for i in range(CLOSER_IMPORTS):
        (mods / ("m%04d.py" % i)).write_text("X = %d\n" % i)
    (mods / "m_child.py").write_text("")
    (tmp_path / "closer.py").write_text(CLOSER)
    (tmp_path / "data").mkdir()
    return [str(tmp_path / "closer.py"), str(mods), str(tmp_path / "data"), str(CLOSER_IMPORTS)]


def check_closer_files(tmp_path):
    for i in range(8):
        body = (tmp_path / "data" / ("user%d.dat" % i)).read_bytes()
        assert body == b"U" * 100000 + b"V" * 10, (i, len(body), body.count(b"\0"))


def test_closed_descriptors_never_touch_the_targets_files(python, impl, tmp_path, tracer_build_dir):
    """A target that closes every descriptor and opens files of its own, which get the
    tracer's numbers: those files are never written, cut or closed by the tracer (with the
    numbers trusted, the zeros written ahead of the records went into the first one and its
    end cut it), and the trace goes on in the tracer's own file."""
    tdir = tmp_path / "t"
    tdir.mkdir()
    p = traced(python, impl, closer_target(tmp_path), tdir, tracer_build_dir)
    assert p.returncode == 0, p.stderr
    check_closer_files(tmp_path)
    n = CLOSER_IMPORTS
    found = traces(tdir)
    root = next(t for t in found if any(x["name"] == "m0000" for x in t.nodes))
    assert root.clean_exit, (root.recs[-3:], p.stderr[-2000:])
    assert root.node("m%04d" % (n - 1))["end"] is not None
    child = [t for t in found if t is not root]
    assert len(child) == 1 and child[0].node("m_child")["end"] is not None


SPAWNER = r"""
import multiprocessing, os, subprocess, sys

def child():
    import colorsys

if __name__ == "__main__":
    subprocess.run([sys.executable, "-c", "import json"], check=True)
    ctx = multiprocessing.get_context("spawn")
    p = ctx.Process(target=child)
    p.start()
    p.join()
    assert p.exitcode == 0
    pid = os.fork()
    if pid == 0:
        import decimal
        os._exit(0)
    os.waitpid(pid, 0)
"""


def test_every_process_traced(python, impl, tmp_path, tracer_build_dir):
    (tmp_path / "spawner.py").write_text(SPAWNER)
    tdir = tmp_path / "t"
    tdir.mkdir()
    p = traced(python, impl, [str(tmp_path / "spawner.py")], tdir, tracer_build_dir, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    found = traces(tdir)
    pids = {t.pid for t in found}
    # multiprocessing's resource tracker may start its tracer after the script ended (on a
    # loaded machine): getppid() then names init, and the trace names the script as spawner.
    parent = {t.pid: t.ppid if t.ppid in pids else t.spawner for t in found}
    roots = [t for t in found if parent[t.pid] not in pids]
    assert len(roots) == 1, "\n".join("pid %d ppid %d %s" % (t.pid, t.ppid, " ".join(t.argv)[-80:])
                                      for t in found)
    root = roots[0]
    assert str(tmp_path / "spawner.py") in root.argv
    sub = [t for t in found if t.argv[1:] == ["-c", "import json"]]
    assert len(sub) == 1 and sub[0].ppid == root.pid and sub[0].spawner == root.pid
    assert sub[0].node("json")["end"] is not None
    spawned = [t for t in found if any("colorsys" == n["name"] for n in t.nodes)]
    assert len(spawned) == 1 and spawned[0].ppid == root.pid
    assert any("multiprocessing" in a for a in spawned[0].argv)
    forked = [t for t in found if t.pid != root.pid and t.ppid == root.pid and
              any(n["name"] == "decimal" for n in t.nodes)]
    assert len(forked) == 1 and forked[0].argv == root.argv and forked[0].spawner == root.pid


ENV_COPIER = r"""
import os, subprocess, sys
# As Django's autoreloader: an environment built from os.environ, plus a variable.
env = {**os.environ, "COPIED": "1"}
subprocess.run([sys.executable, "-c", "import colorsys"], env=env, check=True)
assert env["PYTHONPATH"].split(os.pathsep)[1:] == ["/nonexistent-app-dir"], env["PYTHONPATH"]
# An environment without coldstart's variables is the app's own choice: untraced.
clean = {k: v for k, v in os.environ.items() if not k.startswith("COLDSTART")}
subprocess.run([sys.executable, "-c", "import decimal"], env=clean, check=True)
print("OS_ENVIRON_PYTHONPATH", os.environ.get("PYTHONPATH"))
"""


def test_child_given_a_copy_of_os_environ_is_traced(python, impl, tmp_path, tracer_build_dir):
    """os.environ hides the bootstrap's PYTHONPATH entry from the app; a child
    given {**os.environ, ...} (Django's runserver autoreloader) gets it back
    and is traced, one given an environment without coldstart's variables
    is not."""
    needs_audit(python)
    (tmp_path / "copier.py").write_text(ENV_COPIER)
    tdir = tmp_path / "t"
    tdir.mkdir()
    p = traced(python, impl, [str(tmp_path / "copier.py")], tdir, tracer_build_dir,
               extra_path="/nonexistent-app-dir", cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "OS_ENVIRON_PYTHONPATH /nonexistent-app-dir" in p.stdout, p.stdout
    found = traces(tdir)
    wanted = sorted([str(tmp_path / "copier.py"), "-c import colorsys"])
    assert sorted(" ".join(t.argv[1:]) for t in found) == wanted, [t.argv for t in found]
    (child,) = [t for t in found if t.argv[1:] == ["-c", "import colorsys"]]
    assert child.node("colorsys")["end"] is not None


ORPHANER = r"""
import subprocess, sys
# The helper's interpreter starts after this process ended: it is adopted before its tracer runs.
subprocess.Popen(["sh", "-c", "sleep 0.5; exec " + sys.executable + " -c 'import json'"])
"""


def test_orphan_names_the_process_that_started_it(python, impl, tmp_path, tracer_build_dir):
    """getppid() of a process whose parent is gone names whoever adopted it; the trace also
    names the traced process it descends from (COLDSTART_TRACE_PARENT, through the shell)."""
    (tmp_path / "orphaner.py").write_text(ORPHANER)
    tdir = tmp_path / "t"
    tdir.mkdir()
    # capture_output waits for the helper too: it holds the pipes.
    p = traced(python, impl, [str(tmp_path / "orphaner.py")], tdir, tracer_build_dir, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    found = traces(tdir)
    assert len(found) == 2, [t.argv for t in found]
    root = next(t for t in found if str(tmp_path / "orphaner.py") in t.argv)
    helper = next(t for t in found if t is not root)
    assert root.spawner == 0
    assert helper.ppid != root.pid, "the helper started before its parent ended"
    assert helper.spawner == root.pid


# --- through the coldstart binary -------------------------------------------------------------

def profile(coldstart, python, tmp_path, *args, env=None):
    out = tmp_path / "profile.json"
    e = {"PYTHONDONTWRITEBYTECODE": "", "COLDSTART_CACHE_DIR": str(tmp_path / "cache")}
    e.update(env or {})
    r = coldstart("profile", "-q", "--no-report", "--python", python, "-o", out, *args, env=e)
    return r, (json.load(open(str(out))) if out.exists() else None)


def test_profile_and_timeline_of_a_target_that_closes_descriptors(coldstart, python, tmp_path):
    """The same target through coldstart with the timeline: the sampler's file and its
    schedstat descriptor are checked before each use too; the target's files stay its own
    and both the trace and the timeline reach the exit."""
    r, prof = profile(coldstart, python, tmp_path, "--timeline", *closer_target(tmp_path))
    assert r.returncode == 0, r.stderr
    check_closer_files(tmp_path)
    main = prof["runs"][0]["processes"][0]
    assert any(x[0] == "m%04d" % (CLOSER_IMPORTS - 1) for x in main["nodes"])
    assert main["timeline"]["end"] == "exit", main["timeline"]["end"]


def nodes_of(proc):
    return [dict(name=n[0], depth=n[1], parent=n[2], self=n[3], cum=n[4], flags=n[5], kind=n[6])
            for n in proc["nodes"]]


def by_name(proc, name):
    ns = nodes_of(proc)
    for i, n in enumerate(ns):
        if n["name"] == name:
            return i, n
    raise AssertionError("no node %r" % name)


def test_profile_merges_trace(coldstart, python, tmp_path):
    r, prof = profile(coldstart, python, tmp_path, SIDEFX)
    assert r.returncode == 0, r.stderr
    assert not any("pure-Python" in w["msg"] for w in prof["warnings"]), prof["warnings"]
    run = prof["runs"][0]
    main = run["processes"][0]
    assert main["pid"] > 0 and "app.py" in main["argv"]
    ns = nodes_of(main)
    pi, plugins = by_name(main, "sidefx.plugins")
    assert plugins["flags"] & TRACE_ONLY
    ci, colorsys = by_name(main, "colorsys")
    assert colorsys["parent"] == pi and not colorsys["flags"] & TRACE_ONLY
    bi, broken = by_name(main, "sidefx.broken")
    assert broken["flags"] & FAILED
    si, sidefx = by_name(main, "sidefx")
    assert sum(n["cum"] for n in ns if n["parent"] == si) + sidefx["self"] == sidefx["cum"]
    timing = main["timing"]
    start, end = timing[si][0], timing[si][1]
    assert 0 < start < end
    for i, n in enumerate(ns):
        if n["parent"] == si:
            assert start <= timing[i][0] <= timing[i][1] <= end
    ni, _ = by_name(main, "sidefx.nap")
    assert timing[ni][1] - timing[ni][0] >= 50 * 10 ** 6
    ids = {(f["id"], f.get("module")) for f in prof["findings"]}
    assert ("import-side-effect", "sidefx.nap") in ids
    if python_version(python) >= (3, 8):
        for mod in ("sidefx.net", "sidefx.proc", "sidefx.writer"):
            assert ("import-side-effect", mod) in ids, prof["findings"]
        ev = [e for e in main["events"] if e[1] == "socket.connect"]
        assert ev and ns[ev[0][3]]["name"] == "sidefx.net"


def test_profile_no_trace(coldstart, python, tmp_path):
    r, prof = profile(coldstart, python, tmp_path, "--no-trace", SIDEFX)
    assert r.returncode == 0, r.stderr
    main = prof["runs"][0]["processes"][0]
    assert "timing" not in main and not main.get("events")
    assert main["pid"] == -1
    assert not any(n["flags"] & TRACE_ONLY for n in nodes_of(main))
    with pytest.raises(AssertionError):
        by_name(main, "sidefx.plugins")  # importtime's blind spot stays blind


def test_profile_sigkilled_target(coldstart, python, tmp_path):
    (tmp_path / "outer.py").write_text("import killme\n")
    (tmp_path / "killme.py").write_text("import json\nimport os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    (tmp_path / "main.py").write_text("import outer\n")
    r, prof = profile(coldstart, python, tmp_path, str(tmp_path / "main.py"))
    assert prof is not None, r.stderr
    run = prof["runs"][0]
    assert run["status"] == "signaled" and run["signal"] == signal.SIGKILL
    main = run["processes"][0]
    _, killme = by_name(main, "killme")
    assert killme["flags"] & OPEN
    ki, _ = by_name(main, "killme")
    _, js = by_name(main, "json")
    assert js["parent"] == ki and not js["flags"] & OPEN


def test_profile_ex_config(coldstart, python, tmp_path):
    (tmp_path / "settings.py").write_text("import sys\nsys.exit(78)\n")
    (tmp_path / "main.py").write_text("import settings\n")
    r, prof = profile(coldstart, python, tmp_path, str(tmp_path / "main.py"))
    assert prof is not None, r.stderr
    f = [f for f in prof["findings"] if f["id"] == "config-rejected"]
    assert len(f) == 1 and f[0]["module"] == "settings", prof["findings"]
    assert "78" in f[0]["evidence"]


def test_profile_compiled_at_startup(coldstart, python, tmp_path):
    if python_version(python) < (3, 8):
        pytest.skip("Python 3.7 has no audit hooks: compilation is not seen")
    write_pkg(tmp_path)
    (tmp_path / "main.py").write_text("import cpkg\n")
    r, prof = profile(coldstart, python, tmp_path, str(tmp_path / "main.py"),
                      env={"PYTHONDONTWRITEBYTECODE": "1"})
    assert r.returncode == 0, r.stderr
    f = [f for f in prof["findings"] if f["id"] == "compiled-at-startup"]
    assert len(f) == 1, prof["findings"]
    assert "-m compileall -q " in f[0]["fix"] and str(tmp_path / "cpkg") in f[0]["fix"]
    main = prof["runs"][0]["processes"][0]
    assert by_name(main, "cpkg.a")[1]["flags"] & COMPILED


def test_profile_subprocess_tree(coldstart, python, tmp_path):
    (tmp_path / "parent.py").write_text(
        "import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'import colorsys'], check=True)\n")
    r, prof = profile(coldstart, python, tmp_path, str(tmp_path / "parent.py"))
    assert r.returncode == 0, r.stderr
    procs = prof["runs"][0]["processes"]
    assert len(procs) >= 2
    assert "parent.py" in procs[0]["argv"]
    child = [p for p in procs[1:] if "import colorsys" in (p["argv"] or "")]
    assert len(child) == 1 and child[0]["ppid"] == procs[0]["pid"]
    by_name(child[0], "colorsys")


@pytest.mark.parametrize("which", ["pyenv"])
def test_on_demand_build_is_cached(coldstart, tmp_path, which):
    pys = [p for p in PYTHONS if p.startswith("/root/.pyenv/")]
    if not pys or not shutil.which("cc"):
        pytest.skip("no pyenv interpreter or no C compiler to build the tracer for")
    py = pys[-1]
    r, prof = profile(coldstart, py, tmp_path, "-c", "import json")
    assert r.returncode == 0, r.stderr
    built = glob.glob(str(tmp_path / "cache" / "tracer" / "*" / "_tracer*.so"))
    assert len(built) == 1, built
    mtime = os.stat(built[0]).st_mtime_ns
    r, prof = profile(coldstart, py, tmp_path, "-c", "import json")
    assert r.returncode == 0
    assert os.stat(built[0]).st_mtime_ns == mtime
    assert not any("pure-Python" in w["msg"] for w in prof["warnings"])
    assert "timing" in prof["runs"][0]["processes"][0]


def test_fallback_when_no_compiler(coldstart, tmp_path):
    pys = [p for p in PYTHONS if p.startswith("/root/.pyenv/")]
    if not pys:
        pytest.skip("no pyenv interpreter (the Makefile's build covers /usr/bin/python3)")
    r, prof = profile(coldstart, pys[0], tmp_path, "-c", "import json", env={"CC": "/nonexistent/cc"})
    assert r.returncode == 0, r.stderr
    assert any("pure-Python" in w["msg"] for w in prof["warnings"]), prof["warnings"]
    main = prof["runs"][0]["processes"][0]
    assert main["pid"] > 0 and "timing" in main
    by_name(main, "json")


def test_profile_oom_names_the_import(coldstart, python, tmp_path):
    """A target killed by the memory limit while importing: the open import is named."""
    (tmp_path / "outer.py").write_text("import json\n")
    (tmp_path / "hog.py").write_text("import outer\nblocks = []\nwhile True:\n"
                                     "    blocks.append(bytearray(8 << 20))\n")
    (tmp_path / "main.py").write_text("import hog\n")
    r, prof = profile(coldstart, python, tmp_path, "--memory", "96m", "--no-baseline",
                      str(tmp_path / "main.py"))
    if r.returncode == 3:
        pytest.skip("memory limits unavailable here: %s" % r.stderr.strip())
    assert r.returncode == 7, r.stderr
    run = prof["runs"][0]
    assert run["status"] == "oom"
    main = run["processes"][0]
    _, hog = by_name(main, "hog")
    assert hog["flags"] & OPEN
    f = [f for f in prof["findings"] if f["id"] == "oom-during-import"]
    assert len(f) == 1 and f[0]["module"] == "hog", prof["findings"]
    assert "it was importing hog" in f[0]["evidence"]


# --- a full file system ----------------------------------------------------------------------

DISK_FULL_PYTHONS = ["/usr/bin/python3", "/root/.pyenv/versions/3.12.1/bin/python3"]
DISK_FULL_CODE = "import json, email.parser, asyncio\nprint('done')\n"


@pytest.fixture
def small_tmpfs(tmp_path):
    """Mounts a 1 MiB tmpfs and returns a function that fills it up to free_kb KiB free."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a small tmpfs (needs root): %s" % r.stderr.strip())

    def fill(free_kb):
        fd = os.open(str(mnt / "fill"), os.O_WRONLY | os.O_CREAT)
        try:
            while os.fstatvfs(fd).f_bavail * os.fstatvfs(fd).f_frsize > free_kb * 1024:
                os.write(fd, b"\0" * 4096)
        except OSError:
            pass
        os.close(fd)
        st = os.statvfs(str(mnt))
        assert st.f_bavail * st.f_frsize == free_kb * 1024
        return str(mnt)

    yield fill
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


# The pure-Python tracer where the C one cannot be built (no compiler): a pyenv interpreter, whose C tracer
# would be built into the test's own cache (/usr/bin/python3's is built by make).
DISK_FULL_PY_TRACER = ["/root/.pyenv/versions/3.12.1/bin/python3", "/root/.pyenv/versions/3.7.16/bin/python3"]
DISK_FULL_CASES = [(py, "c") for py in DISK_FULL_PYTHONS] + [(py, "py") for py in DISK_FULL_PY_TRACER]


def kept(n):
    return not n["flags"] & GC and not (n["kind"] == "tool" and n["name"] == "gc")


@pytest.mark.parametrize("free_kb", [0, 16], ids=["full", "16k-free"])
@pytest.mark.parametrize("py,impl", DISK_FULL_CASES)
def test_full_file_system_stops_the_trace_not_the_target(coldstart, py, impl, free_kb, small_tmpfs, tmp_path):
    """The C tracer maps its trace file (in coldstart's directory under
    TMPDIR): a store into a page a full file system cannot give is SIGBUS,
    which killed the target (exit -7).  The tracer writes the file ahead of
    its records and stops when that write fails; coldstart says where the
    trace stopped and takes what is missing from importtime, so the tree is
    the one of a run with space left.  The pure-Python tracer does the same
    (its failed write stopped it without an R record: no warning, and the
    import open at the stop was left open)."""
    if not os.access(py, os.X_OK):
        pytest.skip("no %s here" % py)
    env = {"CC": "/nonexistent/cc"} if impl == "py" else {}
    script = tmp_path / "imports.py"
    script.write_text(DISK_FULL_CODE)
    # The same run with space: the tree to get back, and the C tracer built into the cache (not on the tmpfs).
    r, ok = profile(coldstart, py, tmp_path, str(script), env=env)
    assert r.returncode == 0 and ok["runs"][0]["status"] == "exited", r.stderr
    assert any("pure-Python" in w["msg"] for w in ok["warnings"]) == (impl == "py"), ok["warnings"]
    # The collector's pauses ("[gc]", flag gc) are the tracer's alone: after a stop there are none; nor are
    # the tracer's own imports under the bootstrap (gc, for its gc.callbacks function) when it stopped at its start.
    want = sorted(n["name"] for n in nodes_of(ok["runs"][0]["processes"][0]) if kept(n))
    assert {"json", "email.parser", "asyncio"} <= set(want)

    r, prof = profile(coldstart, py, tmp_path, str(script), env=dict(env, TMPDIR=small_tmpfs(free_kb)))
    assert prof is not None, r.stderr
    run = prof["runs"][0]
    # Killed by SIGBUS before: status "signaled", coldstart's exit status 6.
    assert (r.returncode, run["status"], run["exit_code"], r.stdout) == (0, "exited", 0, "done\n"), \
        (r.stderr, run["status"])
    warnings = [w["msg"] for w in prof["warnings"]]
    main = run["processes"][0]
    if free_kb == 0:
        stop = [w for w in warnings if re.match(r"the trace of pid \d+ stopped at its start: no space left on "
                                                r"the device", w)]
    else:
        stop = [w for w in warnings if re.match(r"the trace of pid %d stopped at [0-9.]+ ms: no space left on "
                                                r"the device; the imports after it are importtime's" % main["pid"], w)]
        assert "timing" in main, "the records before the stop were not read"
    assert len(stop) == 1, warnings
    assert not any("not a readable" in w or "ended inside an import" in w for w in warnings), warnings
    ns = nodes_of(main)
    assert not [n["name"] for n in ns if n["flags"] & OPEN]
    assert sorted(n["name"] for n in ns if kept(n)) == want
