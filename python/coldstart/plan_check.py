"""The plan's checks in Python (docs/plan.md, "Trust"), for the applier
(coldstart.plan) to import when it needs them: the column checks where the
plan's extension is not loaded (its C checks answer the same), the row by
row checks that say what is wrong when a column check finds anything, the
reading of plans without an index or with damaged files, and the warning
filters' reading under -W.  None of it runs at a start where the plan is
whole and its extension loaded, so coldstart.plan does not carry it: its
code cost every planned start about 0.3 M instructions to unmarshal."""

import os
import sys
from itertools import chain as _chain

from coldstart.plan import (INDEX_FIELDS, _ACTIONS, _LOADERS, _is_abs,
                            _is_int)

_NoneType = type(None)
_HEX = "0123456789abcdef"


def _is_name(s):
    """A dotted module name: non-empty parts separated by dots, none with a
    slash or a NUL (modules imported with __import__ need not be
    identifiers: _sysconfigdata__linux_x86_64-linux-gnu)."""
    return type(s) is str and s != "" and s[0] != "." and s[-1] != "." and \
        ".." not in s and "/" not in s and "\0" not in s


def _bad_row(row):
    """Why index row is malformed, or None."""
    if type(row) is not list or len(row) != len(INDEX_FIELDS):
        return "not a list of %d fields" % len(INDEX_FIELDS)
    name, kind, path, size, mtime, action, used, dir_, search, ei, reb = row
    if not _is_name(name):
        return "name %r is not a module name" % (name,)
    if type(kind) is not str or kind not in _LOADERS:
        return "%s: kind %r" % (name, kind)
    if not _is_abs(path):
        return "%s: path %r is not absolute" % (name, path)
    if not _is_int(size, 0) or not _is_int(mtime):
        return "%s: size or mtime is not an integer" % name
    if type(action) is not str or action not in _ACTIONS:
        return "%s: action %r" % (name, action)
    if used is not None and type(used) is not bool:
        return "%s: used %r" % (name, used)
    if dir_ is not None and not _is_abs(dir_):
        return "%s: dir %r is not absolute" % (name, dir_)
    if search is not None and (type(search) is not list or
                               not all(_is_abs(s) for s in search)):
        return "%s: search is not a list of absolute paths" % name
    if ei is not None and not _is_int(ei, -1):
        return "%s: entry_index %r" % (name, ei)
    if reb is not None and (type(reb) is not list or
                            not all(_is_name(r) and "." not in r
                                    for r in reb)):
        return "%s: rebinds is not a list of names" % name
    return None


def _good_spans(at, size, n):
    """True when every entry of at that is not None passes _bad_span (and
    has a length), checked a column at a time by C loops as _good_index
    does; False when anything is unusual (the caller then says which)."""
    v = [x for x in at if x is not None]
    if not v:
        return True
    try:
        if set(map(type, v)) != {list} or min(map(len, v)) < n:
            return False
        flat = list(_chain.from_iterable(v))
        if set(map(type, flat)) != {int} or min(flat) < 0:
            return False
        starts = [e[0] for e in v]
        lengths = [e[1] for e in v]
        return min(lengths) > 0 and max(map(int.__add__, starts,
                                            lengths)) <= size
    except TypeError:
        return False


def _parse_at_py(s):
    """The archive entries in code.at's compact form (plan_code.encode_at)
    as a list of lists of int and None, or None when s is not of that
    form: an entry is "-" or 1 or more fields of 1 to 16 lowercase hex
    digits separated by commas, entries are separated by single spaces."""
    rows = []
    for e in s.split(" ") if s else ():
        if e == "-":
            rows.append(None)
            continue
        row = []
        for x in e.split(","):
            if not x or len(x) > 16 or x.strip(_HEX):
                return None
            row.append(int(x, 16))
        rows.append(row)
    return rows


def _bad_lazy(table):
    if table is None:
        return None
    if type(table) is not dict:
        return "from is not an object"
    for k, rows in table.items():
        if not _is_name(k) or type(rows) is not list:
            return "from: %r" % (k,)
        for r in rows:
            if type(r) is not list or not 2 <= len(r) <= 4 or \
                    not _is_name(r[0]) or \
                    not all(type(x) is str for x in r[1:]) or \
                    (r[1] == "*" and len(r) < 3):
                return "from: %s: %r" % (k, r)
    return None


def _good_from(table):
    """True when _bad_lazy finds nothing in the whole table, checked a
    column at a time (one pass at install instead of a row loop at each
    module's import: 1,274 rows for a pandas program); False when anything
    is unusual (each module's rows are then checked when it is imported,
    which says what is wrong)."""
    try:
        if type(table) is not dict:
            return False
        if not table:
            return True
        v = list(table.values())
        if set(map(type, v)) != {list} or not _names_ok(list(table)):
            return False
        rows = list(_chain.from_iterable(v))
        if not rows:
            return True
        if set(map(type, rows)) != {list} or \
                not set(map(len, rows)) <= {2, 3, 4}:
            return False
        if not _names_ok([r[0] for r in rows]):
            return False
        attrs = [r[1] for r in rows]
        long_ = [r for r in rows if len(r) > 2]
        rest = _chain.from_iterable([r[2:] for r in long_])
        if set(map(type, attrs)) != {str} or \
                not set(map(type, rest)) <= {str}:
            return False
        # A star row carries the names it binds (a third field).
        return attrs.count("*") == [r[1] for r in long_].count("*")
    except TypeError:
        return False


def _good_all(alls):
    """True when _bad_all finds nothing, checked a column at a time; False
    when anything is unusual (_bad_all then says what)."""
    try:
        if type(alls) is not dict:
            return False
        if not alls:
            return True
        v = [x.get("tuple") if type(x) is dict else x
             for x in alls.values()]
        if set(map(type, v)) != {list} or not _names_ok(list(alls)):
            return False
        return set(map(type, _chain.from_iterable(v))) <= {str}
    except TypeError:
        return False


def _bad_all(alls):
    if alls is None:
        return None
    if type(alls) is not dict:
        return "all is not an object"
    for k, v in alls.items():
        if type(v) is dict:
            v = v.get("tuple")
        if not _is_name(k) or type(v) is not list or \
                not all(type(x) is str for x in v):
            return "all: %r" % (k,)
    return None


def _names_ok(names):
    """_is_name() for every item of a non-empty list, at C speed: joined
    by NUL (none may hold one), no name is empty, has a slash or '..', or
    starts or ends with a dot.  TypeError when one is not a str."""
    j = "\0".join(names)
    return j.count("\0") == len(names) - 1 and \
        j[:1] not in ("", ".", "\0") and \
        j[-1:] not in ("\0", ".") and "/" not in j and ".." not in j and \
        "\0\0" not in j and "\0." not in j and ".\0" not in j


def _paths_ok(paths):
    """_is_abs() for every item of a non-empty list, at C speed: each
    starts with '/' and none holds a NUL.  TypeError when one is not a
    str."""
    j = "\0".join(paths)
    n = len(paths) - 1
    return j[:1] == "/" and j.count("\0") == n and j.count("\0/") == n


def _flat_lists(column):
    """The items of the lists in column, None entries skipped; None when an
    entry is neither None nor a list."""
    v = [x for x in column if x is not None]
    if set(map(type, v)) - {list}:
        return None
    return list(_chain.from_iterable(v))


def _good_index(index):
    """True when every index row passes _bad_row, checked a column at a
    time by C loops (join, count, set, min): the row-by-row check of a
    plan of 500 modules cost several million instructions at every start.
    False when anything is unusual; the caller then checks row by row,
    which says what is wrong (a False here is never the verdict)."""
    if type(index) is not list:
        return False
    if not index:
        return True
    w = len(INDEX_FIELDS)
    try:
        if set(map(type, index)) != {list} or set(map(len, index)) != {w}:
            return False
        names, kinds, paths, sizes, mtimes, actions, used, dirs, search, \
            eis, rebs = zip(*index)
        if not (_names_ok(names) and _paths_ok(paths) and
                set(kinds).issubset(_LOADERS) and
                set(actions).issubset(_ACTIONS) and
                set(map(type, sizes)) == {int} and min(sizes) >= 0 and
                set(map(type, mtimes)) == {int} and
                set(map(type, used)).issubset((_NoneType, bool)) and
                set(map(type, dirs)).issubset((_NoneType, str)) and
                set(map(type, eis)).issubset((_NoneType, int))):
            return False
        d = [x for x in dirs if x is not None]
        if d and not _paths_ok(d):
            return False
        e = [x for x in eis if x is not None]
        if e and min(e) < -1:
            return False
        s = _flat_lists(search)
        if s is None or s and not _paths_ok(s):
            return False
        r = _flat_lists(rebs)
        if r is None or r and (not _names_ok(r) or "." in "".join(r)):
            return False
    except TypeError:  # an unhashable kind or action, a name not a str
        return False
    return True


def _index_from_modules(modules):
    rows = []
    for m in modules:
        if isinstance(m, dict) and m.get("kind") in _LOADERS and \
                isinstance(m.get("path"), str):
            row = [m.get(f) for f in INDEX_FIELDS]
            # dir is null where it is the default (PlanFinder.entry).
            d = os.path.dirname(row[2])
            if row[7] == (os.path.dirname(d) if row[8] is not None else d):
                row[7] = None
            rows.append(row)
    return rows


def _stale_file(row):
    """Returns why index row no longer matches its file, or None."""
    name, path = row[0], row[2]
    try:
        st = os.stat(path)
    except (OSError, TypeError, ValueError) as e:
        return "%s: %r is gone (%s)" % (name, path, getattr(e, "strerror", e))
    if st.st_size != row[3] or st.st_mtime_ns != row[4]:
        return "%s: %r changed since the plan was made" % (name, path)
    return None


def _filter_matches(obj, arg):
    """A warnings filter's message or module field against arg, as
    _warnings does: None matches all, a string only itself, else a compiled
    pattern's match()."""
    if obj is None:
        return True
    if isinstance(obj, str):
        return obj == arg
    return bool(obj.match(arg))


def _category(qualname):
    """The warning class a plan names ("builtins.DeprecationWarning"), or
    None when its module is not loaded (the caller then assumes it may be
    shown)."""
    mod, _, name = qualname.rpartition(".")
    cls = getattr(sys.modules.get(mod or "builtins"), name, None)
    return cls if isinstance(cls, type) and issubclass(cls, Warning) \
        else None


def _filters_show(filters, default, text, category, module, lineno):
    """Whether the warning filters show this warning (any action but
    "ignore"), read as warnings.warn_explicit reads them."""
    for f in filters:
        try:
            action, msg, cat, mod, ln = f
            if _filter_matches(msg, text) and (
                    category is None or issubclass(category, cat)) and \
                    _filter_matches(mod, module) and \
                    (ln == 0 or lineno == ln):
                return action != "ignore"
        except (TypeError, ValueError, AttributeError):
            continue
    return default != "ignore"


def _shown_warnings(plan):
    """The names of the modules whose recorded import-time warnings (the
    module entry's "warnings": [category, message, module, line, shown])
    this run's filters show and the planning run's did not.  Read only
    when warning options are given (sys.warnoptions): without them the
    filters are the interpreter's defaults, as they were while planning."""
    import _warnings
    filters = list(getattr(_warnings, "filters", ()))
    w = sys.modules.get("warnings")
    default = getattr(w, "defaultaction", None) or \
        getattr(_warnings, "_defaultaction", "default")
    out = set()
    for m in plan.get("modules") or ():
        rows = m.get("warnings") if isinstance(m, dict) else None
        if not rows or not isinstance(rows, list):
            continue
        for r in rows:
            try:
                cat, text, module, lineno, shown = r
                if not shown and _filters_show(
                        filters, default, str(text), _category(str(cat)),
                        str(module), int(lineno)):
                    out.add(m["name"])
                    break
            except (TypeError, ValueError, KeyError):
                out.add(m.get("name"))
                break
    return frozenset(out)

