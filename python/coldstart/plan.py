"""Applies a start-up plan (written by `coldstart plan`, docs/plan.md).

A plan names the modules a process imported before its first response,
where each was found, and what to do with each at the next start:

  load   the request used it: import it as usual, from its recorded file
  eager  it must run at import (side effects, a native extension, --eager):
         import it as usual, from its recorded file
  defer  the request did not use it: when something imports it, create the
         module object (spec, __path__, __file__ and the rest set) without
         running its body; the body runs at the first real use

install() checks the whole plan first (interpreter, every recorded file's
size and mtime, shadowing on sys.path) and applies all of it or, when
anything changed, none of it, with one warning on stderr.  Stdlib only,
Python 3.8+; importing this file imports nothing beyond what start-up has
loaded, and reading a plan uses the _json scanner without json and re.
"""

import os
import sys
import _thread

from importlib import _bootstrap, _bootstrap_external

__all__ = ["install", "installed", "warm", "responded", "deferred",
           "is_deferred", "load", "PlanError", "PLAN_FORMAT", "PLAN_VERSION"]

PLAN_FORMAT = "coldstart-plan"
PLAN_VERSION = 1

_ModuleType = type(sys)
_module_getattr = _ModuleType.__getattribute__
_module_setattr = _ModuleType.__setattr__

# What the import system and module repr read on a module it did not just
# create: answering these must not run the body (docs/plan.md).
_EXEMPT = frozenset(("__spec__", "__name__", "__path__", "__loader__",
                     "__package__", "__file__", "__cached__", "__class__",
                     "__builtins__"))


_MISSING = object()
_FROMLIST_CODE = getattr(_bootstrap._handle_fromlist, "__code__", None)


class PlanError(Exception):
    """The plan file cannot be used (unreadable, wrong format, stale)."""


def _warn(msg):
    try:
        sys.stderr.write("coldstart plan: %s\n" % msg)
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass


# --- reading the plan ------------------------------------------------------

def _json_constant(name):
    raise ValueError("%s is not allowed in a plan" % name)


class _JSONContext(object):
    # The attributes _json.make_scanner reads; the plain types keep the
    # scanner on its C fast paths.
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_json_constant)
    memo = None


_WS = " \t\n\r"
# The members the applier needs, which the recorder writes first; the rest
# of a plan (the full module records) is for people and tools.
_HEAD = frozenset(("format", "version", "python", "sys_path", "index"))
# One row of the plan's "index": the applier's compact copy of a module.
INDEX_FIELDS = ("name", "kind", "path", "size", "mtime_ns", "action", "used",
                "dir", "search", "entry_index", "rebinds")


def _scanner():
    try:
        import _json
        return _json.make_scanner(_JSONContext()), _json.scanstring
    except (ImportError, AttributeError, TypeError):
        return None, None


def _head(text):
    """Parses the top-level object's members in order until those in _HEAD
    are all in; returns them, or None when the text does not look like that
    (the caller then parses it whole)."""
    scan, scanstring = _scanner()
    if scan is None:
        return None
    n = len(text)
    out = {}
    try:
        i = 0
        while text[i] in _WS:
            i += 1
        if text[i] != "{":
            return None
        i += 1
        while True:
            while text[i] in _WS:
                i += 1
            if text[i] != '"':
                return None
            key, i = scanstring(text, i + 1, True)
            while text[i] in _WS:
                i += 1
            if text[i] != ":":
                return None
            i += 1
            while text[i] in _WS:
                i += 1
            out[key], i = scan(text, i)
            if _HEAD.issubset(out):
                return out
            while i < n and text[i] in _WS:
                i += 1
            if text[i] != ",":
                return None
            i += 1
    except Exception:
        return None


def _loads(text):
    scan, _ = _scanner()
    if scan is not None:
        i = 0
        while i < len(text) and text[i] in _WS:
            i += 1
        try:
            obj, end = scan(text, i)
            while end < len(text) and text[end] in _WS:
                end += 1
            if end == len(text):
                return obj
        except Exception:
            pass
    # Not valid JSON: json says where, at a cost paid only for broken files.
    import json
    return json.loads(text)


def _index_from_modules(modules):
    rows = []
    for m in modules:
        if isinstance(m, dict) and m.get("kind") in _LOADERS and \
                isinstance(m.get("path"), str):
            rows.append([m.get(f) for f in INDEX_FIELDS])
    return rows


def read(path):
    """Returns the plan in path as a dict with at least format, version,
    python, sys_path and index (rows of INDEX_FIELDS); raises PlanError
    when it cannot be read or is not a plan of a version this module
    applies."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise PlanError("cannot read %r: %s" % (path, e.strerror or e))
    try:
        text = data.decode("utf-8")
        plan = _head(text)
        if plan is None:
            plan = _loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise PlanError("%r is not JSON: %s" % (path, e))
    if not isinstance(plan, dict) or plan.get("format") != PLAN_FORMAT:
        raise PlanError("%r is not a coldstart plan" % path)
    if plan.get("version") != PLAN_VERSION:
        raise PlanError("%r is a plan of version %r; this coldstart applies "
                        "version %d" % (path, plan.get("version"),
                                        PLAN_VERSION))
    if not isinstance(plan.get("index"), list):
        if not isinstance(plan.get("modules"), list):
            raise PlanError("%r has no module list" % path)
        plan["index"] = _index_from_modules(plan["modules"])
    for row in plan["index"]:
        if not isinstance(row, list) or len(row) != len(INDEX_FIELDS) or \
                not isinstance(row[0], str) or row[1] not in _LOADERS or \
                not isinstance(row[2], str):
            raise PlanError("%r has a malformed index row" % path)
    return plan


def interpreter_identity():
    """What a plan records of the interpreter that made it; a plan made by
    another interpreter (or build) is stale."""
    return {
        "version": sys.version,
        "cache_tag": sys.implementation.cache_tag,
        "platform": sys.platform,
        "prefix": sys.prefix,
    }


# --- staleness -------------------------------------------------------------

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


def _shadowed(plan):
    """Returns why a file now on sys.path would be found before a planned
    top-level module, or None.  Only directories whose mtime changed since
    planning are listed."""
    entries = plan.get("sys_path") or []
    for pos, e in enumerate(entries):
        d = e.get("entry") if isinstance(e, dict) else None
        if not isinstance(d, str):
            continue
        try:
            mt = os.stat(d or ".").st_mtime_ns
        except OSError:
            continue
        if mt == e.get("mtime_ns"):
            continue
        try:
            names = os.listdir(d or ".")
        except OSError:
            continue
        here = set()
        for n in names:
            base = n.partition(".")[0]
            if base:
                here.add(base)
        for row in plan["index"]:
            ei = row[9]
            if "." in row[0] or not isinstance(ei, int) or ei <= pos:
                continue
            if row[0] in here:
                return ("%r on sys.path now holds %r, which would be found "
                        "before the planned %r" % (d, row[0], row[2]))
    return None


def check(plan):
    """Returns a list of reasons the plan does not fit this process (empty
    when it fits)."""
    why = []
    rec = plan.get("python") or {}
    cur = interpreter_identity()
    for k in ("version", "cache_tag", "platform", "prefix"):
        if rec.get(k) != cur[k]:
            why.append("the plan was made by another interpreter (%s %r, "
                       "this one has %r)" % (k, rec.get(k), cur[k]))
            return why
    for row in plan["index"]:
        r = _stale_file(row)
        if r:
            why.append(r)
            return why
    r = _shadowed(plan)
    if r:
        why.append(r)
    return why


# --- deferred modules ------------------------------------------------------

class _State(object):
    __slots__ = ("spec", "loader", "owner", "error", "order", "rebinds")

    def __init__(self, spec, loader, order, rebinds):
        self.spec = spec
        self.loader = loader
        self.owner = None
        self.error = None
        self.order = order
        # Submodule names the package's body binds to something else.
        self.rebinds = rebinds


# name -> _State for every module created deferred and not loaded yet.
_pending = {}
# Names whose deferred body failed: a later import statement loads them
# normally, so it raises (or succeeds) as a plain import would.
_failed = set()
_counter = [0]


def _state_of(mod):
    d = _module_getattr(mod, "__dict__")
    return _pending.get(d.get("__name__"))


def _load(mod):
    """Runs the body of a deferred module (once, whichever thread asks
    first; the others wait on the module's import lock)."""
    name = _module_getattr(mod, "__dict__").get("__name__")
    st = _pending.get(name)
    if st is None:
        return
    if st.owner == _thread.get_ident():
        return  # a use from inside its own body: a circular import
    with _bootstrap._ModuleLockManager(name):
        st = _pending.get(name)
        if st is None or type(mod) is not _Deferred:
            return
        if st.error is not None:
            raise st.error
        st.owner = _thread.get_ident()
        spec = st.spec
        spec._initializing = True
        try:
            st.loader.exec_module(mod)
        except BaseException as e:
            st.error = e
            st.owner = None
            _failed.add(name)
            if sys.modules.get(name) is mod:
                del sys.modules[name]
            raise
        finally:
            spec._initializing = False
        del _pending[name]
        st.owner = None
        # The body may have given itself a class of its own: keep it.
        if type(mod) is _Deferred:
            object.__setattr__(mod, "__class__", _ModuleType)


class _Deferred(_ModuleType):
    """The class of a module whose body has not run yet.  Reading any
    attribute but the ones the import system reads (and submodules bound by
    imports) runs the body first; so do setting and deleting attributes."""

    def __getattribute__(self, attr):
        if attr in _EXEMPT:
            return _module_getattr(self, attr)
        d = _module_getattr(self, "__dict__")
        name = d.get("__name__")
        st = _pending.get(name)
        if st is not None and st.owner != _thread.get_ident():
            # A submodule that an import bound here is answered as it is.
            v = d.get(attr, _MISSING)
            if attr in st.rebinds:
                _load(self)
            elif v is _MISSING:
                # `from pkg import sub` asks hasattr(pkg, "sub") first and
                # imports pkg.sub when it is missing: let it.
                if sys._getframe(1).f_code is _FROMLIST_CODE:
                    raise AttributeError(attr)
                _load(self)
            elif not (isinstance(v, _ModuleType) and
                      sys.modules.get("%s.%s" % (name, attr)) is v):
                _load(self)
        return _module_getattr(self, attr)

    def __setattr__(self, attr, value):
        d = _module_getattr(self, "__dict__")
        st = _pending.get(d.get("__name__"))
        # `import a.b` binds a.b on a: that must not run a's body.
        if st is not None and st.owner != _thread.get_ident() and not (
                isinstance(value, _ModuleType) and
                sys.modules.get("%s.%s" % (d["__name__"], attr)) is value):
            _load(self)
        _module_setattr(self, attr, value)

    def __delattr__(self, attr):
        _load(self)
        _ModuleType.__delattr__(self, attr)

    def __dir__(self):
        _load(self)
        return _ModuleType.__dir__(self)


class _DeferringLoader(object):
    """Stands in spec.loader while the import system creates the module;
    exec_module puts the real loader back and leaves the body for later."""

    def __init__(self, loader, rebinds=frozenset()):
        self.loader = loader
        self.rebinds = rebinds

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        spec = _module_getattr(module, "__spec__")
        spec.loader = self.loader
        d = _module_getattr(module, "__dict__")
        d["__loader__"] = self.loader
        _counter[0] += 1
        _pending[spec.name] = _State(spec, self.loader, _counter[0],
                                     self.rebinds)
        object.__setattr__(module, "__class__", _Deferred)


# Loaders whose modules can be deferred: their bodies are Python code.
DEFERRABLE_LOADERS = (_bootstrap_external.SourceFileLoader,
                      _bootstrap_external.SourcelessFileLoader)


def deferring_loader(loader):
    """Wraps loader so that the module it is about to create is left
    deferred (for coldstart.lazy.defer_import)."""
    return _DeferringLoader(loader)


# --- the finder ------------------------------------------------------------

_LOADERS = {
    "source": _bootstrap_external.SourceFileLoader,
    "bytecode": _bootstrap_external.SourcelessFileLoader,
    "extension": _bootstrap_external.ExtensionFileLoader,
}


class PlanFinder(object):
    """A meta-path finder answering the plan's modules from their recorded
    files: no sys.path scan.  It answers only when the recorded file is
    where the normal finders would look (its sys.path entry is on sys.path,
    or its directory in the parent's __path__); anything else goes to the
    normal finders."""

    def __init__(self, entries, defer):
        self.entries = entries
        self.defer = defer
        self._path_key = None
        self._path_set = frozenset()
        self.answered = 0

    def _on_sys_path(self, entry):
        key = tuple(sys.path)
        if key != self._path_key:
            s = set()
            for p in key:
                if isinstance(p, str):
                    s.add(os.path.abspath(p or "."))
            self._path_set = frozenset(s)
            self._path_key = key
        return entry in self._path_set

    def find_spec(self, name, path=None, target=None):
        m = self.entries.get(name)
        if m is None or name in _failed:
            return None
        where = m["dir"]
        if path is None:
            if not self._on_sys_path(where):
                return None
        else:
            try:
                if where not in path:
                    return None
            except TypeError:
                return None
        loader = _LOADERS[m["kind"]](name, m["path"])
        spec = _bootstrap_external.spec_from_file_location(
            name, m["path"], loader=loader,
            submodule_search_locations=m.get("search"))
        if self.defer and m.get("action") == "defer":
            spec.loader = _DeferringLoader(loader, m["rebinds"])
        self.answered += 1
        return spec

    def invalidate_caches(self):
        self._path_key = None


# --- public API ------------------------------------------------------------

_installed = [None]
_warm_lock = _thread.allocate_lock()
_warm_state = {"mode": "off", "started": False, "delay": None}


def installed():
    """The PlanFinder in use, or None."""
    return _installed[0]


def deferred():
    """Names of the modules created deferred whose bodies have not run, in
    the order they were imported."""
    return [n for n, _ in sorted(_pending.items(), key=lambda kv: kv[1].order)]


def is_deferred(module):
    """True while module's body has not run."""
    return type(module) is _Deferred


def load(module):
    """Runs a deferred module's body now (nothing for a loaded module);
    raises what the body raised."""
    if type(module) is _Deferred:
        _load(module)
    return module


def install(path, warm="off", strict=False, defer=True, native_lazy=False):
    """Reads the plan in path and applies it to this process; returns the
    finder, or None when the plan cannot be used (a warning says why and
    nothing was changed).

    warm: "off" (deferred bodies run at first use only) or "background"
    (a thread runs them, in import order, once responded() is called).
    strict: defer every planned pure-Python module the request did not use,
    ignoring the plan's eager list (the benchmark's floor; unsafe).
    defer=False uses the plan as a module index only.
    native_lazy: on an interpreter with PEP 810 (3.15+), defer through
    sys.set_lazy_imports_filter instead of coldstart's deferred modules
    (COLDSTART_PLAN_NATIVE=1; not exercised by the tests here, which have
    no 3.15).
    """
    if _installed[0] is not None:
        return _installed[0]
    if warm not in ("off", "background"):
        raise ValueError("warm mode %r is not off or background" % (warm,))
    try:
        plan = read(path)
        why = check(plan)
    except PlanError as e:
        _warn("%s; running without it" % e)
        return None
    if why:
        _warn("ignoring stale plan %r: %s; run `coldstart plan` again"
              % (path, why[0]))
        return None
    entries = {}
    for row in plan["index"]:
        name, kind, path, action, used = row[0], row[1], row[2], row[5], \
            row[6]
        if strict and kind != "extension" and not used and \
                action in ("eager", "defer"):
            action = "defer"
        e = {"kind": kind, "path": path, "action": action,
             "dir": row[7] or os.path.dirname(path)}
        if row[8] is not None:
            e["search"] = list(row[8])
        e["rebinds"] = frozenset(row[10] or ())
        entries[name] = e
    native = defer and native_lazy and \
        hasattr(sys, "set_lazy_imports_filter")
    finder = PlanFinder(entries, defer and not native)
    if native:
        # PEP 810 (3.15+): the interpreter defers, the finder only indexes.
        sys.set_lazy_imports_filter(lazy_imports_filter(plan, strict))
        sys.set_lazy_imports("all")
    sys.meta_path.insert(0, finder)
    _installed[0] = finder
    _warm_state["mode"] = warm
    return finder


def lazy_imports_filter(plan, strict=False):
    """The plan as a PEP 810 filter (Python 3.15+): a function
    f(importing_module, imported_module, fromlist) that is True for the
    imports the plan defers.  With sys.set_lazy_imports("all") and
    sys.set_lazy_imports_filter(f), the interpreter's own lazy imports take
    the place of coldstart's deferred modules (docs/plan.md)."""
    defer = set()
    for row in plan["index"]:
        a = row[5]
        if strict and row[1] in ("source", "bytecode") and not row[6] and \
                a == "eager":
            a = "defer"
        if a == "defer":
            defer.add(row[0])
    frozen = frozenset(defer)

    def lazy_filter(importing_module, imported_module, fromlist, /):
        return imported_module in frozen
    return lazy_filter


def _warm_all():
    # Deadline alarms and termination signals stay with the main thread.
    try:
        import signal
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM,
                                                  signal.SIGTERM,
                                                  signal.SIGINT})
    except (ImportError, AttributeError, OSError, ValueError):
        pass
    done = set()
    while True:
        names = [n for n in deferred() if n not in done]
        if not names:
            return
        for n in names:
            done.add(n)
            mod = sys.modules.get(n)
            if mod is None or type(mod) is not _Deferred:
                continue
            try:
                _load(mod)
            except BaseException as e:  # it surfaces again at first use
                _warn("background load of %s failed: %s: %s"
                      % (n, type(e).__name__, e))


def warm(block=False):
    """Runs every deferred body now: in this thread when block, else in a
    new thread (once)."""
    with _warm_lock:
        if _warm_state["started"]:
            return
        _warm_state["started"] = True
    if block:
        _warm_all()
    else:
        _thread.start_new_thread(_warm_all, ())


def responded():
    """Tells the plan the first response went out: with warm="background"
    the deferred bodies start loading in a thread now."""
    if _warm_state["mode"] == "background":
        warm()


def install_from_environ(environ=None):
    """The bootstrap's entry: COLDSTART_PLAN names the plan,
    COLDSTART_PLAN_WARM is off or background, COLDSTART_PLAN_STRICT=1
    selects strict mode.  Returns the finder or None."""
    env = os.environ if environ is None else environ
    path = env.get("COLDSTART_PLAN")
    if not path:
        return None
    warm_mode = env.get("COLDSTART_PLAN_WARM") or "off"
    if warm_mode not in ("off", "background"):
        _warn("COLDSTART_PLAN_WARM=%r is not off or background; using off"
              % warm_mode)
        warm_mode = "off"
    return install(path, warm=warm_mode,
                   strict=env.get("COLDSTART_PLAN_STRICT") == "1",
                   native_lazy=env.get("COLDSTART_PLAN_NATIVE") == "1")
