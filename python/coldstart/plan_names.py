"""Which from-imports of a planned module may stay lazy (docs/plan.md,
"Lazy from-imports"); planning only, used by plan_record.py.

A body's `from x import y` may bind y lazily when nothing reads y while
the body runs.  Statically, from the module's source: the statement is at
module level (not inside with, a function, a class, or a try with a handler
for anything but ImportError), and no code of
the body outside function bodies loads the bound name (class bodies,
decorators, default values, annotations, comprehensions count), nor calls
globals(), vars(), locals() or dir() there.  Dynamically, the recorder adds
what the source does not show: names of functions and eval'd code the body
ran with the module's globals, attributes other modules read from the
module while its body ran, and names in class annotations (dataclasses and
pydantic read those from the module's namespace).
"""

import ast
import sys

# Reading the namespace as a whole from the module's own code: every name
# may be read.  (Reading the module's __dict__ from outside while its body
# runs, as enum's _convert_ and attrs do, binds its pending names at that
# moment when the plan is applied: plan.py's _BodyRunning.)
DYNAMIC = frozenset(("globals", "vars", "locals", "dir"))


def opcodes():
    """[IMPORT_FROM, star import opcode, its argument or None]: what the
    applier compares the importing frame's instruction with."""
    import dis
    import opcode
    star = None
    code = compile("from a import *\n", "<plan>", "exec")
    for ins in dis.get_instructions(code):
        if ins.opname == "IMPORT_STAR":
            star = [ins.opcode, None]
        elif ins.opname == "CALL_INTRINSIC_1" and \
                "IMPORT_STAR" in (ins.argrepr or ""):
            star = [ins.opcode, ins.arg]
    if star is None:
        return None
    return [opcode.opmap["IMPORT_FROM"]] + star


def _resolve(package, node):
    if node.level == 0:
        return node.module
    parts = package.split(".") if package else []
    if node.level > len(parts):
        return None
    base = ".".join(parts[:len(parts) - node.level + 1])
    if node.module:
        return base + "." + node.module if base else node.module
    return base or None


def _postponed(tree):
    """True when the module has `from __future__ import annotations`
    (PEP 563): its annotations are strings, not evaluated by the body."""
    for st in tree.body:
        if isinstance(st, ast.ImportFrom) and st.module == "__future__" and \
                any(a.name == "annotations" for a in st.names):
            return True
    return False


class _Loads(ast.NodeVisitor):
    """Names loaded or deleted by code that runs with the body: everything
    but the bodies of functions and lambdas, and with postponed evaluation
    (PEP 563) the annotations, which are strings then (what reads them at
    import time, dataclasses, pydantic, singledispatch, evaluates them in
    the module's namespace: the recorder sees that and adds the names)."""

    def __init__(self, postponed=False):
        self.names = set()
        self.postponed = postponed

    def visit_Name(self, node):
        if not isinstance(node.ctx, ast.Store):
            self.names.add(node.id)

    def visit_AnnAssign(self, node):
        if not self.postponed:
            return self.generic_visit(node)
        self.visit(node.target)
        if node.value is not None:
            self.visit(node.value)

    def _function(self, node):
        for d in node.decorator_list:
            self.visit(d)
        self._arguments(node.args)
        if node.returns is not None and not self.postponed:
            self.visit(node.returns)

    def _arguments(self, a):
        for d in list(a.defaults) + [d for d in a.kw_defaults if d]:
            self.visit(d)
        if self.postponed:
            return
        for arg in list(getattr(a, "posonlyargs", [])) + list(a.args) + \
                list(a.kwonlyargs) + [x for x in (a.vararg, a.kwarg) if x]:
            if arg.annotation is not None:
                self.visit(arg.annotation)

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Lambda(self, node):
        self._arguments(node.args)


_IMPORT_ERRORS = frozenset(("ImportError", "ModuleNotFoundError"))


def _only_import_errors(handlers):
    """True when every handler of a try names ImportError or
    ModuleNotFoundError only (other exceptions, which a lazy import would
    raise later and elsewhere, are not caught there)."""
    for h in handlers:
        t = h.type
        names = t.elts if isinstance(t, ast.Tuple) else [t]
        if not names or not all(isinstance(n, ast.Name) and
                                n.id in _IMPORT_ERRORS for n in names):
            return False
    return bool(handlers)


def _candidates(body, package, out, stars, lazy_ok=True, extended=True):
    """Collects the module-level from-imports of statements body (with
    extended, also those in a try for ImportError)."""
    for st in body:
        if isinstance(st, ast.ImportFrom):
            mod = _resolve(package, st)
            if not lazy_ok or mod is None or mod == "__future__":
                continue
            for a in st.names:
                if a.name == "*":
                    stars.append(mod)
                else:
                    out.append((mod, a.name, a.asname or a.name))
        elif isinstance(st, (ast.If, ast.For, ast.AsyncFor, ast.While)):
            _candidates(st.body, package, out, stars, lazy_ok, extended)
            _candidates(st.orelse, package, out, stars, lazy_ok, extended)
        elif extended and isinstance(st, ast.Try) and \
                _only_import_errors(st.handlers):
            # `try: from .worker import W / except ImportError: pass`: the
            # planning run saw the import succeed, with the files the plan
            # checks, so the handler does not run with the plan either.
            for part in (st.body, st.orelse, st.finalbody):
                _candidates(part, package, out, stars, lazy_ok, extended)
        elif type(st).__name__ == "Match":
            for case in st.cases:
                _candidates(case.body, package, out, stars, lazy_ok,
                            extended)


def star_names(mod):
    """The names `from mod import *` binds from the loaded module mod."""
    d = getattr(mod, "__dict__", {})
    names = d.get("__all__")
    if isinstance(names, (list, tuple)) and \
            all(isinstance(n, str) for n in names):
        return list(names)
    return [n for n in d if isinstance(n, str) and not n.startswith("_")]


def lazy_rows(name, path, is_package, body_names, modules, debug=None,
              extended=True):
    """The from-imports of module name (source at path) that may stay
    lazy: (x, attr, bound name), or (x, "*", names[, eager]) for a star
    import (names: all it binds, in order; eager: those of them the body
    reads, which bind at once).  extended=False (the standard library's
    bodies) leaves out what a module with lazy names pays for in every
    global its functions read (its __builtins__ is then a dict subclass,
    which the interpreter does not specialise for): from-imports in try
    blocks, names only in postponed annotations, star imports the body
    reads some names of.  body_names: what the recorder saw the body read besides its
    source; modules: sys.modules at the end of the planning run.  Returns
    [] when the source cannot be read or parsed."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return []
    package = name if is_package else name.rpartition(".")[0]
    froms, stars = [], []
    _candidates(tree.body, package, froms, stars, True, extended)
    if not froms and not stars:
        return []
    loads = _Loads(extended and _postponed(tree))
    loads.visit(tree)
    used = loads.names | set(body_names)
    if used & DYNAMIC:
        if debug is not None:
            debug.append("reads its namespace as a whole: %s" % ", ".join(
                sorted(used & DYNAMIC)))
        return []
    rows = []
    seen = set()
    for mod, attr, bound in froms:
        key = (mod, attr)
        if bound in used or key in seen or mod == name or \
                mod not in modules or "%s.%s" % (mod, attr) in modules:
            continue
        seen.add(key)
        rows.append((mod, attr, bound))
    for mod in stars:
        m = modules.get(mod)
        if m is None or mod == name or (mod, "*") in seen:
            continue
        names = star_names(m)
        # The names the body reads (and submodules) bind at once; the rest
        # may stay lazy.  A star import none of whose names may is eager.
        eager = [n for n in names if n in used or
                 "%s.%s" % (mod, n) in modules]
        if len(eager) == len(names) or (eager and not extended):
            continue
        seen.add((mod, "*"))
        rows.append((mod, "*", names, eager) if eager else
                    (mod, "*", names))
    return rows


def table(found, actions):
    """The plan's "from" from lazy_rows() per module (found): per module,
    [x, "attr attr ..."] for its lazy from-imports of x, [x, "*",
    "name name ..."(, "eager names")] for a star import.  Only those that can matter are kept: from a module the
    plan does not load (actions), or a name that module itself binds
    lazily (re-exports, as packages do)."""
    bound = {}
    for a, rows in found.items():
        b = bound.setdefault(a, set())
        for r in rows:
            if r[1] == "*":
                b.update(set(r[2]).difference(r[3] if len(r) > 3 else ()))
            else:
                b.add(r[2])
    out = {}
    for a, rows in found.items():
        attrs = {}
        kept = []
        for r in rows:
            mod = r[0]
            act = actions.get(mod)
            if act is None:
                continue
            mine = bound.get(mod, ())
            if r[1] == "*":
                if act != "load" or any(n in mine for n in r[2]):
                    kept.append([mod, "*", " ".join(r[2])] + (
                        [" ".join(r[3])] if len(r) > 3 else []))
            elif act != "load" or r[1] in mine:
                attrs.setdefault(mod, []).append(r[1])
        # Names joined by spaces: a plan's biggest member reads faster so.
        kept[:0] = [[mod, " ".join(a)] for mod, a in attrs.items()]
        if kept:
            out[a] = kept
    return out


if __name__ == "__main__":  # pragma: no cover - a developer's look
    print(opcodes())
    for p in sys.argv[1:]:
        print(p, lazy_rows("m", p, False, (), sys.modules))
