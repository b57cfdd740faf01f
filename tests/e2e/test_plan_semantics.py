"""Deferral keeps the program's semantics (issue 25, item 3): programs whose
module bodies do something a deferred body would do late or never, planned
with `coldstart plan` (the recorder, python/coldstart/plan_record.py, and
its decide()) and run with the plan applied (`python -m coldstart.run
--plan`): the output must be the plain run's, stdout and stderr.  Each
case printed something else, or failed, before the recorder saw it.
"""
import json
import os
import subprocess

import pytest

from conftest import COLDSTART, DEBIAN_PYTHON, ROOT, clean_env, write

pytestmark = pytest.mark.skipif(not os.path.exists(DEBIAN_PYTHON),
                                reason="Debian's python3 is not installed")


MAIN = "import app\napp.main()\n"


def plan_and_compare(workdir, flags=(), env_extra=None, script="main.py"):
    """Plans `python FLAGS main.py`, runs it plainly and with the plan;
    asserts both print the same.  Returns (the plan's modules by name, the
    plain run)."""
    env = clean_env()
    env.update(env_extra or {})
    out = os.path.join(workdir, "p.json")
    p = subprocess.run([COLDSTART, "plan", "-o", out, "--", DEBIAN_PYTHON] +
                       list(flags) + [script], cwd=workdir, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    plain = subprocess.run([DEBIAN_PYTHON] + list(flags) + [script],
                           cwd=workdir, env=env, capture_output=True,
                           text=True, timeout=60)
    aenv = dict(env, PYTHONPATH=os.path.join(ROOT, "python"))
    applied = subprocess.run([DEBIAN_PYTHON] + list(flags) +
                             ["-m", "coldstart.run", "--plan", out, script],
                             cwd=workdir, env=aenv, capture_output=True,
                             text=True, timeout=60)
    assert (applied.returncode, applied.stdout, applied.stderr) == \
        (plain.returncode, plain.stdout, plain.stderr)
    mods = {m["name"]: m for m in json.load(open(out))["modules"]}
    return mods, plain


def test_a_class_registered_by_name_in_another_modules_table(workdir):
    """impl's body registers its own class under a name in reg's table;
    the program looks it up by that name and never touches impl.  Before,
    registering one's own class counted as nothing, impl was deferred and
    the lookup raised KeyError."""
    write(workdir, "reg.py", """
        TABLE = {}
        def register(name, cls):
            TABLE[name] = cls
        def get(name):
            return TABLE[name]()
    """)
    write(workdir, "impl.py", """
        import reg
        class Impl:
            pass
        reg.register("impl", Impl)
    """)
    write(workdir, "app.py", """
        import reg
        import impl
        def main():
            print(type(reg.get("impl")).__name__)
    """)
    write(workdir, "main.py", MAIN)
    mods, plain = plan_and_compare(workdir)
    assert plain.stdout == "Impl\n"
    assert mods["impl"]["action"] == "eager"
    assert mods["impl"]["reasons"][0]["code"] == "registration"


def test_a_submodule_a_deferred_from_import_imported_stays_reachable(workdir):
    """app's `from pkg.b import B` (B never used) would defer pkg.b, whose
    body imports pkg.a; the program reads pkg.a.X.  Before: AttributeError:
    module 'pkg' has no attribute 'a'."""
    write(workdir, "pkg/__init__.py", "")
    write(workdir, "pkg/a.py", "X = 'pkg.a.X'\n")
    write(workdir, "pkg/b.py", "import pkg.a\nclass B:\n    pass\n")
    write(workdir, "app.py", """
        import pkg
        from pkg.b import B
        def main():
            print(pkg.a.X)
        def unused():
            return B()
    """)
    write(workdir, "main.py", MAIN)
    mods, plain = plan_and_compare(workdir)
    assert plain.stdout == "pkg.a.X\n"
    assert mods["pkg.b"]["action"] == "eager"
    assert mods["pkg.b"]["reasons"][0]["code"] == "imports"


def test_a_decorator_setting_methods_on_another_modules_class(workdir):
    """ext's body runs deco.method, which sets greet on cls.Thing; the
    program asks whether Thing has it.  Before, ext was deferred: False."""
    write(workdir, "cls.py", "class Thing:\n    pass\n")
    write(workdir, "deco.py", """
        import cls
        def method(f):
            setattr(cls.Thing, f.__name__, f)
            return f
    """)
    write(workdir, "ext.py", """
        from deco import method
        @method
        def greet(self):
            return "hi"
    """)
    write(workdir, "app.py", """
        import cls
        import ext
        def main():
            print(hasattr(cls.Thing, "greet"))
    """)
    write(workdir, "main.py", MAIN)
    mods, plain = plan_and_compare(workdir)
    assert plain.stdout == "True\n"
    assert mods["ext"]["action"] == "eager"
    assert "set greet on the class cls.Thing" in mods["ext"]["reasons"][0]["detail"]


@pytest.mark.parametrize("how", ["-W default", "PYTHONWARNINGS", "__main__"])
def test_a_warning_at_import_the_filters_show(workdir, how):
    """old's body warns (DeprecationWarning) at import; the filters show it
    (-W default, PYTHONWARNINGS=default, or the default filter for a
    warning about __main__).  Before, old was deferred and the warning
    never appeared."""
    write(workdir, "old.py", """
        import warnings
        warnings.warn("old is deprecated", DeprecationWarning, stacklevel=2)
        X = 1
    """)
    write(workdir, "app.py", """
        import old
        import fractions
        def main():
            print(fractions.Fraction(1, 3))
    """)
    write(workdir, "main.py", MAIN)
    write(workdir, "direct.py", "import old\nimport fractions\n"
          "print(fractions.Fraction(1, 3))\n")
    flags, env, script = [], {}, "main.py"
    if how == "-W default":
        flags = ["-W", "default"]
    elif how == "PYTHONWARNINGS":
        env = {"PYTHONWARNINGS": "default"}
    else:
        script = "direct.py"
    mods, plain = plan_and_compare(workdir, flags, env, script)
    assert "DeprecationWarning: old is deprecated" in plain.stderr
    assert mods["old"]["action"] == "eager"
    assert mods["old"]["warnings"][0][:2] == ["builtins.DeprecationWarning",
                                              "old is deprecated"]


def test_a_warning_the_filters_hide_leaves_the_module_deferred(workdir):
    write(workdir, "old.py", """
        import warnings
        warnings.warn("old is deprecated", DeprecationWarning, stacklevel=2)
    """)
    write(workdir, "app.py", "import old\ndef main():\n    print('ok')\n")
    write(workdir, "main.py", MAIN)
    mods, plain = plan_and_compare(workdir)
    assert plain.stderr == ""
    assert mods["old"]["action"] == "defer"
    assert mods["old"]["warnings"][0][-1] is False


@pytest.mark.parametrize("how", ["-W default", "PYTHONWARNINGS"])
def test_a_plan_made_without_warning_options_applied_with_them(workdir, how):
    """The plan is made with the default filters (old's DeprecationWarning
    hidden: old is deferred) and applied with -W default or
    PYTHONWARNINGS=default: the applier runs old's body at once, so its
    warning shows as it does without the plan.  Before, it never showed."""
    write(workdir, "old.py", """
        import warnings
        warnings.warn("old is deprecated", DeprecationWarning, stacklevel=2)
        X = 1
    """)
    write(workdir, "app.py", "import old\nimport fractions\n"
          "def main():\n    print(fractions.Fraction(1, 3))\n")
    write(workdir, "main.py", MAIN)
    env = clean_env()
    out = os.path.join(workdir, "p.json")
    p = subprocess.run([COLDSTART, "plan", "-o", out, "--", DEBIAN_PYTHON, "main.py"], cwd=workdir,
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    mods = {m["name"]: m for m in json.load(open(out))["modules"]}
    assert mods["old"]["action"] == "defer" and mods["old"]["warnings"][0][-1] is False
    flags, extra = (["-W", "default"], {}) if how == "-W default" else ([], {"PYTHONWARNINGS": "default"})
    env.update(extra)
    plain = subprocess.run([DEBIAN_PYTHON] + flags + ["main.py"], cwd=workdir, env=env,
                           capture_output=True, text=True, timeout=60)
    aenv = dict(env, PYTHONPATH=os.path.join(ROOT, "python"))
    applied = subprocess.run([DEBIAN_PYTHON] + flags + ["-m", "coldstart.run", "--plan", out, "main.py"],
                             cwd=workdir, env=aenv, capture_output=True, text=True, timeout=60)
    assert "DeprecationWarning: old is deprecated" in plain.stderr
    assert (applied.returncode, applied.stdout, applied.stderr) == \
        (plain.returncode, plain.stdout, plain.stderr)


def test_a_program_ending_with_os_exit_is_planned(workdir):
    """No atexit runs after os._exit: the recorder writes its record first.
    Before: 'the target ended without writing the plan'."""
    write(workdir, "main.py", """
        import os, fractions
        print(fractions.Fraction(1, 3), flush=True)
        os._exit(3)
    """)
    mods, plain = plan_and_compare(workdir)
    assert plain.returncode == 3 and plain.stdout == "1/3\n"
    assert mods["fractions"]["action"] == "load"
