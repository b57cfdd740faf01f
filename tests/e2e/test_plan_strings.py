"""The plan's string table (python/coldstart/_plancode.c, plan_code.py,
docs/plan.md "The string table") in real interpreters: Debian's python3 and
every pyenv 3.8-3.13 found.

`coldstart plan --verify` plans a script whose modules call compile(),
exec() and eval() on strings while they import (namedtuple, dataclasses,
exec'd functions, compile() under `from __future__ import annotations` and
without it); then the script runs plainly and with the plan and everything
it can observe must be the same: tracebacks through the exec'd code,
sys._getframe inside it, namedtuple's module (found from the caller's
frame), annotations (the caller's future flags), audit events, warnings.
The applied run must also show that the table answered the calls (so the
test fails without it) and that a changed source was compiled as usual.
"""
import json
import os
import shutil
import subprocess

import pytest

from conftest import COLDSTART, PLAN_VERSIONS, ROOT, clean_env, interpreter_params, write

BOOT = os.path.join(ROOT, "python", "coldstart", "_boot", "plan")

MODULES = {
    # Deferred by the plan (imported, not used while planning).
    "gen.py": """
        import collections, dataclasses, os, sys
        P = collections.namedtuple("P", "x y")

        @dataclasses.dataclass(order=True)
        class D:
            a: int
            b: str = "b"

        SRC = ("def f(a):\\n"
               "    return g(a)\\n"
               "def g(a):\\n"
               "    import sys\\n"
               "    names = [sys._getframe(i).f_code.co_name for i in range(3)]\\n"
               "    return names, sys._getframe(1).f_globals.get('__name__'), 1 / a\\n"
               "def w():\\n"
               "    import warnings\\n"
               "    warnings.warn('from exec', UserWarning, stacklevel=2)\\n")
        ns = {"__name__": "gen_exec"}
        exec(SRC, ns)
        # Another value than the planning run's: a source the table lacks.
        changed = {}
        exec("X = %d" % int(os.environ.get("STR_N", "1")), changed)
        # Its compiling warns: never in the table, so it warns every time.
        warned = {}
        exec("s = '\\\\d'", warned)
        square = eval("lambda v: v * v", {})
        co = compile("y = 1\\ny / 0\\n", "<gen>", "exec")
    """,
    # Used by the requests: they run at import with and without the plan.
    "fut.py": """
        from __future__ import annotations
        SRC = "def h(x: 'q' + 'r', *, y: len('ab')) -> int:\\n    return x\\n"
        ns = {}
        exec(compile(SRC, "<ann>", "exec"), ns)
        inherited = ns["h"].__annotations__
        ns2 = {}
        exec(compile(SRC, "<ann>", "exec", dont_inherit=True), ns2)
        plain = ns2["h"].__annotations__
        ns3 = {}
        exec(SRC, ns3)
        by_exec = ns3["h"].__annotations__
    """,
    "nofut.py": """
        import collections, dataclasses
        Q = collections.namedtuple("Q", "a b")

        @dataclasses.dataclass(frozen=True)
        class E:
            c: int = 3
        SRC = "def h(x: 'q' + 'r', *, y: len('ab')) -> int:\\n    return x\\n"
        ns = {}
        exec(compile(SRC, "<ann>", "exec"), ns)
        evaluated = ns["h"].__annotations__
    """,
    "tool.py": """
        import json, sys, traceback
        events = []
        MINE = ("<string>", "<ann>", "<gen>")

        def hook(event, args):
            if event == "compile" and args[1] in MINE:
                events.append([event, repr(args[0])[:60], args[1]])
            elif event == "exec" and args[0].co_filename in MINE:
                events.append([event, repr(args[0].co_names)[:60],
                               args[0].co_filename])
        sys.addaudithook(hook)
        import fut, nofut, gen
        out = {"fut": [repr(fut.inherited), repr(fut.plain), repr(fut.by_exec)],
               "nofut": repr(nofut.evaluated),
               "eager": [repr(nofut.Q(1, 2)), nofut.Q.__module__,
                         repr(nofut.E()), hash(nofut.E()) == hash(nofut.E())]}
        if sys.argv[1:] == ["use"]:
            out["P"] = [repr(gen.P(1, 2)), gen.P.__module__,
                        gen.P.__new__.__code__.co_filename]
            out["D"] = [repr(gen.D(1)), gen.D(1) < gen.D(2),
                        gen.D.__init__.__code__.co_filename,
                        gen.D.__init__.__qualname__]
            out["frames"] = gen.ns["f"](2)[:2]
            try:
                gen.ns["f"](0)
            except ZeroDivisionError:
                out["tb"] = traceback.format_exc()
            try:
                exec(gen.co, {})
            except ZeroDivisionError:
                out["tb2"] = traceback.format_exc()
            import warnings
            with warnings.catch_warnings(record=True) as ws:
                warnings.simplefilter("always")
                gen.ns["w"]()
            out["warn"] = [ws[0].filename, ws[0].lineno, str(ws[0].message)]
            out["changed"] = gen.changed["X"]
            out["square"] = gen.square(7)
            # A module the plan defers does not run its body unless used,
            # and runs it later (the standard library's namedtuples among
            # them): the same events, in the same order, from the bodies of
            # this test's modules.
            marks = ("def f(a)", "X =", "s =", "lambda v", "y = 1",
                     "def h(", "('f', 'g')", "('X',)", "('s',)", "('h',)",
                     "('y',)")
            out["order"] = [e for e in events
                            if any(m in e[1] for m in marks)]
        print(json.dumps(out, indent=1, sort_keys=True))
        pm = sys.modules.get("coldstart.plan")
        stats = pm._plancode[0].stats() if getattr(pm, "_plancode", None) \\
            else None
        # Not in coldstart plan's runs: --verify compares the files written.
        if stats is not None and __import__("os").environ.get("PLANSTR_STATS") != "0":
            with open("stats.json", "w") as f:
                json.dump(stats, f)
    """,
}


@pytest.fixture(params=interpreter_params(PLAN_VERSIONS))
def python(request):
    return request.param


def _env(**extra):
    env = clean_env()
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


def _run(python, workdir, env, *args):
    p = subprocess.run([python, "-W", "always::SyntaxWarning",
                        "-W", "always::DeprecationWarning", "tool.py"] +
                       list(args), cwd=workdir, capture_output=True,
                       text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    return p


def _plan_tool(workdir, plan_args, argv):
    """Writes MODULES into workdir and plans argv there; returns (the
    plan's path, coldstart plan's result)."""
    for name, text in MODULES.items():
        write(workdir, name, text)
    plan_path = os.path.join(workdir, "p.json")
    p = subprocess.run([COLDSTART, "plan"] + plan_args + ["-o", plan_path, "--"] + argv,
                       cwd=workdir, capture_output=True, text=True, timeout=300,
                       env=_env(PLANSTR_STATS="0", PYTHONWARNINGS="ignore::SyntaxWarning"))
    assert p.returncode == 0, p.stdout + p.stderr
    return plan_path, p


def test_string_table_changes_nothing_observable(python, workdir):
    # Planned with its import-time warning hidden (without -W always, and
    # 3.12's SyntaxWarning ignored): gen's body warns at import (an invalid
    # escape compiled), which --verify, comparing stderr, would see move to
    # gen's first use and keep gen eager.
    plan_path, p = _plan_tool(workdir, ["--verify"], [python, "tool.py"])
    assert "verified" in p.stdout + p.stderr, p.stdout + p.stderr
    plan = json.load(open(plan_path))
    actions = {m["name"]: m["action"] for m in plan["modules"]}
    assert actions["gen"] == "defer" and actions["fut"] == "load"
    code = plan["code"]
    assert code["strings"][2] >= 8 and os.path.isfile(code["ext"]["path"])

    stats = os.path.join(workdir, "stats.json")
    if os.path.exists(stats):
        os.unlink(stats)  # written by --verify's run with the plan
    plain = _run(python, workdir, _env(STR_N="2"), "use")
    assert not os.path.exists(os.path.join(workdir, "stats.json"))
    applied = _run(python, workdir, _env(
        STR_N="2", COLDSTART_PLAN=plan_path, PYTHONPATH=BOOT), "use")
    assert "coldstart plan" not in applied.stderr, applied.stderr
    assert applied.stdout == plain.stdout
    # The warning of the source that warns, once in each run.
    assert applied.stderr == plain.stderr
    assert "\\d" in plain.stderr and "Warning" in plain.stderr
    out = json.loads(plain.stdout)
    assert out["changed"] == 2 and out["P"][1] == "gen"
    assert out["eager"][1] == "nofut" and out["eager"][3] is True
    # 3.12+ inline the comprehension: its frame is g's.
    assert out["frames"][0][-2:] == ["g", "f"] or \
        out["frames"][0][-2:] == ["f", "<module>"]
    assert out["frames"][1] == "gen_exec"
    assert out["warn"][0].endswith("tool.py") and out["warn"][2] == "from exec"
    assert 'File "<string>", line 6, in g' in out["tb"]
    assert out["fut"][0] != out["nofut"] and out["fut"][1] == out["nofut"]
    assert out["fut"][2] == out["fut"][0]
    assert [e[0] for e in out["order"]].count("compile") >= 7
    assert len(out["order"]) >= 14
    with open(os.path.join(workdir, "stats.json")) as f:
        hits, misses = json.load(f)
    # namedtuple, the dataclass' methods, SRC, eval, compile() x3 and exec
    # of fut, nofut; the changed source and the one that warns miss.
    assert hits >= 8 and misses >= 2, (hits, misses)

    # Switched off, the same output and no table.
    os.unlink(os.path.join(workdir, "stats.json"))
    off = _run(python, workdir, _env(
        STR_N="2", COLDSTART_PLAN=plan_path, PYTHONPATH=BOOT,
        COLDSTART_PLAN_STRINGS="0"), "use")
    assert off.stdout == plain.stdout
    assert not os.path.exists(os.path.join(workdir, "stats.json"))


def test_changed_extension_is_not_loaded(workdir):
    """A plan whose extension changed answers nothing from the table, with
    one warning; the rest of the plan applies."""
    python = "/usr/bin/python3"
    plan_path, _ = _plan_tool(workdir, [], [python, "tool.py"])
    plan = json.load(open(plan_path))
    ext = plan["code"]["ext"]
    copy = os.path.join(workdir, "ext.so")
    shutil.copy(ext["path"], copy)
    plan["code"]["ext"]["path"] = copy
    with open(plan_path, "w") as f:
        json.dump(plan, f)
    os.utime(copy, ns=(ext["mtime_ns"] + 10**9, ext["mtime_ns"] + 10**9))
    stats = os.path.join(workdir, "stats.json")
    plain = _run(python, workdir, _env(), "use")
    assert not os.path.exists(stats)
    applied = _run(python, workdir, _env(COLDSTART_PLAN=plan_path,
                                         PYTHONPATH=BOOT), "use")
    assert applied.stdout == plain.stdout
    assert "not answering code compiled from strings" in applied.stderr
    assert "changed since the plan was made" in applied.stderr
    assert not os.path.exists(os.path.join(workdir, "stats.json"))


def test_other_position_information_compiles_again(workdir):
    """Code compiled without column positions (-X no_debug_ranges, 3.11+)
    differs from the table's: the table is not used then."""
    python = "/usr/bin/python3"
    plan_path, _ = _plan_tool(workdir, [], [python, "tool.py"])
    assert json.load(open(plan_path))["code"]["debug_ranges"] is True
    stats = os.path.join(workdir, "stats.json")
    for xopt, table in ((["-X", "no_debug_ranges"], False), ([], True)):
        if os.path.exists(stats):
            os.unlink(stats)
        runs = [subprocess.run([python] + xopt + ["tool.py", "use"],
                               cwd=workdir, capture_output=True, text=True,
                               timeout=120, env=e)
                for e in (_env(), _env(COLDSTART_PLAN=plan_path,
                                       PYTHONPATH=BOOT))]
        assert runs[0].stdout == runs[1].stdout and runs[1].returncode == 0
        assert os.path.exists(stats) is table, xopt


# A call chain that crosses a frame stack chunk boundary (16 KiB from 3.11
# on) on every round: without the kept chunks each round maps and unmaps
# one (python/coldstart/_plan_arena.h, keep_chunks()).
DEEP = """
    import sys
    import deepmod  # a planned module: the plan has a code archive

    def down(n):
        return 0 if n == 0 else down(n - 1) + 1

    rounds = int(sys.argv[1])
    print(sum(down(400) for _ in range(rounds)))
    pm = sys.modules.get("coldstart.plan")
    ext = pm._ext[0] if pm is not None and pm._ext else None
    print("kept", ext.kept() if ext is not None else None)
"""


def _chunk_unmaps(python, workdir, env):
    """Runs deep.py under strace; returns (its stdout, how many 16 KiB
    blocks it unmapped)."""
    log = os.path.join(workdir, "strace.log")
    p = subprocess.run(["strace", "-f", "-e", "trace=munmap", "-o", log,
                        python, "deep.py", "500"], cwd=workdir,
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    with open(log) as f:
        n = sum(1 for line in f if "munmap(" in line and ", 16384)" in line)
    return p.stdout, n


@pytest.mark.skipif(shutil.which("strace") is None,
                    reason="strace is not installed (tests/install-deps.sh)")
def test_frame_stack_chunks_are_kept(python, workdir):
    write(workdir, "deep.py", DEEP)
    write(workdir, "deepmod.py", "X = 1\n")
    plan_path = os.path.join(workdir, "p.json")
    p = subprocess.run([COLDSTART, "plan", "-o", plan_path, "--", python,
                        "deep.py", "5"], cwd=workdir, capture_output=True,
                       text=True, timeout=300, env=_env())
    assert p.returncode == 0, p.stdout + p.stderr
    assert os.path.isfile(json.load(open(plan_path))["code"]["ext"]["path"])
    plain_out, plain_n = _chunk_unmaps(python, workdir, _env())
    out, n = _chunk_unmaps(python, workdir, _env(
        COLDSTART_PLAN=plan_path, PYTHONPATH=BOOT))
    off_out, off_n = _chunk_unmaps(python, workdir, _env(
        COLDSTART_PLAN=plan_path, PYTHONPATH=BOOT, COLDSTART_PLAN_CHUNKS="0"))
    assert out.splitlines()[0] == plain_out.splitlines()[0] == \
        off_out.splitlines()[0] == str(400 * 500)
    assert plain_out.splitlines()[1] == "kept None"
    assert off_out.splitlines()[1] == "kept 0"
    v = subprocess.run([python, "-c", "import sys; print(sys.version_info >= (3, 11))"],
                       capture_output=True, text=True).stdout.strip()
    if v == "True":
        # 3.11+: every round unmapped a chunk, but with the plan.
        assert plain_n >= 500 and off_n >= 500, (plain_n, off_n)
        assert n < 10, (n, plain_n, off_n)
        assert int(out.splitlines()[1].split()[1]) >= 1
    else:
        # Before 3.11 frames are objects of their own: no chunks to keep.
        assert n < 10 and plain_n < 10, (plain_n, n)


# Allocates about 12 MiB of small objects in steps of about 20 KiB and
# counts the steps in which the resident set grew by an object arena (1 MiB
# from 3.10, 256 KiB before) at once: each new arena while a plan
# prefaults arenas, none otherwise (they fault a few pages at a time).
ARENAS = """
    import os, sys
    import arenamod  # a planned module: the plan has a code archive

    def resident():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1])

    keep, jumps = [], []
    for _ in range(600):
        before = resident()
        keep.append([(i, i) for i in range(300)])
        jumps.append(resident() - before)
    arena = (1 << 20) if sys.version_info >= (3, 10) else (256 << 10)
    pages = arena // os.sysconf("SC_PAGE_SIZE")
    print(sum(1 for j in jumps if j >= pages - 8))
"""


def test_new_object_arenas_are_faulted_in_whole(python, workdir):
    write(workdir, "arenas.py", ARENAS)
    write(workdir, "arenamod.py", "X = 1\n")
    plan_path = os.path.join(workdir, "p.json")
    p = subprocess.run([COLDSTART, "plan", "-o", plan_path, "--", python,
                        "arenas.py"], cwd=workdir, capture_output=True,
                       text=True, timeout=300, env=_env())
    assert p.returncode == 0, p.stdout + p.stderr

    def whole(env):
        """How many steps grew by a whole arena."""
        r = subprocess.run([python, "arenas.py"], cwd=workdir, env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        return int(r.stdout)
    plain = whole(_env())
    off = whole(_env(COLDSTART_PLAN=plan_path, PYTHONPATH=BOOT,
                     COLDSTART_PLAN_PREFAULT="0"))
    applied = whole(_env(COLDSTART_PLAN=plan_path, PYTHONPATH=BOOT))
    # 12 MiB take 12 arenas (48 before 3.10); without prefaulting, a step
    # grows by a few pages, and rarely more (the heap, a list's storage).
    assert plain <= 2 and off <= 2, (plain, off)
    kernel = tuple(int(x) for x in os.uname().release.split(".")[:2]
                   if x.isdigit())
    if kernel < (5, 14):
        pytest.skip("kernel %s has no MADV_POPULATE_WRITE: arenas fault as "
                    "they are used" % os.uname().release)
    assert applied >= 8, (applied, plain)
