"""Safety of applied start-up plans (python/coldstart/plan.py) in real
interpreters: Debian's python3 and every pyenv 3.8-3.13 found.

Each case records a plan with the planning bootstrap while a script imports
a small tree of modules and uses none of them (so the plan defers them),
then runs a second script that uses them in a particular way twice: once
plainly and once with the plan applied.  The two outputs must be the same,
and the applied run must show that the module really was deferred until
then (so the test would fail without the deferral).
"""
import json
import os
import shutil
import subprocess
import textwrap

import pytest

from conftest import PLAN_VERSIONS, ROOT, archive_entries, clean_env, interpreter_params, write

PYDIR = os.path.join(ROOT, "python")
BOOT = os.path.join(PYDIR, "coldstart", "_boot", "plan")


@pytest.fixture(params=interpreter_params(PLAN_VERSIONS))
def python(request):
    return request.param


def _env(**extra):
    env = clean_env(())
    env["PYTHONPATH"] = BOOT + os.pathsep + PYDIR
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # These tests record one script and apply the plan to another.
    env["COLDSTART_PLAN_PROGRAM"] = "any"
    env.update(extra)
    return env


def _run(python, workdir, script, env, expect_rc=0):
    p = subprocess.run([python, script], cwd=workdir, capture_output=True,
                       text=True, timeout=120, env=env)
    assert p.returncode == expect_rc, p.stdout + p.stderr
    return p


def record(python, workdir, imports, eager=""):
    """Writes a plan from a run that imports `imports` and uses nothing."""
    write(workdir, "record.py", "\n".join("import %s" % m for m in imports))
    plan = os.path.join(workdir, "plan.json")
    _run(python, workdir, "record.py",
         _env(COLDSTART_PLAN_RECORD=plan, COLDSTART_PLAN_EAGER=eager))
    with open(plan) as f:
        return json.load(f)


def compare(python, workdir, code, **env):
    """Runs use.py plainly and with the plan; returns (plain, applied)
    outputs, each the JSON printed last."""
    write(workdir, "use.py", textwrap.dedent(PRELUDE) + textwrap.dedent(code))
    plain = _run(python, workdir, "use.py", _env(**env))
    applied = _run(python, workdir, "use.py", _env(
        COLDSTART_PLAN=os.path.join(workdir, "plan.json"), **env))
    assert "coldstart plan" not in applied.stderr, applied.stderr
    last = [json.loads(p.stdout.strip().splitlines()[-1])
            for p in (plain, applied)]
    return last[0], last[1]


PRELUDE = """
    import json, sys
    def deferred(name):
        m = sys.modules.get(name)
        p = sys.modules.get("coldstart.plan")
        return bool(m is not None and p is not None and p.is_deferred(m))
    def lazy_names(mod):
        p = sys.modules.get("coldstart.plan")
        return p.lazy_names(mod) if p is not None else []
"""


def action(plan, name):
    return {m["name"]: m["action"] for m in plan["modules"]}[name]


def test_class_from_deferred_module_as_base_and_isinstance(python, workdir):
    write(workdir, "shapes.py", """
        class Base(object):
            sides = 0
            def area(self):
                return 0
        class Square(Base):
            sides = 4
            def __init__(self, n):
                self.n = n
            def area(self):
                return self.n * self.n
    """)
    plan = record(python, workdir, ["shapes"])
    assert action(plan, "shapes") == "defer"
    plain, applied = compare(python, workdir, """
        import shapes
        was = deferred("shapes")
        class Tri(shapes.Base):
            sides = 3
        sq = shapes.Square(3)
        print(json.dumps({"was": was, "now": deferred("shapes"),
                          "area": sq.area(), "tri": Tri().sides,
                          "isinst": [isinstance(sq, shapes.Base),
                                     isinstance(Tri(), shapes.Square),
                                     issubclass(Tri, shapes.Base)],
                          "mro": [c.__name__ for c in Tri.__mro__]}))
    """)
    assert applied["was"] is True and applied["now"] is False
    assert plain["was"] is False
    for k in ("area", "tri", "isinst", "mro"):
        assert plain[k] == applied[k]


def test_pickling_dataclasses_enum_typing(python, workdir):
    write(workdir, "models.py", """
        import dataclasses
        import enum
        import typing

        class Color(enum.Enum):
            RED = 1
            GREEN = 2

        @dataclasses.dataclass(frozen=True)
        class Point:
            x: int
            y: int = 0
            color: Color = Color.RED

        def dist(p: Point, q: "Point") -> float:
            return ((p.x - q.x) ** 2 + (p.y - q.y) ** 2) ** 0.5

        Pair = typing.Tuple[Point, Point]
    """)
    plan = record(python, workdir, ["models"])
    assert action(plan, "models") == "defer"
    plain, applied = compare(python, workdir, """
        import pickle, dataclasses, typing
        import models
        was = deferred("models")
        p = models.Point(3, 4, models.Color.GREEN)
        back = pickle.loads(pickle.dumps(p))
        hints = typing.get_type_hints(models.dist)
        print(json.dumps({"was": was, "same": back == p,
                          "asdict": str(dataclasses.asdict(p)),
                          "colors": [c.name for c in models.Color],
                          "member": models.Color(2).name,
                          "dist": models.dist(p, models.Point(0, 0)),
                          "hints": sorted(k + ":" + getattr(v, "__name__", str(v))
                                          for k, v in hints.items()),
                          "pair": str(models.Pair)}))
    """)
    assert applied["was"] is True and plain["was"] is False
    for k in ("same", "asdict", "colors", "member", "dist", "hints", "pair"):
        assert plain[k] == applied[k], k


def test_decorator_registration_stays_eager(python, workdir):
    # plugin's body calls register() of another module: deferring it would
    # leave the registry empty, so the plan keeps it eager.
    write(workdir, "registry.py", """
        PLUGINS = {}
        def register(name):
            def deco(fn):
                PLUGINS[name] = fn
                return fn
            return deco
    """)
    write(workdir, "plugin.py", """
        import registry
        @registry.register("hello")
        def hello():
            return "hi"
    """)
    write(workdir, "quiet.py", """
        import functools
        @functools.lru_cache(maxsize=None)
        def f(x):
            return x * 2
    """)
    plan = record(python, workdir, ["registry", "plugin", "quiet"])
    assert action(plan, "plugin") == "eager"
    reasons = {m["name"]: [r["code"] for r in m["reasons"]]
               for m in plan["modules"]}
    assert "registration" in reasons["plugin"]
    assert action(plan, "quiet") == "defer"
    plain, applied = compare(python, workdir, """
        import registry, plugin, quiet
        was = deferred("quiet")
        print(json.dumps({"was": was, "plugins": sorted(registry.PLUGINS),
                          "call": registry.PLUGINS["hello"](),
                          "f": quiet.f(21)}))
    """)
    assert applied["was"] is True
    for k in ("plugins", "call", "f"):
        assert plain[k] == applied[k]


def test_circular_imports(python, workdir):
    write(workdir, "ca.py", """
        import cb
        def f():
            return "a" + cb.g()
        def h():
            return "A"
    """)
    write(workdir, "cb.py", """
        import ca
        def g():
            return "b" + ca.h()
    """)
    plan = record(python, workdir, ["ca"])
    assert action(plan, "ca") == "defer" and action(plan, "cb") == "defer"
    plain, applied = compare(python, workdir, """
        import ca
        was = deferred("ca")
        r = ca.f()
        print(json.dumps({"was": was, "r": r, "cb": deferred("cb")}))
    """)
    assert applied["was"] is True
    assert plain["r"] == applied["r"] == "abA"


def test_star_import_and_all(python, workdir):
    write(workdir, "stars.py", """
        __all__ = ["public", "ALSO"]
        def public():
            return 1
        def _private():
            return 2
        ALSO = "x"
        HIDDEN = "y"
    """)
    write(workdir, "nostar.py", """
        A = 1
        _B = 2
    """)
    plan = record(python, workdir, ["stars", "nostar"])
    assert action(plan, "stars") == "defer"
    plain, applied = compare(python, workdir, """
        import stars, nostar
        was = [deferred("stars"), deferred("nostar")]
        ns = {}
        exec("from stars import *", ns)
        ns2 = {}
        exec("from nostar import *", ns2)
        print(json.dumps({"was": was,
                          "names": sorted(k for k in ns if k != "__builtins__"),
                          "names2": sorted(k for k in ns2 if k != "__builtins__"),
                          "dir": "public" in dir(stars)}))
    """)
    assert applied["was"] == [True, True]
    for k in ("names", "names2", "dir"):
        assert plain[k] == applied[k]


def test_import_statements_and_submodules_do_not_force(python, workdir):
    write(workdir, "pkg/__init__.py", """
        TOP = "top"
    """)
    write(workdir, "pkg/sub.py", """
        def f():
            return "sub"
    """)
    write(workdir, "pkg/other.py", """
        X = 5
    """)
    plan = record(python, workdir, ["pkg.sub", "pkg.other"])
    assert action(plan, "pkg") == "defer"
    plain, applied = compare(python, workdir, """
        def ran():
            d = object.__getattribute__(sys.modules["pkg"], "__dict__")
            return "TOP" in d
        import pkg
        import pkg.sub
        from pkg import other
        import importlib
        importlib.import_module("pkg.sub")
        was = [deferred("pkg"), deferred("pkg.sub"), deferred("pkg.other"),
               ran()]
        bound = pkg.sub is sys.modules["pkg.sub"]
        r = pkg.sub.f()
        mid = [deferred("pkg"), deferred("pkg.sub"), ran()]
        print(json.dumps({"was": was, "mid": mid, "bound": bound, "r": r,
                          "other": other.X, "top": pkg.TOP, "ran": ran()}))
    """)
    assert plain["was"] == [False, False, False, True]
    assert applied["was"] == [True, True, True, False]
    assert applied["mid"] == [True, False, False]
    for k in ("bound", "r", "other", "top", "ran"):
        assert plain[k] == applied[k]


def test_from_import_binds_the_real_object(python, workdir):
    write(workdir, "lib.py", """
        class Thing(object):
            pass
        def make():
            return Thing()
    """)
    plan = record(python, workdir, ["lib"])
    assert action(plan, "lib") == "defer"
    plain, applied = compare(python, workdir, """
        import lib
        was = deferred("lib")
        from lib import Thing, make
        print(json.dumps({"was": was, "now": deferred("lib"),
                          "type": type(Thing).__name__,
                          "same": type(make()) is Thing}))
    """)
    assert applied["was"] is True and applied["now"] is False
    assert plain["type"] == applied["type"] == "type"
    assert plain["same"] is applied["same"] is True


def test_error_surfaces_at_first_use_with_its_traceback(python, workdir):
    write(workdir, "fragile.py", """
        import os
        if os.environ.get("FRAGILE_FAIL"):
            raise ValueError("fragile body failed")
        VALUE = 1
    """)
    plan = record(python, workdir, ["fragile"])
    assert action(plan, "fragile") == "defer"
    code = """
        import traceback
        out = {}
        try:
            import fragile
            out["import"] = "ok"
            out["was"] = deferred("fragile")
        except ValueError as e:
            out["import"] = str(e)
        for attempt in ("first", "second"):
            try:
                out[attempt] = fragile.VALUE
            except ValueError as e:
                tb = traceback.extract_tb(e.__traceback__)
                out[attempt] = [str(e), any(f.filename.endswith("fragile.py")
                                            for f in tb)]
            except NameError:
                out[attempt] = "unbound"
        try:
            import fragile as again
            out["reimport"] = "ok"
        except ValueError as e:
            out["reimport"] = str(e)
        print(json.dumps(out))
    """
    plain, applied = compare(python, workdir, code, FRAGILE_FAIL="1")
    assert plain["import"] == "fragile body failed"
    assert applied["import"] == "ok" and applied["was"] is True
    assert applied["first"] == ["fragile body failed", True]
    assert applied["second"] == ["fragile body failed", True]
    # A later import statement imports it afresh, as after a plain failure.
    assert applied["reimport"] == "fragile body failed"


def test_threads_run_a_deferred_body_once(python, workdir):
    write(workdir, "box.py", "RUNS = []\n")
    write(workdir, "slowbody.py", """
        import time
        import box
        box.RUNS.append(1)
        time.sleep(0.3)
        READY = True
    """)
    record(python, workdir, ["slowbody"])
    plain, applied = compare(python, workdir, """
        import threading
        import slowbody
        was = deferred("slowbody")
        seen = []
        ts = [threading.Thread(target=lambda: seen.append(slowbody.READY))
              for _ in range(4)]
        for t in ts: t.start()
        for t in ts: t.join()
        import box
        print(json.dumps({"was": was, "seen": seen, "count": len(box.RUNS)}))
    """)
    assert applied["was"] is True
    assert plain["seen"] == applied["seen"] == [True] * 4
    assert applied["count"] == 1


def test_background_warm_loads_everything_after_responded(python, workdir):
    write(workdir, "w1.py", "A = 1\n")
    write(workdir, "w2.py", "import w1\nB = 2\n")
    record(python, workdir, ["w2"])
    write(workdir, "use.py", textwrap.dedent(PRELUDE) + textwrap.dedent("""
        import time
        from coldstart import plan
        import w2
        before = plan.deferred()
        plan.responded()
        for _ in range(200):
            if not plan.deferred():
                break
            time.sleep(0.01)
        print(json.dumps({"before": before, "after": plan.deferred(),
                          "w1": deferred("w1")}))
    """))
    p = _run(python, workdir, "use.py", _env(
        COLDSTART_PLAN=os.path.join(workdir, "plan.json"),
        COLDSTART_PLAN_WARM="background"))
    d = json.loads(p.stdout.strip().splitlines()[-1])
    assert d["before"] == ["w2"]
    assert d["after"] == [] and d["w1"] is False


def test_stale_plans_are_ignored_whole(python, workdir):
    write(workdir, "m1.py", "A = 1\n")
    write(workdir, "m2.py", "B = 2\n")
    record(python, workdir, ["m1", "m2"])
    code = textwrap.dedent(PRELUDE) + textwrap.dedent("""
        import m1, m2
        print(json.dumps([deferred("m1"), deferred("m2")]))
    """)
    write(workdir, "use.py", code)
    planf = os.path.join(workdir, "plan.json")
    p = _run(python, workdir, "use.py", _env(COLDSTART_PLAN=planf))
    assert json.loads(p.stdout.strip().splitlines()[-1]) == [True, True]
    # A changed file: nothing is deferred, not even the unchanged one.
    write(workdir, "m2.py", "B = 3  # changed\n")
    p = _run(python, workdir, "use.py", _env(COLDSTART_PLAN=planf))
    assert json.loads(p.stdout.strip().splitlines()[-1]) == [False, False]
    assert "ignoring stale plan" in p.stderr and "m2" in p.stderr
    # Another interpreter's plan.
    with open(planf) as f:
        plan = json.load(f)
    plan["python"]["version"] = "2.0.0 (elsewhere)"
    with open(planf, "w") as f:
        json.dump(plan, f)
    p = _run(python, workdir, "use.py", _env(COLDSTART_PLAN=planf))
    assert json.loads(p.stdout.strip().splitlines()[-1]) == [False, False]
    assert "another interpreter" in p.stderr
    # Not a plan at all.
    with open(planf, "w") as f:
        f.write("{not json")
    p = _run(python, workdir, "use.py", _env(COLDSTART_PLAN=planf))
    assert json.loads(p.stdout.strip().splitlines()[-1]) == [False, False]
    assert "is not JSON" in p.stderr


def test_shadowing_file_makes_the_plan_stale(python, workdir):
    write(workdir, "lib/shadowme.py", "WHO = 'lib'\n")
    write(workdir, "record.py", "import sys, os\n"
          "sys.path.append(os.path.join(os.getcwd(), 'lib'))\n"
          "import shadowme\n")
    planf = os.path.join(workdir, "plan.json")
    _run(python, workdir, "record.py", _env(COLDSTART_PLAN_RECORD=planf))
    write(workdir, "use.py", textwrap.dedent(PRELUDE) + textwrap.dedent("""
        import os
        sys.path.append(os.path.join(os.getcwd(), "lib"))
        import shadowme
        print(json.dumps([deferred("shadowme"), shadowme.WHO]))
    """))
    p = _run(python, workdir, "use.py", _env(COLDSTART_PLAN=planf))
    assert json.loads(p.stdout.strip().splitlines()[-1]) == [True, "lib"]
    # shadowme.py in the script's directory comes before lib/ on sys.path:
    # the plan must not answer from lib/ any more.
    write(workdir, "shadowme.py", "WHO = 'front'\n")
    p = _run(python, workdir, "use.py", _env(COLDSTART_PLAN=planf))
    assert json.loads(p.stdout.strip().splitlines()[-1]) == [False, "front"]
    assert "ignoring stale plan" in p.stderr and "shadowme" in p.stderr


def test_native_extensions_and_effects_stay_eager(python, workdir):
    write(workdir, "writes.py", """
        import os
        with open(os.path.join(os.path.dirname(__file__), "log.txt"), "w") as f:
            f.write("hello")
    """)
    write(workdir, "exits.py", """
        import atexit
        atexit.register(lambda: None)
    """)
    plan = record(python, workdir, ["writes", "exits", "decimal", "ctypes",
                                    "json"], eager="json")
    mods = {m["name"]: m for m in plan["modules"]}
    assert mods["writes"]["action"] == "eager"
    # Its atexit function runs at exit, before a run-to-exit plan ends, so
    # it may be "used" as well; either way it is not deferred.
    assert mods["exits"]["action"] in ("eager", "load")
    assert any(r["code"] == "registration" for r in mods["exits"]["reasons"])
    assert mods["json"]["action"] == "eager"
    assert any(r["code"] == "pinned" for r in mods["json"]["reasons"])
    exts = [m for m in plan["modules"] if m["kind"] == "extension"]
    assert exts, "no native extension was imported"
    assert all(m["action"] != "defer" for m in exts)
    for m in plan["modules"]:
        if m["kind"] in ("source", "bytecode", "extension"):
            assert os.path.isabs(m["path"]) and m["size"] > 0


def test_coldstart_run_applies_a_plan(python, workdir):
    write(workdir, "big.py", "X = 41\n")
    write(workdir, "app.py", textwrap.dedent(PRELUDE) + textwrap.dedent("""
        import big
        print(json.dumps({"was": deferred("big"), "x": big.X + 1,
                          "argv": sys.argv[1:]}))
    """))
    record(python, workdir, ["big"])
    env = _env()
    env["PYTHONPATH"] = PYDIR
    p = subprocess.run([python, "-m", "coldstart.run", "--plan",
                        os.path.join(workdir, "plan.json"), "app.py", "a1"],
                       cwd=workdir, capture_output=True, text=True,
                       timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout.strip().splitlines()[-1])
    assert d == {"was": True, "x": 42, "argv": ["a1"]}
    p = subprocess.run([python, "-m", "coldstart.run", "--warm", "sideways",
                        "app.py"], cwd=workdir, capture_output=True,
                       text=True, timeout=60, env=env)
    assert p.returncode == 2 and "off or background" in p.stderr


def test_pep810_filter_names_the_deferred_imports(python, workdir):
    # The plan drives PEP 810's sys.set_lazy_imports_filter on 3.15+; the
    # filter itself is plain Python and checked here on every interpreter.
    write(workdir, "lazy1.py", "A = 1\n")
    write(workdir, "busy.py", """
        import lazy1
        import atexit
        atexit.register(print, "")
    """)
    plan = record(python, workdir, ["busy"])
    write(workdir, "use.py", """
        import json, sys
        from coldstart import plan
        p = plan.read(sys.argv[1])
        f = plan.lazy_imports_filter(p)
        g = plan.lazy_imports_filter(p, strict=True)
        print(json.dumps([f("__main__", "lazy1", None), f("x", "busy", None),
                          f("x", "os", ("path",)), g("x", "busy", None)]))
    """)
    p = subprocess.run([python, "use.py", os.path.join(workdir, "plan.json")],
                       cwd=workdir, capture_output=True, text=True,
                       timeout=60, env=_env())
    assert p.returncode == 0, p.stderr
    assert action(plan, "busy") == "eager"
    assert json.loads(p.stdout) == [True, False, False, True]


def test_package_that_rebinds_a_submodule_name(python, workdir):
    # dateutil.parser does `from .isoparser import isoparser`: once the
    # package has run, pkg.isoparser is the class, not the submodule.
    write(workdir, "rpkg/__init__.py", "from .thing import thing\n")
    write(workdir, "rpkg/thing.py", "def thing():\n    return 'function'\n")
    plan = record(python, workdir, ["rpkg"])
    mods = {m["name"]: m for m in plan["modules"]}
    assert mods["rpkg"]["rebinds"] == ["thing"]
    assert mods["rpkg"]["action"] == "defer"
    plain, applied = compare(python, workdir, """
        import rpkg.thing
        was = deferred("rpkg")
        from rpkg import thing
        print(json.dumps({"was": was, "kind": type(thing).__name__,
                          "call": thing() if callable(thing) else None,
                          "attr": type(rpkg.thing).__name__}))
    """)
    assert applied["was"] is True and plain["was"] is False
    for k in ("kind", "call", "attr"):
        assert plain[k] == applied[k], k
    assert applied["kind"] == "function"


def _copy_extension(python, workdir, pkg):
    """Copies a native extension of the interpreter's own library into
    package pkg (its init function keeps its name, so it imports as
    pkg.<name>); returns that name."""
    p = subprocess.run([python, "-c", textwrap.dedent("""
        import importlib, importlib.machinery as m
        for n in ("_json", "_bisect", "_csv", "_struct", "array", "_heapq"):
            f = getattr(importlib.import_module(n), "__file__", None) or ""
            if f.endswith(tuple(m.EXTENSION_SUFFIXES)):
                print(n, f)
                break
    """)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip(), \
        "no file extension among the candidates: " + p.stdout + p.stderr
    name, path = p.stdout.split()
    os.makedirs(os.path.join(workdir, pkg), exist_ok=True)
    shutil.copy(path, os.path.join(workdir, pkg, os.path.basename(path)))
    return name


def test_package_of_a_native_extension_it_imports_itself_is_deferred(
        python, workdir):
    ext = _copy_extension(python, workdir, "natpkg")
    # The package's body imports the extension: nothing else does, so
    # deferring the package defers the extension too.
    write(workdir, "natpkg/__init__.py", """
        import sys
        BEFORE = "natpkg.%s" in sys.modules
        from . import %s as ext
    """ % (ext, ext))
    plan = record(python, workdir, ["natpkg"])
    assert action(plan, "natpkg") == "defer"
    assert action(plan, "natpkg." + ext) == "eager"
    plain, applied = compare(python, workdir, """
        import natpkg
        was = [deferred("natpkg"), "natpkg.%s" in sys.modules]
        # Importing the extension itself runs the package's body first, as
        # without the plan: the body sees it not imported yet.
        import natpkg.%s
        e = sys.modules["natpkg.%s"]
        mid = deferred("natpkg")
        print(json.dumps({"was": was, "mid": mid, "before": natpkg.BEFORE,
                          "same": natpkg.ext is e and natpkg.%s is e,
                          "spec": e.__spec__.name,
                          "loader": type(e.__spec__.loader).__name__}))
    """ % (ext, ext, ext, ext))
    assert plain["was"] == [False, True]
    assert applied["was"] == [True, False]
    assert applied["mid"] is False
    for k in ("before", "same", "spec", "loader"):
        assert plain[k] == applied[k], (k, plain, applied)
    assert plain["before"] is False and plain["same"] is True


def test_native_extension_imported_from_outside_keeps_its_package(
        python, workdir):
    ext = _copy_extension(python, workdir, "natout")
    write(workdir, "natout/__init__.py", """
        X = 1
    """)
    write(workdir, "user.py", """
        import natout.%s
    """ % ext)
    plan = record(python, workdir, ["user"])
    assert action(plan, "natout") == "eager"
    assert any(r["code"] == "native-parent" for r in {
        m["name"]: m for m in plan["modules"]}["natout"]["reasons"])


def test_registering_an_abc_subclass_again_does_not_keep_eager(
        python, workdir):
    # Cython's runtime registers the builtin generator type with
    # collections.abc.Generator, which it already is a subclass of: a
    # no-op, so nothing can see it deferred.  A real registration stays.
    write(workdir, "noop.py", """
        import collections.abc, types
        collections.abc.Generator.register(types.GeneratorType)
    """)
    write(workdir, "real.py", """
        import collections.abc, types
        collections.abc.Sequence.register(types.SimpleNamespace)
    """)
    plan = record(python, workdir, ["noop", "real"])
    assert action(plan, "noop") == "defer"
    assert action(plan, "real") == "eager"


def test_defer_then_runs_after_right_after_the_body(python, workdir):
    write(workdir, "late.py", """
        import sys
        ORDER = ["body"]
        def f():
            return ORDER
    """)
    write(workdir, "use.py", """
        import json, sys
        from coldstart import plan
        seen = []
        def after():
            # Part of the import: the module is complete, nobody used it yet.
            seen.append(list(sys.modules["late"].ORDER))
            sys.modules["late"].ORDER.append("after")
        ok = plan.defer_then("late", after)
        again = plan.defer_then("late", lambda: seen.append("second"))
        import late
        was = [plan.is_deferred(late), seen[:]]
        r = late.f()
        try:
            plan.defer_then("os.path", after)
            dotted = None
        except ValueError as e:
            dotted = "ValueError"
        print(json.dumps({"ok": ok, "again": again, "was": was, "r": r,
                          "seen": seen, "loaded": plan.is_deferred(late),
                          "imported": plan.defer_then("json", after),
                          "builtin": plan.defer_then("sys", after),
                          "dotted": dotted}))
    """)
    p = _run(python, workdir, "use.py", _env())
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out == {"ok": True, "again": True, "was": [True, []],
                   "r": ["body", "after"], "seen": [["body"], "second"],
                   "loaded": False, "imported": False, "builtin": False,
                   "dotted": "ValueError"}


def test_all_of_a_deferred_module_is_answered_from_the_plan(python,
                                                           workdir):
    # pkg's body reads its submodules' __all__ (as numpy.lib does): the
    # plan answers those without running the submodules; the list a read
    # got is the module's __all__ once its body runs.
    write(workdir, "pkg/__init__.py", """
        from . import sub, tup
        __all__ = ["top"]
        __all__ += sub.__all__
        __all__ += list(tup.__all__)
        top = 1
    """)
    write(workdir, "pkg/sub.py", """
        __all__ = ["f", "g"]
        def f():
            return "f"
        def g():
            return "g"
    """)
    write(workdir, "pkg/tup.py", "__all__ = ('h',)\ndef h():\n    return 3\n")
    write(workdir, "mutated.py", '__all__ = ["x"]\nx = 1\n')
    write(workdir, "mutator.py", """
        import mutated
        mutated.__all__.append("y")
        mutated.y = 2
    """)
    plan = record(python, workdir, ["pkg", "mutator"])
    assert plan["all"]["pkg.sub"] == ["f", "g"]
    assert plan["all"]["pkg.tup"] == {"tuple": ["h"]}
    # Changed after its body ended: the plan does not answer it.
    assert "mutated" not in plan["all"]
    plain, applied = compare(python, workdir, """
        import pkg, mutator, mutated
        top = pkg.__all__
        was = [deferred("pkg"), deferred("pkg.sub"), deferred("pkg.tup")]
        got = pkg.sub.__all__
        again = pkg.sub.__all__ is got
        was.append(deferred("pkg.sub"))
        r = pkg.sub.f()
        m = [mutator.mutated.__name__, mutated.__all__, deferred("mutated")]
        print(json.dumps({"top": top, "was": was, "again": again, "r": r,
                          "same": pkg.sub.__all__ is got,
                          "tup": [list(pkg.tup.__all__),
                                  type(pkg.tup.__all__).__name__],
                          "m": m}))
    """)
    assert applied["was"] == [False, True, True, True]
    assert plain["was"] == [False, False, False, False]
    for k in ("top", "again", "r", "same", "tup", "m"):
        assert plain[k] == applied[k], k
    assert applied["same"] is True and applied["m"][1] == ["x", "y"]


def test_an_all_that_changed_since_planning_warns_and_keeps_the_body_s(
        python, workdir):
    write(workdir, "dyn.py", """
        import os
        __all__ = ["a"] + (["b"] if os.environ.get("DYN_B") else [])
        a = b = 1
    """)
    write(workdir, "reader.py", "import dyn\nNAMES = list(dyn.__all__)\n")
    plan = record(python, workdir, ["reader"])
    assert plan["all"]["dyn"] == ["a"]
    write(workdir, "use.py", textwrap.dedent(PRELUDE) + textwrap.dedent("""
        import dyn
        early = list(dyn.__all__)
        dyn.a
        print(json.dumps({"early": early, "late": dyn.__all__}))
    """))
    p = _run(python, workdir, "use.py", _env(
        COLDSTART_PLAN=os.path.join(workdir, "plan.json"), DYN_B="1"))
    out = json.loads(p.stdout.strip().splitlines()[-1])
    # Read before the body ran: the plan's answer (a known limit, which
    # `coldstart plan --verify` guards against); after: the body's, said.
    assert out == {"early": ["a"], "late": ["a", "b"]}
    assert "dyn's __all__ is not the one the plan recorded" in p.stderr


def test_planned_regular_expressions_skip_the_parser(python, workdir):
    # Patterns compiled while planning are compiled from the plan's regex
    # table (one _sre.compile call each); the pattern objects behave the
    # same.  A pattern whose compiling warned is not in the table: its
    # warning shows again.
    write(workdir, "pats.py", '''
        import re
        WORD = re.compile(r"(?P<word>\\w+)-(\\d+)", re.I)
        RAW = re.compile(rb"^(ab|cd)+$")
        KV = re.compile(r"""
            (?P<k>[a-z]+)   # key
            =(?P<v>.*)      # value
        """, re.X)
        def use(s):
            return WORD.match(s).groupdict()
    ''')
    write(workdir, "warned.py", 'import re\nNESTED = re.compile("[[a]")\n')
    plan = record(python, workdir, ["pats", "warned"])
    assert plan["code"]["regex"][2] >= 3
    plain, applied = compare(python, workdir, """
        import re, warnings
        parser = sys.modules["re._parser" if sys.version_info >= (3, 11)
                             else "sre_parse"]
        calls = []
        orig = parser.parse
        def parse(p, *a, **k):
            calls.append(p if isinstance(p, str) else repr(p))
            return orig(p, *a, **k)
        parser.parse = parse
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            import pats, warned
            got = pats.use("Ab-12")
            nested = warned.NESTED.pattern
        out = {"calls": calls, "got": got,
               "warned": [x.category.__name__ for x in w],
               "word": [pats.WORD.pattern, pats.WORD.flags, pats.WORD.groups,
                        dict(pats.WORD.groupindex)],
               "raw": [bool(pats.RAW.match(b"abcd")),
                       bool(pats.RAW.match(b"abc")), pats.RAW.flags],
               "kv": [pats.KV.match("key=val").groupdict(), pats.KV.flags],
               "same": re.compile(r"(?P<word>\\w+)-(\\d+)", re.I) is pats.WORD,
               "nested": nested}
        print(json.dumps(out))
    """)
    assert plain["calls"] != [] and "[[a]" in plain["calls"]
    # Only the pattern that warned goes through the parser with the plan.
    assert applied["calls"] == ["[[a]"]
    assert applied["warned"] == plain["warned"] == ["FutureWarning"]
    for k in ("got", "word", "raw", "kv", "same", "nested"):
        assert plain[k] == applied[k], k
    # The compiler already loaded when the plan is installed: hooked then.
    write(workdir, "early.py", textwrap.dedent("""
        import json, re, sys
        compiler = sys.modules["re._compiler" if sys.version_info >= (3, 11)
                               else "sre_compile"]
        before = compiler.compile
        from coldstart import plan
        plan.install(sys.argv[1])
        parser = sys.modules["re._parser" if sys.version_info >= (3, 11)
                             else "sre_parse"]
        calls = []
        orig = parser.parse
        parser.parse = lambda p, *a, **k: calls.append(p) or orig(p, *a, **k)
        w = re.compile(r"(?P<word>\\w+)-(\\d+)", re.I)
        print(json.dumps({"hooked": compiler.compile is not before,
                          "calls": calls, "m": w.match("x-1").groups()}))
    """))
    env = _env()
    env["PYTHONPATH"] = PYDIR
    p = subprocess.run([python, "early.py", os.path.join(workdir,
                                                          "plan.json")],
                       cwd=workdir, capture_output=True, text=True,
                       timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {"hooked": True, "calls": [],
                                    "m": ["x", "1"]}


def test_replaced_modules_and_aliased_specs_are_indexed(python, workdir):
    # cryptography replaces a module in sys.modules by a wrapper whose
    # __spec__ is None, six.moves gives the module it aliases a spec of its
    # own: the plan still indexes each module's own file, as eager (a module
    # of another class) or as planned, and the applied run answers both from
    # the plan with the same objects.
    write(workdir, "wrapped.py", """
        import sys, types
        VALUE = 7
        class _Wrapper(types.ModuleType):
            def __init__(self, real):
                types.ModuleType.__init__(self, real.__name__)
                self.__dict__["_real"] = real
            def __getattr__(self, attr):
                return getattr(self.__dict__["_real"], attr)
        sys.modules[__name__] = _Wrapper(sys.modules[__name__])
    """)
    write(workdir, "aliased.py", "VALUE = 8\n")
    write(workdir, "aliaser.py", """
        import importlib.util, sys
        import aliased
        # What six.moves does: another name's spec on the same module.
        alias = importlib.util.spec_from_loader("moves_aliased", None)
        sys.modules["aliased"].__spec__ = alias
        sys.modules["moves_aliased"] = sys.modules["aliased"]
    """)
    plan = record(python, workdir, ["wrapped", "aliaser"])
    mods = {m["name"]: m for m in plan["modules"]}
    for name in ("wrapped", "aliased"):
        assert mods[name]["kind"] == "source", mods[name]
        assert mods[name]["path"] == os.path.join(workdir, name + ".py")
    assert mods["wrapped"]["action"] == "eager"
    assert [r["code"] for r in mods["wrapped"]["reasons"]] == ["module-class"]
    indexed = {row[0] for row in plan["index"]}
    assert {"wrapped", "aliased"} <= indexed
    plain, applied = compare(python, workdir, """
        import wrapped, aliaser, aliased
        p = sys.modules.get("coldstart.plan")
        fin = p.installed() if p is not None else None
        print(json.dumps({"values": [wrapped.VALUE, aliased.VALUE],
                          "types": [type(wrapped).__name__,
                                    type(sys.modules["wrapped"]).__name__],
                          "answered": fin.answered if fin else 0}))
    """)
    assert plain["values"] == applied["values"] == [7, 8]
    assert plain["types"] == applied["types"]
    assert applied["answered"] >= 3 and plain["answered"] == 0


def test_a_new_sys_path_entry_holding_a_planned_name_wins(python, workdir):
    """A plan only shortens the search: a sys.path entry the plan did not
    have (PYTHONPATH here, an insert at run time below) that holds a
    planned module's name is where the module comes from, as without the
    plan."""
    write(workdir, "lib/helper.py", "WHO = 'lib'\n")
    write(workdir, "record.py", "import sys, os\n"
          "sys.path.append(os.path.join(os.getcwd(), 'lib'))\n"
          "import helper, textwrap\n")
    planf = os.path.join(workdir, "plan.json")
    _run(python, workdir, "record.py", _env(COLDSTART_PLAN_RECORD=planf))
    write(workdir, "front/textwrap.py", "WHO = 'pythonpath'\n")
    write(workdir, "early/helper.py", "WHO = 'inserted'\n")
    write(workdir, "use.py", textwrap.dedent(PRELUDE) + textwrap.dedent("""
        import os
        sys.path.append(os.path.join(os.getcwd(), "lib"))
        import textwrap
        sys.path.insert(0, os.path.join(os.getcwd(), "early"))
        import helper
        p = sys.modules.get("coldstart.plan")
        print(json.dumps([getattr(textwrap, "WHO", "stdlib"), helper.WHO,
                          bool(p and p.installed())]))
    """))
    env = _env(COLDSTART_PLAN=planf)
    env["PYTHONPATH"] = env["PYTHONPATH"] + os.pathsep + \
        os.path.join(workdir, "front")
    p = _run(python, workdir, "use.py", env)
    assert json.loads(p.stdout.strip().splitlines()[-1]) == \
        ["pythonpath", "inserted", True], p.stderr
    assert "coldstart plan" not in p.stderr, p.stderr


def test_what_cannot_be_imported_does_not_make_a_plan_stale(python, workdir):
    """An extensionless file (a console script beside the program, as
    /usr/bin/lzma beside /usr/bin/tool) or a directory without __init__
    that appears in the program's directory is not a module: the plan
    stays applied, without a warning."""
    write(workdir, "app/prog.py", "import textwrap, json\n")
    planf = os.path.join(workdir, "plan.json")
    _run(python, os.path.join(workdir, "app"), "prog.py",
         _env(COLDSTART_PLAN_RECORD=planf))
    write(workdir, "app/prog.py", textwrap.dedent(PRELUDE) + textwrap.dedent("""
        import textwrap, json
        print(json.dumps(deferred("textwrap")))
    """))
    write(workdir, "app/textwrap", "#!/bin/sh\necho a console script\n")
    os.makedirs(os.path.join(workdir, "app", "json"))
    p = _run(python, os.path.join(workdir, "app"), "prog.py",
             _env(COLDSTART_PLAN=planf))
    assert "coldstart plan" not in p.stderr, p.stderr
    assert json.loads(p.stdout.strip().splitlines()[-1]) is True


def test_an_edit_keeping_size_and_mtime_is_noticed(python, workdir):
    """`cp -p`, `touch -r`: the file's size and mtime are the recorded
    ones, its bytes are not; the archived code of the old bytes must not
    run."""
    write(workdir, "conf.py", "VALUE = 'old'\n")
    plan = record(python, workdir, ["conf"])
    assert archive_entries(plan["code"])[[r[0] for r in plan["index"]].index("conf")]
    st = os.stat(os.path.join(workdir, "conf.py"))
    write(workdir, "conf.py", "VALUE = 'new'\n")
    os.utime(os.path.join(workdir, "conf.py"), ns=(st.st_atime_ns, st.st_mtime_ns))
    write(workdir, "use.py", textwrap.dedent(PRELUDE) + textwrap.dedent("""
        import conf
        print(json.dumps(conf.VALUE))
    """))
    p = _run(python, workdir, "use.py",
             _env(COLDSTART_PLAN=os.path.join(workdir, "plan.json")))
    assert json.loads(p.stdout.strip().splitlines()[-1]) == "new", p.stderr
    assert "conf" in p.stderr and "changed since the plan was made" in \
        p.stderr, p.stderr
    # A copy with the same bytes (new inode and ctime) is the same file.
    write(workdir, "conf.py", "VALUE = 'old'\n")
    os.utime(os.path.join(workdir, "conf.py"), ns=(st.st_atime_ns, st.st_mtime_ns))
    p = _run(python, workdir, "use.py",
             _env(COLDSTART_PLAN=os.path.join(workdir, "plan.json")))
    assert json.loads(p.stdout.strip().splitlines()[-1]) == "old", p.stderr
    assert "coldstart plan" not in p.stderr, p.stderr
