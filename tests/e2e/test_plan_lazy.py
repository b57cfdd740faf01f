"""Lazy from-imports of applied start-up plans (python/coldstart/plan.py,
plan_names.py) in real interpreters: Debian's python3 and every pyenv
3.8-3.13 found.

Each case records a plan while record.py imports a module `a` that
from-imports names of other modules, and uses nothing (so the plan defers
everything, and notes which of a's from-imports may stay lazy), then runs
use.py plainly and with the plan.  With the plan, `a`'s body runs when
use.py first uses it; its lazy from-imports leave the modules they name
deferred until one of the names is used.  The outputs must be the same,
and the applied run must show the laziness (so each test would fail
without it).
"""
import json
import os
import textwrap

import pytest

from conftest import PLAN_VERSIONS, interpreter_params, write
from test_plan_apply import PRELUDE, _env, _run, action, compare, record


@pytest.fixture(params=interpreter_params(PLAN_VERSIONS))
def python(request):
    return request.param


SHAPES = """
    class Base(object):
        def area(self):
            return 0
    class Square(Base):
        def __init__(self, n):
            self.n = n
        def area(self):
            return self.n * self.n
    def unit():
        return Square(1)
"""


def lazy_of(plan, name):
    """The plan's lazy from-imports of module name: {module: [attrs]}, or
    {module: ["*", [names]]} for a star import."""
    return {r[0]: r[1].split() if r[1] != "*" else ["*", r[2].split()]
            for r in plan["from"].get(name, [])}


def test_names_bind_at_first_use_with_their_identity(python, workdir):
    write(workdir, "shapes.py", SHAPES)
    write(workdir, "a.py", """
        from shapes import Square, Base
        from shapes import unit as make_unit
        def make(n):
            return Square(n)
        def other():
            return 42
    """)
    plan = record(python, workdir, ["a"])
    assert action(plan, "shapes") == "defer"
    assert sorted(lazy_of(plan, "a")["shapes"]) == ["Base", "Square", "unit"]
    plain, applied = compare(python, workdir, """
        import a
        r = a.other()
        before = [deferred("shapes"), lazy_names(a)]
        sq = a.make(3)
        import shapes
        mid = [deferred("shapes"), lazy_names(a)]
        out = {"before": before, "mid": mid, "area": sq.area(),
               "same": [type(sq) is shapes.Square, a.Square is shapes.Square,
                        a.Base is shapes.Base, isinstance(sq, a.Base),
                        a.make_unit is shapes.unit],
               "after": lazy_names(a), "type": type(a).__name__}
        print(json.dumps(out))
    """)
    assert plain["before"] == [False, []]
    # a ran, shapes did not: its three names were left lazy.
    assert applied["before"] == [True, ["Base", "Square", "make_unit"]]
    assert applied["mid"] == [False, ["Base", "make_unit"]]
    assert applied["after"] == [] and applied["type"] == "module"
    for k in ("area", "same"):
        assert plain[k] == applied[k]
    assert applied["same"] == [True] * 5


def test_names_the_body_uses_are_bound_at_once(python, workdir):
    write(workdir, "shapes.py", SHAPES)
    write(workdir, "deco.py", """
        def tag(f):
            f.tagged = True
            return f
        DEFAULT = 7
    """)
    write(workdir, "hints.py", "class Hint(object):\n    pass\n")
    write(workdir, "a.py", """
        from shapes import Base, unit
        from deco import tag, DEFAULT
        from hints import Hint
        class Mine(Base):
            pass
        @tag
        def f(x=DEFAULT, h: Hint = None):
            return x
        def helper():
            return unit()
        HELPED = helper()
    """)
    plan = record(python, workdir, ["a"])
    lazy = lazy_of(plan, "a")
    # Base (a base class), tag (a decorator), DEFAULT (a default value),
    # Hint (an annotation) and unit (called by a function the body calls)
    # are read by the body: none of them is lazy.
    assert lazy == {}, lazy
    plain, applied = compare(python, workdir, """
        import a
        r = a.f()
        out = {"r": r, "tagged": a.f.tagged, "mro": [c.__name__ for c in
                                                     a.Mine.__mro__],
               "deferred": [deferred("shapes"), deferred("deco"),
                            deferred("hints")], "helped": a.HELPED.area()}
        print(json.dumps(out))
    """)
    assert applied["deferred"] == [False, False, False]
    for k in ("r", "tagged", "mro", "helped"):
        assert plain[k] == applied[k]


def test_a_body_that_reads_its_namespace_keeps_them_all(python, workdir):
    write(workdir, "shapes.py", SHAPES)
    write(workdir, "a.py", """
        from shapes import Square
        EXPORTS = sorted(k for k in globals() if not k.startswith("_"))
    """)
    write(workdir, "b.py", """
        from shapes import Base
        NAMES = [n for n in dir() if not n.startswith("_")]
    """)
    plan = record(python, workdir, ["a", "b"])
    assert "a" not in plan["from"] and "b" not in plan["from"]
    reasons = {m["name"]: m.get("lazy_from_off") for m in plan["modules"]}
    assert "globals" in reasons["a"] and "dir" in reasons["b"]
    plain, applied = compare(python, workdir, """
        import a, b
        print(json.dumps({"a": a.EXPORTS, "b": b.NAMES}))
    """)
    assert plain == applied


def test_outside_readers_while_the_body_runs_see_real_objects(python,
                                                              workdir):
    # snap copies a's namespace while a's body runs (as attrs and enum's
    # _convert_ do): the copy must hold the real Square, not a placeholder.
    write(workdir, "shapes.py", SHAPES)
    write(workdir, "snap.py", """
        import sys
        COPIES = {}
        def take(name):
            COPIES[name] = dict(vars(sys.modules[name]))
    """)
    write(workdir, "a.py", """
        from shapes import Square
        import snap
        snap.take(__name__)
        def other():
            return 1
    """)
    plan = record(python, workdir, ["a"])
    assert lazy_of(plan, "a") == {"shapes": ["Square"]}
    plain, applied = compare(python, workdir, """
        import a, snap, shapes
        a.other()
        got = snap.COPIES["a"]["Square"]
        print(json.dumps({"real": got is shapes.Square,
                          "type": type(got).__name__}))
    """)
    assert plain == applied == {"real": True, "type": "type"}


def test_dataclass_string_annotations_keep_classvar(python, workdir):
    # dataclasses looks ClassVar up in the module's namespace for string
    # annotations: that read decides what is a field.
    write(workdir, "mytypes.py", """
        from typing import ClassVar
        import dataclasses
        field = dataclasses.field
    """)
    write(workdir, "a.py", """
        from __future__ import annotations
        import dataclasses
        from mytypes import ClassVar, field
        @dataclasses.dataclass
        class P:
            x: int
            tags: list = field(default_factory=list)
            count: ClassVar[int] = 3
        def other():
            return 1
    """)
    record(python, workdir, ["a"])
    plain, applied = compare(python, workdir, """
        import dataclasses, a
        a.other()
        print(json.dumps({"fields": [f.name for f in dataclasses.fields(a.P)],
                          "count": a.P.count, "p": repr(a.P(1))}))
    """)
    assert plain == applied
    assert plain["fields"] == ["x", "tags"]


def test_star_imports_bind_lazily(python, workdir):
    write(workdir, "stars.py", """
        __all__ = ["public", "ALSO", "Thing"]
        def public():
            return "pub"
        ALSO = "also"
        class Thing(object):
            pass
        HIDDEN = "hidden"
    """)
    write(workdir, "a.py", """
        from stars import *
        def call():
            return public()
    """)
    plan = record(python, workdir, ["a"])
    assert lazy_of(plan, "a") == {"stars": ["*", ["public", "ALSO",
                                                  "Thing"]]}
    plain, applied = compare(python, workdir, """
        import a
        names = sorted(n for n in dir(a) if not n.startswith("_"))
        before = deferred("stars")
        r = a.call()
        import stars
        out = {"names": names, "before": before, "r": r,
               "thing": a.Thing is stars.Thing, "also": a.ALSO,
               "hidden": hasattr(a, "HIDDEN")}
        print(json.dumps(out))
    """)
    assert applied["before"] is True and plain["before"] is False
    for k in ("names", "r", "thing", "also", "hidden"):
        assert plain[k] == applied[k], k


def test_re_exports_stay_lazy_through_a_chain(python, workdir):
    # pkgish re-exports shapes.Square (as a package's __init__ does) and
    # runs because a's body calls it; a's from-import of the name stays
    # lazy through pkgish's own lazy name.
    write(workdir, "shapes.py", SHAPES)
    write(workdir, "pkgish.py", """
        from shapes import Square
        def ping():
            return "pong"
    """)
    write(workdir, "a.py", """
        from pkgish import Square
        import pkgish
        PING = pkgish.ping()
        def make():
            return Square(2)
    """)
    plan = record(python, workdir, ["a"])
    assert lazy_of(plan, "a") == {"pkgish": ["Square"]}
    assert lazy_of(plan, "pkgish") == {"shapes": ["Square"]}
    plain, applied = compare(python, workdir, """
        import a
        ping = a.PING
        before = [deferred("pkgish"), deferred("shapes"), lazy_names(a),
                  lazy_names(sys.modules["pkgish"])]
        sq = a.make()
        import shapes, pkgish
        print(json.dumps({"before": before, "area": sq.area(), "ping": ping,
                          "same": [a.Square is shapes.Square,
                                   pkgish.Square is shapes.Square]}))
    """)
    assert applied["before"] == [False, True, ["Square"], ["Square"]]
    for k in ("area", "ping", "same"):
        assert plain[k] == applied[k], k
    assert applied["same"] == [True, True]


def test_lazy_names_shadow_builtins_and_module_getattr(python, workdir):
    write(workdir, "x.py", """
        open = "x.open"
        class K(object):
            pass
    """)
    write(workdir, "a.py", """
        from x import open, K
        def h():
            return open
        def __getattr__(name):
            return "dyn:" + name
    """)
    plan = record(python, workdir, ["a"])
    assert sorted(lazy_of(plan, "a")["x"]) == ["K", "open"]
    plain, applied = compare(python, workdir, """
        import a
        r = [a.other, deferred("x")]
        k = a.K
        import x
        print(json.dumps({"r": r[0], "k": k is x.K, "h": a.h(),
                          "was": r[1]}))
    """)
    assert applied["was"] is True
    for k in ("r", "k", "h"):
        assert plain[k] == applied[k], k
    assert applied["h"] == "x.open" and applied["r"] == "dyn:other"


def test_vars_binds_all_and_dir_lists_without_binding(python, workdir):
    write(workdir, "shapes.py", SHAPES)
    write(workdir, "a.py", """
        from shapes import Square, Base
        def other():
            return 1
    """)
    record(python, workdir, ["a"])
    plain, applied = compare(python, workdir, """
        import a
        a.other()
        d = sorted(n for n in dir(a) if not n.startswith("_"))
        after_dir = deferred("shapes")
        v = sorted(n for n in vars(a) if not n.startswith("_"))
        import shapes
        print(json.dumps({"dir": d, "after_dir": after_dir, "vars": v,
                          "same": vars(a)["Square"] is shapes.Square}))
    """)
    assert applied["after_dir"] is True
    for k in ("dir", "vars", "same"):
        assert plain[k] == applied[k], k


def test_type_hints_and_pickling_through_lazy_names(python, workdir):
    write(workdir, "shapes.py", SHAPES)
    write(workdir, "a.py", """
        from shapes import Square
        def area(s: "Square") -> int:
            return s.area()
        def make():
            return Square(5)
    """)
    record(python, workdir, ["a"])
    plain, applied = compare(python, workdir, """
        import pickle, typing
        import a
        hints = typing.get_type_hints(a.area)
        sq = pickle.loads(pickle.dumps(a.make()))
        print(json.dumps({"hints": sorted("%s:%s" % (k, v.__name__)
                                          for k, v in hints.items()),
                          "area": a.area(sq)}))
    """)
    assert plain == applied
    assert plain["hints"] == ["return:int", "s:Square"]


def test_a_failing_module_raises_at_the_first_use_of_its_name(python,
                                                              workdir):
    write(workdir, "fragile.py", """
        import os
        if os.environ.get("FRAGILE_FAIL"):
            raise ValueError("fragile body failed")
        if not os.environ.get("FRAGILE_SHORT"):
            VALUE = 1
    """)
    write(workdir, "a.py", """
        from fragile import VALUE
        def get():
            return VALUE
        def other():
            return 2
    """)
    plan = record(python, workdir, ["a"])
    assert lazy_of(plan, "a") == {"fragile": ["VALUE"]}
    code = """
        import traceback
        out = {}
        try:
            import a
            out["other"] = a.other()
        except (ValueError, ImportError) as e:
            out["import"] = str(e)
        try:
            out["get"] = a.get()
        except ValueError as e:
            tb = traceback.extract_tb(e.__traceback__)
            out["get"] = [str(e), any(f.filename.endswith("fragile.py")
                                      for f in tb)]
        except ImportError as e:
            out["get"] = str(e).split(" (")[0]
        except NameError:
            out["get"] = "unbound"
        print(json.dumps(out))
    """
    plain, applied = compare(python, workdir, code, FRAGILE_FAIL="1")
    assert plain["import"] == "fragile body failed"
    # The body's error, with its own traceback, where the name is used.
    assert applied["other"] == 2
    assert applied["get"] == ["fragile body failed", True]
    plain, applied = compare(python, workdir, code, FRAGILE_SHORT="1")
    assert plain["import"].startswith("cannot import name 'VALUE'")
    assert applied["get"] == "cannot import name 'VALUE' from 'fragile'"


def test_try_blocks_for_import_errors_bind_lazily_others_stay_eager(
        python, workdir):
    # A try whose handlers catch ImportError only: the planning run saw
    # the import succeed, so it binds lazily (aiohttp's optional gunicorn
    # worker).  Any other handler could catch what the body raises: eager.
    write(workdir, "opt.py", "FAST = True\n")
    write(workdir, "other.py", "SLOW = True\n")
    write(workdir, "a.py", """
        try:
            from opt import FAST
        except (ImportError, ModuleNotFoundError):
            FAST = False
        try:
            from other import SLOW
        except Exception:
            SLOW = False
        def other():
            return 1
    """)
    plan = record(python, workdir, ["a"])
    assert lazy_of(plan, "a") == {"opt": ["FAST"]}
    plain, applied = compare(python, workdir, """
        import a
        a.other()
        before = [deferred("opt"), deferred("other")]
        print(json.dumps({"before": before, "fast": a.FAST,
                          "slow": a.SLOW}))
    """)
    assert applied["before"] == [True, False]
    assert plain["before"] == [False, False]
    assert applied["fast"] is True is plain["fast"]
    assert applied["slow"] is True is plain["slow"]


def test_threads_bind_a_lazy_name_once(python, workdir):
    write(workdir, "box.py", "RUNS = []\n")
    write(workdir, "slow.py", """
        import time
        import box
        box.RUNS.append(1)
        time.sleep(0.3)
        class Thing(object):
            pass
    """)
    write(workdir, "a.py", """
        from slow import Thing
        def make():
            return Thing()
        def other():
            return 1
    """)
    record(python, workdir, ["a"])
    plain, applied = compare(python, workdir, """
        import threading
        import a
        a.other()
        was = deferred("slow")
        seen = []
        ts = [threading.Thread(target=lambda: seen.append(type(a.make())))
              for _ in range(4)]
        for t in ts: t.start()
        for t in ts: t.join()
        import box, slow
        print(json.dumps({"was": was, "same": [t is slow.Thing for t in seen],
                          "runs": len(box.RUNS)}))
    """)
    assert applied["was"] is True
    assert plain["same"] == applied["same"] == [True] * 4
    assert applied["runs"] == plain["runs"] == 1


def test_lazy_from_can_be_turned_off(python, workdir):
    write(workdir, "shapes.py", SHAPES)
    write(workdir, "a.py", "from shapes import Square\n"
                           "def other():\n    return 1\n")
    record(python, workdir, ["a"])
    plain, applied = compare(python, workdir, """
        import a
        a.other()
        print(json.dumps({"shapes": deferred("shapes"),
                          "lazy": lazy_names(a)}))
    """, COLDSTART_PLAN_LAZY_FROM="0")
    assert applied == {"shapes": False, "lazy": []}


def test_a_star_import_the_body_reads_from_binds_the_rest_lazily(python,
                                                                 workdir):
    # a reads one name of pkg's star import: that one binds at once (and
    # runs pkg and pkg.one), the others stay lazy, so pkg.two, which only
    # an unread name comes from, stays deferred.
    write(workdir, "pkg/__init__.py", """
        from .one import *
        from .two import *
    """)
    write(workdir, "pkg/one.py", """
        __all__ = ["f1"]
        def f1():
            return "one"
    """)
    write(workdir, "pkg/two.py", """
        __all__ = ["f2", "T2"]
        def f2():
            return "two"
        class T2(object):
            pass
    """)
    write(workdir, "a.py", """
        from pkg import *
        USE = f1()
        def call():
            return f2()
    """)
    plan = record(python, workdir, ["a"])
    star = lazy_of(plan, "a")["pkg"]
    assert star[0] == "*" and sorted(star[1]) == ["T2", "f1", "f2", "one",
                                                   "two"]
    row = [r for r in plan["from"]["a"] if r[0] == "pkg"][0]
    assert sorted(row[3].split()) == ["f1", "one", "two"]
    plain, applied = compare(python, workdir, """
        import a
        use = a.USE
        before = [deferred("pkg"), deferred("pkg.one"), deferred("pkg.two"),
                  lazy_names(a)]
        r = a.call()
        import pkg.two
        print(json.dumps({"before": before, "use": use, "r": r,
                          "same": [a.T2 is pkg.two.T2, a.f2 is pkg.two.f2],
                          "names": sorted(n for n in vars(a)
                                          if not n.startswith("_"))}))
    """)
    assert applied["before"] == [False, False, True, ["T2", "f2"]]
    assert plain["before"] == [False, False, False, []]
    for k in ("use", "r", "same", "names"):
        assert plain[k] == applied[k], k
    assert applied["same"] == [True, True]


def test_a_damaged_from_row_binds_that_modules_imports_only(python, workdir):
    # The from table is checked whole at install; when that finds a bad
    # row, each module's rows are checked at its import: the module with
    # the bad row binds its from-imports at once (one warning), the others
    # stay lazy.
    write(workdir, "shapes.py", SHAPES)
    write(workdir, "shapes2.py", SHAPES)
    write(workdir, "a.py", """
        from shapes import Square
        def make(n):
            return Square(n)
    """)
    write(workdir, "b.py", """
        from shapes2 import Square
        def make(n):
            return Square(n)
    """)
    plan = record(python, workdir, ["a", "b"])
    assert "shapes" in lazy_of(plan, "a") and "shapes2" in lazy_of(plan, "b")
    path = os.path.join(workdir, "plan.json")
    plan["from"]["a"][0][0] = "sha/pes"
    with open(path, "w") as f:
        json.dump(plan, f)
    write(workdir, "use.py", textwrap.dedent(PRELUDE) + textwrap.dedent("""
        import a, b
        ma, mb = a.make, b.make
        out = {"lazy": [lazy_names(a), lazy_names(b)],
               "area": [ma(2).area(), mb(3).area()]}
        print(json.dumps(out))
    """))
    plain = _run(python, workdir, "use.py", _env())
    applied = _run(python, workdir, "use.py", _env(COLDSTART_PLAN=path))
    got = [json.loads(p.stdout.strip().splitlines()[-1])
           for p in (plain, applied)]
    assert got[0]["area"] == got[1]["area"] == [4, 9]
    assert got[1]["lazy"] == [[], ["Square"]], got[1]
    warn = [ln for ln in applied.stderr.splitlines()
            if ln.startswith("coldstart plan")]
    assert len(warn) == 1 and "sha/pes" in warn[0] and \
        "bind at once" in warn[0], applied.stderr

def test_postponed_annotations_do_not_read_their_names(python, workdir):
    # With `from __future__ import annotations` (PEP 563) an annotation is
    # a string the body does not evaluate: a name used only there may bind
    # lazily.  Without it the body evaluates it.  (A dataclass reads its
    # module's namespace while the body runs, which binds every pending
    # name: test_outside_readers_while_the_body_runs_see_real_objects.)
    write(workdir, "shapes.py", SHAPES)
    body = """
        from shapes import Square, unit
        v: Square = None
        def area(x: Square) -> Square:
            return x.area()
        def make():
            return unit()
    """
    write(workdir, "late.py", "from __future__ import annotations\n" +
          textwrap.dedent(body))
    write(workdir, "eager.py", body)
    plan = record(python, workdir, ["late", "eager"])
    assert lazy_of(plan, "late") == {"shapes": ["Square", "unit"]}
    assert lazy_of(plan, "eager") == {"shapes": ["unit"]}
    plain, applied = compare(python, workdir, """
        import late, typing
        make = late.make
        before = [deferred("shapes"), lazy_names(late)]
        hints = typing.get_type_hints(late.area)
        print(json.dumps({"before": before, "v": late.v,
                          "hints": sorted((k, v.__name__)
                                          for k, v in hints.items()),
                          "area": late.area(make())}))
    """)
    assert applied["before"] == [True, ["Square", "unit"]]
    for k in ("v", "hints", "area"):
        assert plain[k] == applied[k], k


def test_standard_library_bodies_keep_the_plain_rules(python, workdir):
    # The regex parser reads part of its constants' star import: outside the
    # standard library that would be a partial star import; inside, where
    # a module with lazy names pays in every global lookup of its hot
    # functions, the star import stays eager.
    write(workdir, "a.py", """
        import re
        WORD = re.compile(r"[a-z]+(?P<n>\\\\d*)")
        def other():
            return 1
    """)
    plan = record(python, workdir, ["a"])
    parser = [m["name"] for m in plan["modules"]
              if m["name"] in ("re._parser", "sre_parse")]
    stars = {m: [r for r in rows if r[1] == "*"]
             for m, rows in plan["from"].items()}
    assert not any(len(r) > 3 for rows in stars.values() for r in rows), stars
    for name in parser:
        assert not stars.get(name), (name, plan["from"].get(name))
