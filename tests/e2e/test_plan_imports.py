"""The import of planned modules under an applied plan
(python/coldstart/_plan_import.h, fast_imports(); docs/plan.md "The import of
a planned module") in real interpreters: Debian's python3 and every pyenv
3.8-3.13 found.

A recording run imports and uses a small tree of modules (so the plan loads
them), then use.py does something import-related with them twice: plainly
and with the plan.  Everything it prints must be the same, tracebacks and
the order of sys.modules included, and the applied run must show that the
plan's own import did the work (importlib's _find_and_load is the
extension's), so each test would fail without it.
"""
import json
import os
import subprocess
import textwrap

import pytest

from conftest import COLDSTART, PLAN_VERSIONS, clean_env, interpreter_params, write
from test_plan_apply import _env, _run


@pytest.fixture(params=interpreter_params(PLAN_VERSIONS))
def python(request):
    return request.param


def record_using(python, workdir, code):
    """Plans a run of code (which imports and uses modules) with `coldstart
    plan`, which builds the plan's extension; returns the plan."""
    write(workdir, "record.py", code)
    plan = os.path.join(workdir, "plan.json")
    env = clean_env()
    p = subprocess.run([COLDSTART, "plan", "-o", plan, "--", python,
                        "record.py"], cwd=workdir, capture_output=True,
                       text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    with open(plan) as f:
        return json.load(f)


PRELUDE = """
    import json, sys
    fl = sys.modules["_frozen_importlib"]._find_and_load
    FAST = type(fl).__name__ == "builtin_function_or_method"
"""


def compare(python, workdir, code, **env):
    """Runs use.py plainly and with the plan: (plain, applied) JSON, and
    asserts the applied run went through the plan's import."""
    write(workdir, "use.py", textwrap.dedent(PRELUDE) + textwrap.dedent(code) +
          "\nout['fast'] = FAST\nprint(json.dumps(out))\n")
    plain = _run(python, workdir, "use.py", _env(**env))
    applied = _run(python, workdir, "use.py", _env(
        COLDSTART_PLAN=os.path.join(workdir, "plan.json"), **env))
    assert "coldstart plan" not in applied.stderr, applied.stderr
    p, a = [json.loads(x.stdout.strip().splitlines()[-1])
            for x in (plain, applied)]
    assert p.pop("fast") is False
    assert a.pop("fast") is True
    return p, a


def test_attributes_order_and_parents_are_importlibs(python, workdir):
    write(workdir, "pkg/__init__.py", "P = 1\n")
    write(workdir, "pkg/sub.py", "S = 2\n")
    write(workdir, "pkg/inner/__init__.py", "I = 3\n")
    write(workdir, "pkg/inner/leaf.py", "L = 4\n")
    write(workdir, "top.py", "T = 5\n")
    plan = record_using(python, workdir, """
        import pkg.sub, pkg.inner.leaf, top
        print(pkg.P, pkg.sub.S, pkg.inner.I, pkg.inner.leaf.L, top.T)
    """)
    actions = {m["name"]: m["action"] for m in plan["modules"]}
    assert all(actions[m] == "load" for m in
               ("pkg", "pkg.sub", "pkg.inner", "pkg.inner.leaf", "top"))
    plain, applied = compare(python, workdir, """
        before = list(sys.modules)
        import pkg.inner.leaf
        import top, pkg.sub
        names = ["pkg", "pkg.inner", "pkg.inner.leaf", "top", "pkg.sub"]
        out = {"new": [n for n in sys.modules if n not in before],
               "bound": [pkg.inner is sys.modules["pkg.inner"],
                         pkg.inner.leaf is sys.modules["pkg.inner.leaf"],
                         pkg.sub is sys.modules["pkg.sub"]],
               "attrs": {}}
        for n in names:
            m = sys.modules[n]
            s = m.__spec__
            out["attrs"][n] = [list(vars(m))[:8], m.__name__, m.__package__,
                               m.__file__, m.__cached__,
                               getattr(m, "__path__", None), s.name,
                               s.origin, s.parent, s.has_location,
                               s.submodule_search_locations,
                               getattr(s, "_initializing", False),
                               m.__loader__ is s.loader]
    """)
    assert plain == applied
    assert plain["new"] == ["pkg", "pkg.inner", "pkg.inner.leaf", "top",
                            "pkg.sub"]
    assert plain["bound"] == [True, True, True]


def test_a_failing_body_has_the_same_traceback_and_leaves_sys_modules(
        python, workdir):
    write(workdir, "fragile.py", """
        import os
        def check():
            if os.environ.get("FRAGILE_FAIL"):
                raise ValueError("fragile failed")
        check()
        V = 1
    """)
    write(workdir, "outer.py", "import fragile\nW = fragile.V\n")
    plan = record_using(python, workdir, "import outer, fragile\n"
                        "fragile.check()\nprint(outer.W)\n")
    actions = {m["name"]: m["action"] for m in plan["modules"]}
    assert actions["outer"] == actions["fragile"] == "load"
    plain, applied = compare(python, workdir, """
        import traceback
        out = {"tb": [], "in": []}
        for _ in range(2):
            try:
                import outer
            except ValueError:
                out["tb"].append(traceback.format_exc())
            out["in"].append(["outer" in sys.modules,
                              "fragile" in sys.modules])
    """, FRAGILE_FAIL="1")
    assert plain == applied
    assert plain["in"] == [[False, False], [False, False]]
    tb = plain["tb"][0]
    assert "fragile failed" in tb and 'outer.py", line 1' in tb
    assert "importlib" not in tb and "coldstart" not in tb


def test_a_body_that_replaces_itself_is_the_answer(python, workdir):
    write(workdir, "pkg/__init__.py", "")
    write(workdir, "pkg/swap.py", """
        import sys
        class Swapped(object):
            VALUE = 9
        sys.modules[__name__] = Swapped()
    """)
    record_using(python, workdir, "import pkg.swap\nprint(pkg.swap.VALUE)\n")
    plain, applied = compare(python, workdir, """
        import pkg.swap
        from pkg import swap
        out = {"v": [pkg.swap.VALUE, swap.VALUE],
               "same": [swap is sys.modules["pkg.swap"], pkg.swap is swap],
               "type": type(swap).__name__,
               "last": list(sys.modules)[-1]}
    """)
    assert plain == applied
    assert plain["same"] == [True, True] and plain["last"] == "pkg.swap"


def test_threads_importing_one_module_wait_for_its_body(python, workdir):
    write(workdir, "slow.py", """
        import time
        RUNS = []
        RUNS.append(1)
        time.sleep(0.3)
        DONE = True
    """)
    record_using(python, workdir, "import slow\nprint(slow.DONE)\n")
    plain, applied = compare(python, workdir, """
        import threading
        seen = []
        def worker():
            import slow
            seen.append([getattr(slow, "DONE", False), len(slow.RUNS)])
        ts = [threading.Thread(target=worker) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        out = {"seen": sorted(seen)}
    """)
    assert plain == applied
    assert applied["seen"] == [[True, 1]] * 4


def test_circular_imports_see_the_partial_module(python, workdir):
    write(workdir, "ca.py", """
        import cb
        A = "a" + cb.PARTIAL
    """)
    write(workdir, "cb.py", """
        import ca
        PARTIAL = str(hasattr(ca, "A"))
        def late():
            return ca.A
    """)
    record_using(python, workdir, "import ca, cb\nprint(ca.A, cb.late())\n")
    plain, applied = compare(python, workdir, """
        import ca, cb
        out = {"a": ca.A, "late": cb.late(), "order": [n for n in sys.modules
                                                        if n in ("ca", "cb")]}
    """)
    assert plain == applied and plain["a"] == "aFalse"


def test_verbose_mode_reports_each_import(python, workdir):
    write(workdir, "loud.py", "X = 1\n")
    record_using(python, workdir, "import loud\nprint(loud.X)\n")
    write(workdir, "use.py", "import loud\nprint(loud.X)\n")
    env = _env(COLDSTART_PLAN=os.path.join(workdir, "plan.json"))
    p = subprocess.run([python, "-v", "use.py"], cwd=workdir, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert [ln for ln in p.stderr.splitlines()
            if ln.startswith("import 'loud' # ")], p.stderr[-2000:]


def test_a_parent_that_refuses_the_child_attribute(python, workdir):
    write(workdir, "pkg/__init__.py", """
        import sys, types
        class Strict(types.ModuleType):
            def __setattr__(self, name, value):
                if name == "sub":
                    raise AttributeError("no")
                types.ModuleType.__setattr__(self, name, value)
        sys.modules[__name__].__class__ = Strict
    """)
    write(workdir, "pkg/sub.py", "S = 1\n")
    record_using(python, workdir, """
        import warnings
        warnings.simplefilter("ignore")
        try:
            import pkg.sub
            print(sys.modules["pkg.sub"].S)
        except AttributeError:
            pass
    """.replace("import warnings", "import sys, warnings"))
    plain, applied = compare(python, workdir, """
        import warnings
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            try:
                import pkg.sub
                err = None
            except AttributeError as e:
                err = str(e)
        out = {"err": err, "warned": [str(w.message) for w in ws
                                      if w.category is ImportWarning],
               "in": "pkg.sub" in sys.modules}
    """)
    assert plain == applied
    if sys_version(python) >= (3, 9):
        assert plain["err"] is None and len(plain["warned"]) == 1
    else:
        assert plain["err"] == "no"


def sys_version(python):
    p = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                       capture_output=True, text=True)
    return tuple(int(x) for x in p.stdout.split())


def test_turned_off_importlib_imports(python, workdir):
    write(workdir, "plain.py", "X = 1\n")
    record_using(python, workdir, "import plain\nprint(plain.X)\n")
    write(workdir, "use.py", textwrap.dedent(PRELUDE) +
          "import plain\nprint(FAST, plain.X)\n")
    p = _run(python, workdir, "use.py", _env(
        COLDSTART_PLAN=os.path.join(workdir, "plan.json"),
        COLDSTART_PLAN_FAST="0"))
    assert p.stdout.split() == ["False", "1"]
