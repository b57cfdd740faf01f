"""Tests of coldstart.lazy in real interpreters (Debian's python3 and every
pyenv 3.8+): each test runs a small script in a fresh process with python/
on PYTHONPATH, so sys.modules and import state start clean.
"""
import json
import os
import subprocess
import textwrap

import pytest

from conftest import ROOT, interpreter_params, write  # workdir: a conftest fixture

PYDIR = os.path.join(ROOT, "python")
WANTED = ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13"]


def _interpreters():
    return interpreter_params(WANTED)


@pytest.fixture(params=_interpreters())
def python(request):
    return request.param


def run(python, workdir, code, expect_rc=0):
    """Runs code in workdir; returns the JSON it printed last."""
    p = subprocess.run([python, "-c", textwrap.dedent(code)], cwd=workdir,
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=PYDIR,
                                PYTHONDONTWRITEBYTECODE="1"))
    assert p.returncode == expect_rc, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


COUNTING = """
    import os, time
    with open(os.path.join(os.path.dirname(__file__), "count.txt"), "a") as f:
        f.write("x")
    time.sleep(float(os.environ.get("LAZY_SLEEP", "0")))
    gate = os.path.join(os.path.dirname(__file__), "gate")
    if os.environ.get("LAZY_GATE") and not os.path.exists(gate):
        raise RuntimeError("gate closed")
    VALUE = 42
    def handler(ctx, data=None):
        return ("handled", ctx, data)
    NOT_CALLABLE = 3
"""


def test_importing_lazy_imports_nothing_else(python, workdir):
    d = run(python, workdir, """
        import sys, json
        before = set(sys.modules)
        import coldstart.lazy
        print(json.dumps(sorted(set(sys.modules) - before)))
    """)
    assert d == ["coldstart", "coldstart.lazy"]


def test_file_loads_on_first_use_with_import_identity(python, workdir):
    path = write(workdir, "func.py", COUNTING)
    d = run(python, workdir, """
        import sys, os, json
        from coldstart import lazy
        m = lazy.module(%r)
        before = os.path.exists("count.txt")
        loaded_before = m.loaded
        mod = m.get()
        again = m.get()
        print(json.dumps({
            "before": before, "loaded_before": loaded_before,
            "loaded": m.loaded, "name": mod.__name__, "file": mod.__file__,
            "same": mod is again, "registered": sys.modules.get("func") is mod,
            "count": open("count.txt").read(), "value": mod.VALUE,
            "attempts": m.attempts, "path0": sys.path[0]}))
    """ % path)
    assert d["before"] is False and d["loaded_before"] is False
    assert d["loaded"] is True
    assert d["name"] == "func"
    assert d["file"] == path
    assert d["same"] and d["registered"]
    assert d["count"] == "x"
    assert d["value"] == 42 and d["attempts"] == 1
    assert d["path0"] == workdir


def test_relative_path_and_custom_name(python, workdir):
    write(workdir, "sub/handler_file.py", "X = __name__\n")
    d = run(python, workdir, """
        import json, sys
        from coldstart import lazy
        m = lazy.module("sub/handler_file.py", name="customer_code")
        mod = m.get()
        print(json.dumps([mod.X, mod.__file__, "customer_code" in sys.modules]))
    """)
    assert d == ["customer_code", os.path.join(workdir, "sub", "handler_file.py"),
                 True]


def test_concurrent_first_use_imports_once(python, workdir):
    path = write(workdir, "func.py", COUNTING)
    d = run(python, workdir, """
        import json, os, threading
        os.environ["LAZY_SLEEP"] = "0.3"
        from coldstart import lazy
        m = lazy.module(%r)
        got = []
        def worker():
            got.append(id(m.get()))
        ts = [threading.Thread(target=worker) for _ in range(8)]
        for t in ts: t.start()
        for t in ts: t.join()
        print(json.dumps({"ids": len(set(got)), "n": len(got),
                          "count": open("count.txt").read()}))
    """ % path)
    assert d == {"ids": 1, "n": 8, "count": "x"}


def test_failure_is_raised_kept_and_retried(python, workdir):
    path = write(workdir, "func.py", COUNTING)
    d = run(python, workdir, """
        import json, os, sys
        os.environ["LAZY_GATE"] = "1"
        from coldstart import lazy
        f = lazy.function(%r)
        errs = []
        for _ in range(2):
            try:
                f(1, data=2)
            except RuntimeError as e:
                errs.append(str(e))
        kept = repr(f.module.error)
        registered = "func" in sys.modules
        open("gate", "w").close()
        result = f("ctx", data="d")
        print(json.dumps({"errs": errs, "kept": kept, "registered": registered,
                          "result": result, "attempts": f.module.attempts,
                          "error_after": f.module.error is None,
                          "count": open("count.txt").read()}))
    """ % path)
    assert d["errs"] == ["gate closed", "gate closed"]
    assert "RuntimeError" in d["kept"]
    assert d["registered"] is False
    assert d["result"] == ["handled", "ctx", "d"]
    assert d["attempts"] == 3 and d["error_after"] is True
    assert d["count"] == "xxx"


def test_missing_attribute_and_not_callable(python, workdir):
    path = write(workdir, "func.py", COUNTING)
    d = run(python, workdir, """
        import json
        from coldstart import lazy
        out = []
        for attr in ("nope", "NOT_CALLABLE"):
            try:
                lazy.function(%r, attr=attr).resolve()
            except (AttributeError, TypeError) as e:
                out.append([type(e).__name__, str(e)])
        print(json.dumps(out))
    """ % (path,))
    assert d[0][0] == "AttributeError" and "'nope'" in d[0][1]
    assert d[1][0] == "TypeError" and "not a function" in d[1][1]


def test_missing_file_and_name_clash(python, workdir):
    clash = write(workdir, "clash/json.py", "X = 1\n")
    d = run(python, workdir, """
        import json as real_json, sys
        from coldstart import lazy
        out = []
        for target in ("missing.py", %r):
            try:
                lazy.module(target).get()
            except ImportError as e:
                out.append(str(e))
        out.append(sys.modules["json"] is real_json)
        print(real_json.dumps(out))
    """ % clash)
    assert "no such file" in d[0]
    assert "already taken" in d[1]
    assert d[2] is True


def test_module_name_target_and_sibling_imports(python, workdir):
    write(workdir, "pkg/__init__.py", "")
    write(workdir, "pkg/sub.py", "import helper\nVALUE = helper.H\n")
    write(workdir, "pkg/helper.py", "H = 'sibling'\n")
    path = write(workdir, "app/func.py", "import helper2\nV = helper2.V\n")
    write(workdir, "app/helper2.py", "V = 'beside func.py'\n")
    d = run(python, workdir, """
        import json, sys
        sys.path.insert(0, %r)
        sys.path.insert(0, %r)
        from coldstart import lazy
        a = lazy.module("pkg.sub").get()
        b = lazy.module(%r).get()
        print(json.dumps([a.__name__, a.VALUE, b.V]))
    """ % (os.path.join(workdir, "pkg"), workdir, path))
    assert d == ["pkg.sub", "sibling", "beside func.py"]


def test_circular_use_returns_partial_module(python, workdir):
    path = write(workdir, "func.py", """
        import builtins
        EARLY = 1
        SEEN = builtins.LAZY.get().EARLY
    """)
    d = run(python, workdir, """
        import builtins, json
        from coldstart import lazy
        builtins.LAZY = lazy.module(%r)
        print(json.dumps(builtins.LAZY.get().SEEN))
    """ % path)
    assert d == 1


def test_defer_import_runs_body_on_first_attribute(python, workdir):
    write(workdir, "heavy.py", """
        import os
        open(os.path.join(os.path.dirname(__file__), "ran.txt"), "a").write("x")
        ANSWER = 42
    """)
    d = run(python, workdir, """
        import json, os, sys
        sys.path.insert(0, os.getcwd())
        from coldstart import lazy
        heavy = lazy.defer_import("heavy")
        ran_after_defer = os.path.exists("ran.txt")
        same = sys.modules["heavy"] is heavy
        answer = heavy.ANSWER
        ran_after_use = open("ran.txt").read()
        again = lazy.defer_import("heavy") is heavy
        m = lazy.defer_imports("math", "json")
        try:
            lazy.defer_import("no_such_module_xyz")
            missing = "no error"
        except ModuleNotFoundError as e:
            missing = str(e)
        print(json.dumps({"a": ran_after_defer, "c": ran_after_use,
                          "answer": answer, "same": same, "again": again,
                          "math": m[0].sqrt(16), "json": m[1] is json,
                          "missing": missing}))
    """)
    assert d["a"] is False and d["c"] == "x"
    assert d["answer"] == 42 and d["same"] is True and d["again"] is True
    assert d["math"] == 4.0 and d["json"] is True
    assert "no_such_module_xyz" in d["missing"]


def test_import_statement_keeps_a_deferred_module_deferred(python, workdir):
    # `import name` reads __spec__ (and `from pkg import sub` a submodule):
    # neither may run the body; reading a real attribute does.
    write(workdir, "heavy.py", """
        import os
        open(os.path.join(os.path.dirname(__file__), "ran.txt"), "a").write("x")
        VALUE = 7
    """)
    d = run(python, workdir, """
        import json, os, sys
        sys.path.insert(0, os.getcwd())
        from coldstart import lazy
        lazy.defer_import("heavy")
        import heavy
        after_import = os.path.exists("ran.txt")
        import importlib
        importlib.import_module("heavy")
        after_import_module = os.path.exists("ran.txt")
        v = heavy.VALUE
        print(json.dumps([after_import, after_import_module, v,
                          open("ran.txt").read()]))
    """)
    assert d == [False, False, 7, "x"]


def test_bad_target_is_value_error(python, workdir):
    d = run(python, workdir, """
        import json
        from coldstart import lazy
        try:
            lazy.module("")
            print(json.dumps("no error"))
        except ValueError as e:
            print(json.dumps(str(e)))
    """)
    assert d == "empty module target"
