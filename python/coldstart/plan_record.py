"""The recording side of `coldstart plan` (docs/plan.md): loaded by the
planning bootstrap when COLDSTART_PLAN_RECORD names the plan to write.

While the target starts and answers the sample requests it notes, for every
module imported:
  - where it was found (spec origin, loader kind, size, mtime, bytecode);
  - when its body ran, on which thread, nested in which other bodies;
  - whether the request path used it: its code ran, or a non-dunder attribute
    of the module was read, while no module body was running (sys.monitoring
    on 3.12+, a profile hook before) after its import finished;
  - what its body did that a deferred body would do later or never: audit
    events (files opened for writing, sockets, processes, ...), atexit,
    codecs, signal and copyreg registrations, new threads, changes to
    sys.meta_path, sys.path_hooks, sys hooks and streams, warnings filters
    and the root logger, modules put in sys.modules by hand, and being
    imported (or read) by a native extension's init.
COLDSTART_PLAN_CONTROL is "FD:INODE", the read end of coldstart's control
pipe: a byte or EOF on it ends the recording and the plan is written at
once; else (a script run to its end) at exit.  Only the process coldstart
started and the processes it forks record: a Python process without that
pipe (a child started with subprocess, which closes descriptors) leaves
the recording alone, as it inherited only the environment.  A forked child
writes its record beside the started process's, RECORD.pidN (and its code
archive CODE.pidN), in the run's private directory (docs/plan.md, "Files
written while planning"): coldstart keeps the one of the process that answered
(docs/plan.md, "Servers of several processes").  Planning only: nothing
here runs when a plan is applied.
"""

import os
import sys
import time
import _thread
import _weakref

# The import system's own modules, always there: importing the importlib
# package would import warnings (and types) as well.
_bootstrap = sys.modules["_frozen_importlib"]
_bootstrap_external = sys.modules["_frozen_importlib_external"]

from coldstart import plan as _plan

_ModuleType = type(sys)
_mod_getattr = _ModuleType.__getattribute__

# Reasons, by code; strict mode (the benchmark's floor) keeps only the
# native ones eager.
NATIVE = "native"
NATIVE_PARENT = "native-parent"
NATIVE_INIT = "native-init"
EFFECT = "effect"
REGISTRATION = "registration"
STATE = "state"
MODULES = "sys-modules"
PINNED = "pinned"
PARENT = "parent"
KIND = "kind"
FAILED = "failed"
CLASS = "module-class"
IMPORTS = "imports"

_AUDIT_EFFECTS = {
    "socket.connect", "socket.bind", "socket.getaddrinfo",
    "socket.gethostbyname", "socket.gethostbyaddr", "socket.sendto",
    "socket.sendmsg", "subprocess.Popen", "os.system", "os.exec",
    "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.kill",
    "os.killpg", "ctypes.dlopen", "os.remove", "os.rename", "os.mkdir",
    "os.rmdir", "os.symlink", "os.link", "os.chmod", "os.chown",
    "os.truncate", "os.chdir", "os.putenv", "os.unsetenv", "sys.settrace",
    "sys.setprofile", "sys.addaudithook", "urllib.Request",
    "shutil.copyfile", "shutil.rmtree", "shutil.move", "tempfile.mkstemp",
    "tempfile.mkdtemp", "webbrowser.open", "os.startfile", "mmap.__new__",
    "sqlite3.connect", "ftplib.connect", "smtplib.connect",
    "http.client.connect", "telnetlib.Telnet.open", "poplib.connect",
    "imaplib.open", "nntplib.connect",
}


class _Rec(object):
    __slots__ = ("name", "thread", "start", "end", "children_us", "reasons",
                 "parent_body", "order", "ok", "module", "origin",
                 "body_names", "all_", "spec")

    def __init__(self, name, thread, parent_body, order, module):
        self.name = name
        self.thread = thread
        self.start = time.perf_counter_ns()
        self.end = None
        self.children_us = 0
        self.reasons = {}
        self.parent_body = parent_body
        self.order = order
        self.ok = None
        self.module = module
        self.origin = None
        # The spec its body ran with (a module's __spec__ can be replaced
        # later: six.moves sets its own on the http.client it aliases).
        self.spec = None
        # Names read from the module's namespace while its body ran, that
        # its source does not show (plan_names.py).
        self.body_names = set()
        # Its __all__ when its body ended: (is a tuple, names), or None.
        self.all_ = None


class _Frame(object):
    __slots__ = ("rec", "snap", "modules")

    def __init__(self, rec, snap, modules):
        self.rec = rec
        self.snap = snap
        self.modules = modules


class Recorder(object):
    def __init__(self, out, eager=(), argv=None, eager_from=()):
        self.out = out
        self.pins = set(eager)
        self.eager_from = set(eager_from)
        self.argv = list(argv or sys.argv)
        # What applying the plan through the environment compares.
        self.program = _plan.program_identity(self.argv)
        self.preloaded = set(sys.modules)
        self.recs = {}
        self.used = set()
        self.used_files = set()
        self.stacks = {}       # thread id -> [_Frame]
        self.ext_depth = {}    # thread id -> depth inside a native init
        self.imported = set()  # names the import system found (audit)
        self.importer = {}     # name -> the body that first imported it
        self.recording = True
        self.written = False
        self.order = 0
        self.lock = _thread.allocate_lock()
        # The recorder's own first failure (guard()): no plan is written
        # then, coldstart plan says why.
        self.failure = None
        self.watched = []
        self.file_mods = {}    # body file -> module name, once loaded
        self.restore = []
        self.later = {}
        self.profile = None
        self.code_out = None
        # (out, code_out) of the process coldstart started; a forked
        # child writes beside them (_forked)
        self.base_out = None
        self.regex = {}  # (pattern, flags) -> _sre.compile's arguments
        self.regex_hooked = False
        # the _plancode extension recording compile/exec/eval on strings
        # and the plan's "ext" member for it, when coldstart plan built it
        self.strcode = None
        self.strcode_ext = None
        self.strings = []
        # modules whose __all__ something read -> (code, offset) of the
        # reads from module bodies (star imports among them), None once
        # anything else read it.
        self.all_read = {}
        # submodules the requests read as an attribute of their package
        # (pkg.a.X): their import binds them there (decide()).
        self.via_parent = set()
        # modules whose bodies must run when imported, never behind a lazy
        # from-import (decide() fills it for lazy_from())
        self.must_import = set()
        # dotted module -> the bodies whose import statements bound it
        self.importers = {}
        # [weak ref to the class, len of its __dict__, its keys, its module]
        # of the classes built outside the standard library (_class_changes)
        self.classes = []
        # module -> the warnings its body raised through warnings.warn:
        # [category, message, module warned about, line, shown]
        self.warnings = {}

    # -- what a body did ---------------------------------------------------

    def guard(self, fn, *args):
        """fn(*args) for a hook in the target's own calls: the recorder's
        failure must never become the target's.  The first one stops the
        recording, and the plan is not written (write_plan says why)."""
        if self.failure is not None:
            return None
        try:
            return fn(*args)
        except Exception as e:
            self.fail(getattr(fn, "__name__", "a hook"), e)
            return None

    def fail(self, where, e):
        if self.failure is None:
            tb = e.__traceback__
            while tb is not None and tb.tb_next is not None:
                tb = tb.tb_next
            at = ""
            if tb is not None:
                at = " at %s:%d" % (os.path.basename(
                    tb.tb_frame.f_code.co_filename), tb.tb_lineno)
            self.failure = "%s: %s: %s%s" % (where, type(e).__name__, e, at)
        self.recording = False

    def _top(self):
        st = self.stacks.get(_thread.get_ident())
        return st[-1].rec if st else None

    def note(self, code, detail, rec=None):
        rec = rec or self._top()
        if rec is not None and self.recording:
            rec.reasons.setdefault(code, detail)

    def _snapshot(self):
        w = sys.modules.get("warnings")
        lg = sys.modules.get("logging")
        root = getattr(lg, "root", None) if lg is not None else None
        return (len(sys.meta_path), len(sys.path_hooks), _thread._count(),
                sys.excepthook, sys.displayhook, sys.stdout, sys.stderr,
                sys.stdin, sys.getrecursionlimit(),
                tuple(getattr(w, "filters", ())) if w is not None else (),
                len(getattr(root, "handlers", ())) if root is not None
                else 0,
                getattr(root, "level", None) if root is not None else None)

    _SNAP_NAMES = ("sys.meta_path", "sys.path_hooks", "a thread started",
                   "sys.excepthook", "sys.displayhook", "sys.stdout",
                   "sys.stderr", "sys.stdin", "the recursion limit",
                   "warnings filters", "root logger handlers",
                   "root logger level")

    def _compare(self, rec, before, after):
        for name, a, b in zip(self._SNAP_NAMES, before, after):
            if a is b or a == b:
                continue
            if name == "warnings filters" and _own_filters(a, b, rec.name):
                continue
            self.note(STATE, "its body changed %s" % name, rec)
            return

    def import_statement(self, name, globals, fromlist, level):
        """Notes the body running as an importer of the dotted modules an
        import statement binds (a.b of `import a.b.c`, a.b.x of `from a.b
        import x`)."""
        top = self._top()
        if type(name) is not str:
            return
        # Outside bodies (a function importing at run time) as "": a run
        # binds it too.
        who = top.name if top is not None else ""
        full = name
        if level:
            g = globals if isinstance(globals, dict) else {}
            pkg = g.get("__package__")
            if not isinstance(pkg, str):
                return
            bits = pkg.rsplit(".", level - 1)
            if len(bits) < level:
                return
            full = bits[0] + ("." + name if name else "")
        parts = full.split(".")
        for i in range(2, len(parts) + 1):
            self.importers.setdefault(".".join(parts[:i]), set()).add(who)
        for x in fromlist or ():
            if type(x) is str and full + "." + x in sys.modules:
                self.importers.setdefault(full + "." + x, set()).add(who)

    def _class_changes(self, rec):
        """Names set on the classes of other modules since the last look,
        while rec's body ran (None: no body): a decorator of one module
        setting methods on another module's class.  A deferred body would
        set them late or never: a registration.  Dunder names (ABC and
        typing bookkeeping) and private non-callables (caches) are not."""
        for e in self.classes:
            cls = e[0]()
            if cls is None:
                continue
            d = _type_dict(cls)
            if len(d) == e[1]:
                continue
            new = [k for k in d if k not in e[2]]
            e[1], e[2] = len(d), frozenset(d)
            if rec is None or e[3] == rec.name:
                continue
            for k in new:
                if not isinstance(k, str) or \
                        (k.startswith("__") and k.endswith("__")) or \
                        k.startswith("_abc_"):
                    continue
                v = d[k]
                if k.startswith("_") and not callable(v) and \
                        not hasattr(type(v), "__get__"):
                    continue
                self.note(REGISTRATION, "its body set %s on the class %s.%s"
                          % (k, e[3], getattr(cls, "__qualname__", "?")),
                          rec)
                break

    def body_start(self, module, spec):
        tid = _thread.get_ident()
        stack = self.stacks.setdefault(tid, [])
        parent = stack[-1].rec if stack else None
        # At the boundaries of bodies outside the standard library only
        # (its bodies set nothing on an application's classes): planning
        # bench/plan/fn_pandas took 0.5 s more CPU (3.8 s, not 3.3) with a
        # look at every boundary.
        if self.classes and not _stdlib(spec.name):
            self._class_changes(parent)
        self.order += 1
        rec = _Rec(spec.name, tid, parent.name if parent else None,
                   self.order, module)
        rec.origin = spec.origin
        rec.spec = spec
        self.recs[spec.name] = rec
        # Watched from the start: what others read from it while its body
        # runs decides which of its from-imports may stay lazy.
        self._watch(module)
        if self.ext_depth.get(tid):
            self.note(NATIVE_INIT, "imported by a native extension's init",
                      rec)
        stack.append(_Frame(rec, self._snapshot(), set(sys.modules)))
        return rec

    def body_end(self, rec, ok):
        tid = _thread.get_ident()
        stack = self.stacks.get(tid)
        rec.end = time.perf_counter_ns()
        rec.ok = ok
        if not stack or stack[-1].rec is not rec:
            return
        fr = stack.pop()
        if self.classes and not _stdlib(rec.name):
            self._class_changes(rec)
        after = self._snapshot()
        self._compare(rec, fr.snap, after)
        now = set(sys.modules)
        for n in now - fr.modules:
            if n != rec.name and n not in self.imported and \
                    not n.startswith(rec.name + ".") and \
                    n not in self.recs and not _harmless_entry(n):
                self.note(MODULES, "its body put %r in sys.modules" % n, rec)
                break
        if self.later or self.profile is not None:
            self._wrap_later()
        if stack:
            # The parent body's own effects are measured from here on.
            stack[-1].snap = after
            stack[-1].modules = now
            stack[-1].rec.children_us += (rec.end - rec.start) // 1000
        if ok and rec.name == _plan.RE_COMPILER:
            self.hook_regex()
        if ok and rec.name == "warnings" and \
                self.later.pop("warnings", None) is not None:
            # Its body has ended: the next statement may warn.
            self._wrap_warn(rec.module)
        if ok:
            f = getattr(rec.module, "__file__", None)
            if isinstance(f, str):
                self.file_mods[f] = rec.name
            rec.all_ = _all_of(rec.module)
            self._watch(rec.module)

    def _watch(self, module):
        if type(module) is _ModuleType:
            try:
                object.__setattr__(module, "__class__", _Watched)
                self.watched.append(module)
            except TypeError:
                pass

    def class_built_in_body(self, cls):
        if self._top() is not None:
            self.class_built(cls)

    def class_built(self, cls):
        mine = getattr(cls, "__module__", None)
        if isinstance(cls, type) and isinstance(mine, str) and \
                not _stdlib(mine):
            d = _type_dict(cls)
            # Weakly: a class a body drops must go as it would (a base's
            # __subclasses__() would list it otherwise).
            self.classes.append([_weakref.ref(cls), len(d), frozenset(d),
                                 mine])
        # dataclasses, pydantic and typing resolve string annotations in
        # the module's namespace while its body runs.
        ann = cls.__dict__.get("__annotations__")
        r = self.recs.get(mine) if isinstance(mine, str) else None
        if isinstance(ann, dict) and r is not None and r.end is None:
            for v in ann.values():
                if isinstance(v, str):
                    r.body_names.update(_identifiers(v))
        # A metaclass or __init_subclass__ from another module usually
        # registers the class somewhere (SQLAlchemy's events, plugin
        # registries): deferring the body would leave that undone.
        meta = type(cls)
        mm = getattr(meta, "__module__", "")
        if meta is not type and mm != mine and not _stdlib(mm):
            self.note(REGISTRATION, "its class %s has the metaclass %s.%s"
                      % (cls.__name__, mm, meta.__name__))
            return
        for base in cls.__mro__[1:]:
            hook = base.__dict__.get("__init_subclass__")
            if hook is not None:
                hm = getattr(base, "__module__", "")
                if hm != mine and not _stdlib(hm):
                    self.note(REGISTRATION, "its class %s runs %s.%s."
                              "__init_subclass__" % (cls.__name__, hm,
                                                     base.__name__))
                return

    def called_in_body(self, code, frame):
        # register_option(), register_backend(), ...: a body that calls a
        # registration function of another module.
        if "register" in code.co_name:
            top = self._top()
            f = getattr(top.module, "__file__", None) if top else None
            if f == code.co_filename:
                return
            # Registering one of the module's own classes (ABC.register,
            # a type-keyed registry) is safe to defer: no instance of it,
            # and for an ABC no isinstance() against it, can happen before
            # the module runs.  Not under a name (register("impl", Impl),
            # a name-keyed plugin table): a lookup by that name can.
            if code.co_name in _HARMLESS_REGISTER:
                return
            if frame is not None and _noop_abc_register(code, frame):
                return
            if frame is not None:
                names = code.co_varnames[:code.co_argcount +
                                         code.co_kwonlyargcount]
                loc = frame.f_locals
                if any(_own_class(loc.get(n), top.name) for n in names) \
                        and not any(type(loc.get(n)) is str for n in names):
                    return

            what = ""
            if frame is not None:
                shown = [getattr(v, "__qualname__", "?") for v in
                         (frame.f_locals.get(n) for n in code.co_varnames[
                             :code.co_argcount + code.co_kwonlyargcount])
                         if isinstance(v, type)]
                if shown:
                    what = " with %s" % ", ".join(shown[:3])
            self.note(REGISTRATION, "its body called %s() of %s%s"
                      % (code.co_name, code.co_filename, what))

    # -- the request path ----------------------------------------------------

    def in_request(self):
        return self.recording and not self.stacks.get(_thread.get_ident())

    def all_read_at(self, module, f):
        name = _mod_getattr(module, "__dict__").get("__name__")
        seen = self.all_read.setdefault(name, set())
        if seen is None:
            return
        if f is not None and f.f_code.co_name == "<module>":
            seen.add((f.f_code, f.f_lasti))
        else:
            self.all_read[name] = None

    def attr_read(self, module, attr):
        tid = _thread.get_ident()
        name = _mod_getattr(module, "__dict__").get("__name__")
        r = self.recs.get(name)
        if r is not None and r.end is None:
            r.body_names.add(attr)

        if self.ext_depth.get(tid):
            r = self.recs.get(name)
            if r is not None:
                self.note(NATIVE_INIT, "read by a native extension's init", r)
        elif not self.stacks.get(tid):
            self.used.add(name)
            if type(attr) is str and name + "." + attr in sys.modules:
                self.via_parent.add(name + "." + attr)

    def body_code(self, code, frame):
        """Code running while a body runs: when it runs with a module's
        globals whose body is running (a function of the module, eval'd
        code), its names count as read by that body."""
        g = frame.f_globals
        r = self.recs.get(g.get("__name__"))
        if r is None or r.end is not None or r.module is None or \
                _mod_getattr(r.module, "__dict__") is not g:
            return
        if code.co_name == "<module>" and code.co_filename == r.origin:
            return  # its own body: plan_names reads its source
        r.body_names.update(code.co_names)

    def code_ran(self, filename):
        name = self.file_mods.get(filename)
        if name is not None:
            self.used.add(name)
            return True
        return False

    # -- the hooks -------------------------------------------------------------

    def audit(self, event, args):
        if not self.recording:
            return
        if event == "import":
            self.imported.add(args[0])
            if args[0] not in self.importer:
                top = self._top()
                self.importer[args[0]] = top.name if top else None
            return
        if event == "open":
            if len(args) < 2:
                return
            mode, flags = args[1], args[2] if len(args) > 2 else 0
            writing = (isinstance(mode, str) and any(c in mode
                                                     for c in "wax+")) or \
                (mode is None and isinstance(flags, int) and flags & (
                    os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC |
                    os.O_APPEND))
            if writing and self._top() is not None:
                self.note(EFFECT, "its body opened %r for writing"
                          % (args[0],))
            return
        if event == "ctypes.dlopen" and args and args[0] is None:
            return  # the program itself, already loaded
        if event in _AUDIT_EFFECTS and self._top() is not None:
            self.note(EFFECT, "its body raised the audit event %s" % event)

    def _wrap_later(self):
        # Only modules whose bodies have ended: a body that ends inside
        # another (threading's import of _weakrefset) must not find the
        # outer one half made (threading without setprofile yet).
        for name in [n for n in self.later if _initialized(n)]:
            attr, what = self.later.pop(name)
            if what == "warnings.warn":
                self._wrap_warn(sys.modules[name])
            else:
                self._wrap(sys.modules[name], attr, what)
        if self.profile is not None and _initialized("threading"):
            sys.modules["threading"].setprofile(self.profile)
            self.profile = None

    def warned(self, w, message, category, stacklevel):
        """warnings.warn() called while a body ran: the warning is noted on
        the module, and when the filters in force show it, the module
        stays eager (deferred, its body would warn late or never)."""
        top = self._top()
        if top is None:
            return
        if isinstance(message, Warning):
            category = type(message)
        elif category is None:
            category = UserWarning
        if not (isinstance(category, type) and
                issubclass(category, Warning)):
            return
        # The frame warned about, as warnings finds it: the caller's, up
        # stacklevel - 1 frames, skipping the import system's (and the
        # recorder's own) frames above the first.
        try:
            f = sys._getframe(3)
            for _ in range(max(int(stacklevel), 1) - 1):
                f = f.f_back
                while f is not None and _internal_frame(f):
                    f = f.f_back
        except (ValueError, TypeError):
            f = None
        module = f.f_globals.get("__name__", "<string>") if f else "sys"
        lineno = f.f_lineno if f else 0
        text = str(message)
        shown = _filters_show(w, text, category, module, lineno)
        entry = [category.__module__ + "." + category.__qualname__,
                 text[:200], module, lineno, shown]
        self.warnings.setdefault(top.name, []).append(entry)
        if shown:
            self.note(EFFECT, "its body warned at import (%s: %s), which "
                      "the warning filters show" % (category.__name__,
                                                    text[:80]), top)

    def _wrap_warn(self, w):
        orig = getattr(w, "warn", None)
        if orig is None:
            return
        rec = self

        def warn(message, category=None, stacklevel=1, *args, **kwargs):
            if rec.recording:
                rec.guard(rec.warned, w, message, category, stacklevel)
            # This frame is the recorder's: one more up, as the caller
            # meant (a stacklevel that is no int gets warn's own error).
            if type(stacklevel) is int:
                stacklevel += 1
            return orig(message, category, stacklevel, *args, **kwargs)
        warn.__wrapped__ = orig
        w.warn = warn
        self.restore.append((w, "warn", orig))

    def _wrap(self, owner, attr, what):
        orig = getattr(owner, attr, None)
        if orig is None:
            return
        rec = self

        def registered(args):
            top = rec._top()
            if top is not None and not (what == "copyreg.pickle" and args and
                                        _own_class(args[0], top.name)):
                rec.note(REGISTRATION, "its body called %s" % what)

        def wrapper(*args, **kwargs):
            if rec.recording:
                rec.guard(registered, args)
            return orig(*args, **kwargs)
        try:
            wrapper.__wrapped__ = orig
            wrapper.__name__ = getattr(orig, "__name__", attr)
            setattr(owner, attr, wrapper)
            self.restore.append((owner, attr, orig))
        except (AttributeError, TypeError):
            pass

    def hook_regex(self):
        """Records what the regular expression compiler hands _sre.compile
        for each pattern compiled until the last response (the plan's
        regex table, plan_code.py): applying the plan, those patterns skip
        the parser and compiler.  A pattern whose compiling warned is left
        out (its warning must show again)."""
        mod = sys.modules.get(_plan.RE_COMPILER)
        if mod is None or self.regex_hooked:
            return
        d = _mod_getattr(mod, "__dict__")
        orig, sre = d.get("compile"), d.get("_sre")
        if orig is None or sre is None:
            return
        self.regex_hooked = True
        spy = _SreSpy(sre)
        table = self.regex
        rec = self

        def compile(p, flags=0):
            w = sys.modules.get("warnings")
            warned = []
            warn = getattr(w, "warn", None)
            if warn is not None:
                def spy_warn(*a, **k):
                    warned.append(1)
                    return warn(*a, **k)
                w.warn = spy_warn
            tid = _thread.get_ident()
            spy.last.pop(tid, None)
            try:
                r = orig(p, flags)
            finally:
                if warn is not None and w.warn is spy_warn:
                    w.warn = warn
            args = spy.last.pop(tid, None)
            if args is not None and rec.recording:
                rec.guard(noted, p, flags, args, warned, w)
            return r

        def noted(p, flags, args, warned, w):
            if not warned and \
                    (w is not None or "warnings" not in sys.modules) and \
                    type(p) in (str, bytes) and args[0] is p and \
                    not int(flags) & _RE_DEBUG and len(table) < _RE_MAX:
                # Plain ints and containers (the compiler's opcodes are an
                # int subclass): what marshal writes.
                try:
                    table.setdefault((p, int(flags)), (
                        args[0], int(args[1]), [int(c) for c in args[2]],
                        int(args[3]), {str(k): int(v) for k, v in
                                       args[4].items()},
                        tuple(args[5])))
                except (TypeError, ValueError, AttributeError):
                    pass
        compile.__wrapped__ = orig
        d["compile"] = compile
        d["_sre"] = spy
        self.restore.append((mod, "compile", orig))
        self.restore.append((mod, "_sre", sre))

    def install(self):
        rec = self
        self.hook_regex()
        base = _bootstrap_external._LoaderBasics
        orig_exec = base.exec_module

        def exec_module(loader, module):
            spec = _mod_getattr(module, "__spec__")
            r = rec.guard(rec.body_start, module, spec)
            ok = False
            try:
                orig_exec(loader, module)
                ok = True
            finally:
                if r is not None:
                    rec.guard(rec.body_end, r, ok)
        base.exec_module = exec_module
        self.restore.append((base, "exec_module", orig_exec))

        ext = _bootstrap_external.ExtensionFileLoader
        orig_create = ext.create_module

        def create_module(loader, spec):
            tid = _thread.get_ident()
            rec.ext_depth[tid] = rec.ext_depth.get(tid, 0) + 1
            try:
                return orig_create(loader, spec)
            finally:
                rec.ext_depth[tid] -= 1
        ext.create_module = create_module
        self.restore.append((ext, "create_module", orig_create))

        import builtins
        orig_build = builtins.__build_class__

        def build_class(func, name, *bases, **kw):
            cls = orig_build(func, name, *bases, **kw)
            if rec.recording:
                rec.guard(rec.class_built_in_body, cls)
            return cls
        builtins.__build_class__ = build_class
        self.restore.append((builtins, "__build_class__", orig_build))

        # Every import statement of a body, also of modules already
        # imported: which bodies bind a submodule on its package (decide()).
        orig_import = builtins.__import__

        def import_(name, globals=None, locals=None, fromlist=(), level=0):
            m = orig_import(name, globals, locals, fromlist, level)
            if rec.recording:
                rec.guard(rec.import_statement, name, globals, fromlist,
                          level)
            return m
        builtins.__import__ = import_
        self.restore.append((builtins, "__import__", orig_import))

        import atexit
        import codecs
        import _codecs
        self._wrap(atexit, "register", "atexit.register")
        self._wrap(codecs, "register", "codecs.register")
        self._wrap(_codecs, "register", "codecs.register")
        try:
            import _signal
            self._wrap(_signal, "signal", "signal.signal")
        except ImportError:
            pass
        # Python modules are wrapped once the target imports them: what the
        # recorder imports itself is left out of the plan.
        self.later = {"copyreg": ("pickle", "copyreg.pickle"),
                      "signal": ("signal", "signal.signal"),
                      "warnings": ("warn", "warnings.warn")}
        self._wrap_later()
        # A program that ends with os._exit runs no atexit: the started
        # process writes its record first (a forked child ending so, a
        # multiprocessing worker, leaves the choice to the others).
        orig_exit = os._exit
        started_pid = os.getpid()

        def _exit(*args, **kwargs):
            if os.getpid() == started_pid and not rec.written:
                rec.guard(rec.stop)
            return orig_exit(*args, **kwargs)
        _exit.__wrapped__ = orig_exit
        os._exit = _exit
        self.restore.append((os, "_exit", orig_exit))
        if hasattr(sys, "addaudithook"):
            def audit(event, args):
                if rec.recording:
                    rec.guard(rec.audit, event, args)
            sys.addaudithook(audit)
        self._install_use_hook()

    def _install_use_hook(self):
        mon = getattr(sys, "monitoring", None)
        if mon is not None:
            tool = None
            for t in (mon.PROFILER_ID, 5, 4, 3):
                try:
                    mon.use_tool_id(t, "coldstart-plan")
                    tool = t
                    break
                except ValueError:
                    continue
            if tool is not None:
                DISABLE = mon.DISABLE
                rec = self

                def started(code, frame):
                    if rec.stacks.get(_thread.get_ident()):
                        rec.body_code(code, frame)
                        if "register" in code.co_name and \
                                code.co_name != "<module>":
                            rec.called_in_body(code, frame)
                        return None
                    if code.co_name == "<module>":
                        return None
                    if rec.code_ran(code.co_filename):
                        return DISABLE
                    return None

                def py_start(code, offset):
                    if not rec.recording:
                        return DISABLE
                    r = rec.guard(started, code, sys._getframe(1))
                    return DISABLE if not rec.recording else r
                mon.register_callback(tool, mon.events.PY_START, py_start)
                mon.set_events(tool, mon.events.PY_START)
                self.tool = tool
                return
        rec = self

        def called(frame):
            code = frame.f_code
            if rec.stacks.get(_thread.get_ident()):
                rec.body_code(code, frame)
                if "register" in code.co_name and \
                        code.co_name != "<module>":
                    rec.called_in_body(code, frame)
            elif code.co_name != "<module>":
                rec.code_ran(code.co_filename)

        def profile(frame, event, arg):
            if event == "call" and rec.recording:
                rec.guard(called, frame)
        self.tool = None
        sys.setprofile(profile)
        # threading too, once the target imports it (_wrap_later).
        self.profile = profile
        self._wrap_later()

    def _uninstall(self):
        for owner, attr, orig in reversed(self.restore):
            try:
                setattr(owner, attr, orig)
            except (AttributeError, TypeError):
                pass
        for m in self.watched:
            if type(m) is _Watched:
                object.__setattr__(m, "__class__", _ModuleType)
        if self.tool is not None:
            mon = sys.monitoring
            mon.set_events(self.tool, 0)
            mon.register_callback(self.tool, mon.events.PY_START, None)
            mon.free_tool_id(self.tool)
        elif sys.getprofile() is not None:
            sys.setprofile(None)

    # -- the plan ------------------------------------------------------------

    def stop(self):
        """Ends the recording and writes the plan (once)."""
        with self.lock:
            if self.written:
                return
            self.recording = False
            if self.strcode is not None:
                self.strings = self.strcode.recorded()
            names = list(sys.modules)
            self._uninstall()
            try:
                if self.failure is not None:
                    write_failure(self)
                else:
                    write_plan(self, names)
            except Exception as e:
                sys.stderr.write("coldstart plan: cannot write the plan: "
                                 "%s: %s\n" % (type(e).__name__, e))
            self.written = True


# SRE_FLAG_DEBUG (prints while compiling), and how many patterns a plan
# holds at most.
_RE_DEBUG = 128
_RE_MAX = 20000


class _SreSpy(object):
    """Stands in for _sre in the compiler's namespace while planning: notes
    the arguments of compile() per thread."""

    def __init__(self, sre):
        self.sre = sre
        self.last = {}

    def compile(self, *args):
        self.last[_thread.get_ident()] = args
        return self.sre.compile(*args)

    def __getattr__(self, attr):
        return getattr(self.sre, attr)


class _Watched(_ModuleType):
    """Planning only: a module whose attribute reads are noted."""

    def __getattribute__(self, attr):
        r = _REC[0]
        if r is not None and r.recording and attr not in _plan._EXEMPT:
            f = sys._getframe(0).f_back
            if f is None or f.f_code.co_filename not in _IMPORT_SYSTEM:
                r.guard(r.attr_read, self, attr)
                if attr == "__all__":
                    r.guard(r.all_read_at, self, f)
        return _mod_getattr(self, attr)


# The import system's own reads of a module (exec_module reads __dict__)
# are no use.
_IMPORT_SYSTEM = frozenset((
    getattr(_bootstrap._handle_fromlist, "__code__", None) and
    _bootstrap._handle_fromlist.__code__.co_filename,
    getattr(_bootstrap_external._LoaderBasics.exec_module, "__code__",
            None) and
    _bootstrap_external._LoaderBasics.exec_module.__code__.co_filename))


_REC = [None]


def _identifiers(text):
    """The identifiers in an annotation string (without re, which the
    recorder must not import: what it imports is left out of the plan)."""
    out = []
    word = []
    for c in text + " ":
        if c.isalnum() or c == "_":
            word.append(c)
        else:
            if word and not word[0].isdigit():
                out.append("".join(word))
            word = []
    return out

_KINDS = (
    (_bootstrap_external.SourceFileLoader, "source"),
    (_bootstrap_external.SourcelessFileLoader, "bytecode"),
    (_bootstrap_external.ExtensionFileLoader, "extension"),
    (_bootstrap.BuiltinImporter, "builtin"),
    (_bootstrap.FrozenImporter, "frozen"),
)


def _initialized(name):
    """True when module name is in sys.modules and its body has ended."""
    mod = sys.modules.get(name)
    if mod is None:
        return False
    spec = getattr(mod, "__spec__", None)
    return not getattr(spec, "_initializing", False)


def _kind(spec):
    loader = spec.loader
    for cls, kind in _KINDS:
        if loader is cls or type(loader) is cls:
            return kind
    # A file loader's subclass that runs the code its base would
    # (coldstart.lambda's loader of the handler's module, which holds the
    # code compiled during init) says so; the plan then archives that code.
    kind = getattr(type(loader), "coldstart_plan_kind", None)
    if kind in ("source", "bytecode") and isinstance(loader, _KINDS[
            0 if kind == "source" else 1][0]):
        return kind
    if loader is None or type(loader).__name__ == "NamespaceLoader":
        return "namespace"
    return "other"


def _stat(path):
    try:
        st = os.stat(path)
    except (OSError, TypeError, ValueError):
        return None
    return st.st_size, st.st_mtime_ns


def _entry(rec_obj, name, mod, sys_path_abs):
    spec = getattr(mod, "__spec__", None)
    r = rec_obj.recs.get(name)
    if r is not None and r.spec is not None and (
            (mod is r.module and getattr(spec, "name", None) != name) or
            (mod is not r.module and spec is None)):
        # The module its body ran in was given another's spec (six.moves
        # sets its own on the http.client it aliases), or the body put a
        # wrapper without a spec in its place (cryptography's deprecated
        # modules): importing the name still runs this file.  A module
        # that put another module in its place (collections.abc) is that
        # module's.
        spec = r.spec
    if spec is None:
        return None
    kind = _kind(spec)
    m = {"name": name, "kind": kind, "package":
         spec.submodule_search_locations is not None}
    origin = spec.origin
    if kind in ("source", "bytecode", "extension") and isinstance(origin,
                                                                    str):
        origin = os.path.abspath(origin)
        s = _stat(origin)
        if s is None:
            kind = m["kind"] = "other"
        else:
            m["path"] = origin
            m["size"], m["mtime_ns"] = s
            d = os.path.dirname(origin)
            if m["package"]:
                d = os.path.dirname(d)
            m["dir"] = d
            if "." not in name:
                m["entry_index"] = sys_path_abs.get(d, -1)
            if spec.submodule_search_locations is not None:
                m["search"] = [str(p) for p in
                               spec.submodule_search_locations]
            cached = spec.cached if kind == "source" else None
            cs = _stat(cached) if cached else None
            m["bytecode"] = None if cs is None else {
                "path": cached, "size": cs[0], "mtime_ns": cs[1]}
    elif isinstance(origin, str):
        m["origin"] = origin
    by = rec_obj.importer.get(name)
    if by:
        m["imported_by"] = by
    if r is not None and r.end is not None:
        cum = (r.end - r.start) // 1000
        m["order"] = r.order
        m["import_us"] = cum
        m["self_us"] = max(cum - r.children_us, 0)
        m["thread"] = "main" if r.thread == _MAIN[0] else "other"
        if r.parent_body:
            m["imported_by"] = r.parent_body
    m["used"] = name in rec_obj.used
    if name in rec_obj.warnings:
        # What its body warned at import: a deferred body would warn at its
        # first use instead (an applier may load it at once when the filters
        # in force then show one of these).
        m["warnings"] = rec_obj.warnings[name][:20]
    return m


_MAIN = [_thread.get_ident()]


# logging.Handler() registers its lock for os.fork(): a handler, not a
# registration that another module looks up.
_HARMLESS_REGISTER = frozenset(("_register_at_fork_reinit_lock",))


def _noop_abc_register(code, frame):
    """True for ABCMeta.register(cls, sub) of a class that already is a
    subclass of cls (Cython's runtime registers the builtin generator type
    with collections.abc.Generator): it changes nothing, so deferring it
    changes nothing either."""
    abc = sys.modules.get("abc")
    meta = getattr(abc, "ABCMeta", None)
    reg = getattr(getattr(meta, "register", None), "__code__", None)
    if reg is None or code is not reg:
        return False
    loc = frame.f_locals
    cls, sub = loc.get("cls"), loc.get("subclass")
    if not isinstance(cls, type) or not isinstance(sub, type):
        return False
    try:
        return issubclass(sub, cls)
    except Exception:
        return False


def _own_class(obj, modname):
    """True for a class of module modname, or of a native extension inside
    its package (frozenlist registers frozenlist._frozenlist.FrozenList)."""
    if not isinstance(obj, type) and type(obj).__name__ != "function":
        return False
    m = getattr(obj, "__module__", None)
    if m == modname:
        return True
    if isinstance(m, str) and m.startswith(modname + "."):
        sub = sys.modules.get(m)
        f = getattr(sub, "__file__", None) or ""
        return not f.endswith((".py", ".pyc"))
    return False


def _own_filters(before, after, modname):
    """True when the body only added warnings filters for warning classes
    of its own package, which nothing can raise before the package runs."""
    top = modname.partition(".")[0]
    old = set(id(f) for f in before)
    for f in before:
        if f not in after:
            return False
    for f in after:
        if id(f) in old:
            continue
        cat = f[2] if isinstance(f, tuple) and len(f) > 2 else None
        m = getattr(cat, "__module__", "") or ""
        if m.partition(".")[0] != top:
            return False
    return True


def _harmless_entry(name):
    """sys.modules entries a body may add without faking a module: Cython's
    shared runtime, the submodules a native module registers for itself
    (pyexpat.errors), aliases of modules already there (__mp_main__)."""
    if name.startswith("_cython_") or name == "cython_runtime":
        return True
    mod = sys.modules.get(name)
    parent = sys.modules.get(name.rpartition(".")[0]) if "." in name else None
    if parent is not None:
        f = getattr(parent, "__file__", None) or ""
        if not f.endswith((".py", ".pyc")):
            return True
    for other, m in list(sys.modules.items()):
        if m is mod and other != name:
            return True
    return False
_STDLIB = []


_type_dict = type.__dict__["__dict__"].__get__


def _internal_frame(f):
    name = f.f_code.co_filename
    return ("importlib" in name and "_bootstrap" in name) or \
        name == __file__ or name.endswith("coldstart/plan_record.py")


def _filter_matches(obj, arg):
    """A filter's message or module field against arg, as _warnings does:
    None matches all, a string (the default filters') only itself, else a
    compiled pattern's match()."""
    if obj is None:
        return True
    if isinstance(obj, str):
        return obj == arg
    return bool(obj.match(arg))


def _filters_show(w, text, category, module, lineno):
    """Whether the warnings filters w.filters (as warnings.warn_explicit
    reads them) show this warning: any action but "ignore"."""
    for f in getattr(w, "filters", ()):
        try:
            action, msg, cat, mod, ln = f
            if _filter_matches(msg, text) and issubclass(category, cat) \
                    and _filter_matches(mod, module) and \
                    (ln == 0 or lineno == ln):
                return action != "ignore"
        except (TypeError, ValueError, AttributeError):
            continue
    return getattr(w, "defaultaction", "default") != "ignore"


def _stdlib(modname):
    """True for builtins and modules of the interpreter's own library."""
    if not modname or modname == "builtins":
        return True
    top = modname.partition(".")[0]
    names = getattr(sys, "stdlib_module_names", None)
    if names is not None:
        return top in names
    mod = sys.modules.get(top)
    f = getattr(mod, "__file__", None) if mod is not None else None
    if not f:
        return True
    if not _STDLIB:
        import sysconfig
        _STDLIB.append(os.path.dirname(os.__file__))
        _STDLIB.append(sysconfig.get_paths().get("stdlib") or "")
    return any(f.startswith(d + os.sep) for d in _STDLIB if d) and \
        "-packages" not in f


def decide(rec_obj, modules):
    """Sets action and reasons on each module entry."""
    by_name = {m["name"]: m for m in modules}
    for m in modules:
        name = m["name"]
        reasons = []
        r = rec_obj.recs.get(name)
        if r is not None:
            for code, detail in r.reasons.items():
                reasons.append({"code": code, "detail": detail})
            if r.ok is False:
                reasons.append({"code": FAILED,
                                "detail": "its import failed"})
        if m["kind"] == "extension":
            reasons.append({"code": NATIVE, "detail": "a native extension"})
        elif m["kind"] not in ("source", "bytecode"):
            reasons.append({"code": KIND, "detail": "a %s module" %
                            m["kind"]})
        if name in rec_obj.pins or any(name.startswith(p + ".")
                                       for p in rec_obj.pins):
            reasons.append({"code": PINNED, "detail": "pinned with --eager"})
        mod = sys.modules.get(name)
        if mod is not None and type(mod) not in (_ModuleType, _Watched):
            reasons.append({"code": CLASS, "detail":
                            "a module of class %s" % type(mod).__name__})
        if m.get("package") and mod is not None:
            # `from .isoparser import isoparser`: the applier must load the
            # package for these names instead of answering the submodule.
            d = getattr(mod, "__dict__", {})
            rebinds = []
            for sub, v in list(d.items()):
                full = "%s.%s" % (name, sub)
                if isinstance(sub, str) and full in sys.modules and \
                        v is not sys.modules[full]:
                    rebinds.append(sub)
            if rebinds:
                m["rebinds"] = sorted(rebinds)
        m["reasons"] = reasons
        if m["used"]:
            m["action"] = "load"
        elif reasons:
            m["action"] = "eager"
        else:
            m["action"] = "defer"
    # A submodule the requests read as an attribute of its package
    # (pkg.a.X) is bound there by its import: the bodies that imported it,
    # and those that imported them, must run (a deferred `from pkg.b import
    # B` whose body imports pkg.a would leave pkg without its a).
    for full in sorted(rec_obj.via_parent):
        m = by_name.get(full)
        if m is None:
            continue
        # A body that runs all the same binds it (the script's, one
        # started before the recorder, one that loads or stays eager).
        if any(i not in by_name or by_name[i]["action"] != "defer"
               for i in rec_obj.importers.get(full, ())):
            continue
        by = m.get("imported_by")
        seen = set()
        while by and by not in seen and by in by_name:
            seen.add(by)
            d = by_name[by]
            rec_obj.must_import.add(by)
            if d["action"] == "defer":
                d["action"] = "eager"
                d["reasons"].append({"code": IMPORTS, "detail":
                                     "its body imports %s, which the "
                                     "requests read as an attribute of %s"
                                     % (full, full.rpartition(".")[0])})
            by = d.get("imported_by")
    # A body runs after its package's: parents of modules that load at
    # import load too (native parents are kept in strict mode as well).
    for m in sorted(modules, key=lambda m: -m["name"].count(".")):
        if m["action"] == "defer":
            continue
        native = any(x["code"] in (NATIVE, NATIVE_INIT, NATIVE_PARENT)
                     for x in m["reasons"])
        name = m["name"]
        by = m.get("imported_by") or ""
        while "." in name:
            name = name.rpartition(".")[0]
            p = by_name.get(name)
            if p is None:
                continue
            # Imported by the package's own bodies only: deferring the
            # package defers this import too.  A native extension among
            # them loads after its package's body all the same: the
            # applier runs a deferred package's body before it creates a
            # native extension inside it (PlanFinder.find_spec).
            if by == name or by.startswith(name + "."):
                break
            if native and not any(x["code"] == NATIVE_PARENT
                                  for x in p["reasons"]):
                p["reasons"].append({"code": NATIVE_PARENT, "detail":
                                     "the package of native extension %s"
                                     % m["name"]})
            if p["action"] == "defer":
                p["action"] = "eager"
                p["reasons"].append({"code": PARENT, "detail":
                                     "the package of %s" % m["name"]})


def lazy_from(rec_obj, modules):
    """The plan's "from": per module whose body ran from its source, the
    from-imports that may bind lazily (plan_names.py); none for modules
    pinned with --eager-from."""
    from coldstart import plan_names as _plan_names
    found = {}
    for m in modules:
        name = m["name"]
        r = rec_obj.recs.get(name)
        if r is None or not r.ok or m["kind"] != "source" or \
                _pinned(name, rec_obj.eager_from):
            continue
        why = []
        rows = _plan_names.lazy_rows(name, m["path"], m["package"],
                                     r.body_names, sys.modules, why,
                                     extended=not _stdlib(name))
        if rows:
            found[name] = rows
        elif why:
            m["lazy_from_off"] = why[0]
    # A from-import of a module that must run binds at once (decide()).
    table = _plan_names.table(found, {
        m["name"]: "load" if m["name"] in rec_obj.must_import
        else m["action"] for m in modules})
    for m in modules:
        rows = table.get(m["name"])
        if rows:
            m["lazy_from"] = sum(len(r[-1].split()) for r in rows)
    return table


def _all_of(module):
    """A module's __all__ as (is a tuple, names) when it is a list or tuple
    of strings, else None."""
    try:
        v = _mod_getattr(module, "__dict__").get("__all__")
    except (AttributeError, TypeError):
        return None
    if type(v) not in (list, tuple) or \
            not all(type(x) is str for x in v):
        return None
    return type(v) is tuple, tuple(v)


def _star_opcodes():
    from coldstart import plan_names as _plan_names
    ops = _plan_names.opcodes()
    return ops[1:] if ops else None


def _all_read_as_attribute(reads):
    """True when something read a module's __all__ otherwise than a star
    import does (those take the names from the plan's "from"); reads is
    what all_read_at() noted, None for a read from a function."""
    if reads is None:
        return True
    star = _STAR_OPS[0] if _STAR_OPS else None
    for code, at in reads:
        c = code.co_code
        if star is None or at < 0 or at >= len(c) or c[at] != star[0] or \
                (star[1] is not None and c[at + 1] != star[1]):
            return True
    return False


_STAR_OPS = []


def recorded_all(rec_obj, modules):
    """The plan's "all": the __all__ of each module that may be deferred
    (not used by the requests) and whose __all__ something read, as its
    body left it, when nothing changed it after the body ended.  A deferred module answers a read of its
    __all__ from here without running its body (plan.py)."""
    out = {}
    _STAR_OPS[:] = [_star_opcodes()]
    for m in modules:
        name = m["name"]
        r = rec_obj.recs.get(name)
        if m["action"] == "load" or m["kind"] not in ("source", "bytecode") \
                or r is None or not r.ok or r.all_ is None or \
                not _all_read_as_attribute(rec_obj.all_read.get(name, ())):
            continue
        mod = sys.modules.get(name)
        if mod is None or _all_of(mod) != r.all_:
            continue  # changed since its body ended: not answered
        out[name] = {"tuple": list(r.all_[1])} if r.all_[0] else \
            list(r.all_[1])
    return out


def _opcodes():
    from coldstart import plan_names as _plan_names
    return _plan_names.opcodes()


def _pinned(name, pins):
    return name in pins or any(name.startswith(p + ".") for p in pins)


def new_file(path, mode):
    """path opened for writing as a new file: whatever is at that name (a
    leftover of a process with the same pid) is removed, and the open
    creates the file itself (O_EXCL), never through a link (O_NOFOLLOW).
    coldstart gives the recorder names in the run's private directory."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL |
                 getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0),
                 0o666)
    return os.fdopen(fd, mode)


def write_plan(rec_obj, names):
    import json
    sys_path = []
    sys_path_abs = {}
    for i, p in enumerate(sys.path):
        if not isinstance(p, str):
            continue
        a = os.path.abspath(p or ".")
        try:
            mt = os.stat(a).st_mtime_ns
        except OSError:
            mt = None
        sys_path.append({"entry": a, "mtime_ns": mt})
        sys_path_abs.setdefault(a, len(sys_path) - 1)
    modules = []
    for name in names:
        mod = sys.modules.get(name)
        if name in rec_obj.preloaded or name == "__main__" or \
                name == __name__ or mod is None:
            continue
        m = _entry(rec_obj, name, mod, sys_path_abs)
        if m is not None:
            modules.append(m)
    modules.sort(key=lambda m: (m.get("order", 1 << 30), m["name"]))
    decide(rec_obj, modules)
    lazy = lazy_from(rec_obj, modules)
    alls = recorded_all(rec_obj, modules)
    counts = {"load": 0, "eager": 0, "defer": 0}
    us = {"load": 0, "eager": 0, "defer": 0}
    for m in modules:
        counts[m["action"]] += 1
        us[m["action"]] += m.get("self_us", 0)
    index = _plan._index_from_modules(modules)
    code = None
    try:
        from coldstart import plan_code as _plan_code
        code = _plan_code.write(rec_obj.code_out or rec_obj.out + ".code",
                                index, [k + v for k, v in
                                        rec_obj.regex.items()],
                                rec_obj.strings,
                                getattr(rec_obj.strcode, "crc32c", None))
        if code is not None and rec_obj.strcode_ext is not None:
            # It also keeps the frame stack chunks, table or not.
            code["ext"] = rec_obj.strcode_ext
        if code is not None and "strings" in code:
            code["debug_ranges"] = _plan.debug_ranges()
    except OSError as e:
        sys.stderr.write("coldstart plan: cannot write the code archive: "
                         "%s; the plan loads modules from their files\n"
                         % e)
    # The applier reads the members up to "index" only: keep them first.
    plan = {
        "format": _plan.PLAN_FORMAT,
        "version": _plan.PLAN_VERSION,
        "python": _plan.interpreter_identity(),
        "sys_path": sys_path,
        "opcodes": _opcodes(),
        "from": lazy,
        "all": alls,
        "code": code,
        "program": rec_obj.program,
        "index": index,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "executable": sys.executable,
        "argv": rec_obj.argv,
        "preloaded": sorted(rec_obj.preloaded),
        "summary": {"modules": len(modules), "load": counts["load"],
                    "eager": counts["eager"], "defer": counts["defer"],
                    "load_self_us": us["load"],
                    "eager_self_us": us["eager"],
                    "defer_self_us": us["defer"],
                    "lazy_from": sum(m.get("lazy_from", 0)
                                     for m in modules)},
        "modules": modules,
    }
    tmp = rec_obj.out + ".tmp%d" % os.getpid()
    with new_file(tmp, "w") as f:
        json.dump(plan, f, separators=(",", ":"))
        f.write("\n")
    os.replace(tmp, rec_obj.out)


def write_failure(rec_obj):
    """In place of the plan: why the recorder stopped (coldstart plan
    reports it and writes no plan)."""
    import json
    tmp = rec_obj.out + ".tmp%d" % os.getpid()
    with new_file(tmp, "w") as f:
        json.dump({"format": "coldstart-plan-error", "code": "recorder",
                   "error": "the recorder failed while the target ran (%s), "
                   "so its record is incomplete and no plan was written; "
                   "please report it" % rec_obj.failure}, f)
        f.write("\n")
    os.replace(tmp, rec_obj.out)


def _control_thread(rec_obj, fd, started):
    started.release()
    try:
        os.read(fd, 1)
    except OSError:
        pass
    rec_obj.stop()
    # coldstart waits for every process holding the pipe to let it go.
    try:
        os.close(fd)
    except OSError:
        pass


def _start_control(rec_obj, fd):
    """Starts the control thread and waits until it runs: a thread counts
    in _thread._count() from its own start, which a module body running
    meanwhile would take for a thread it started (the "state" reason)."""
    started = _thread.allocate_lock()
    started.acquire()
    _thread.start_new_thread(_control_thread, (rec_obj, fd, started))
    started.acquire(True, 10)


def control_fd(value):
    """The control pipe's descriptor from COLDSTART_PLAN_CONTROL
    ("FD:INODE"), or None when this process does not hold that pipe (a
    process started by the target inherits the environment, not the
    descriptor: its FD, if open, is another file)."""
    fd, _, ino = (value or "").partition(":")
    if not fd.isdigit() or not ino.isdigit():
        return None
    try:
        st = os.fstat(int(fd))
    except OSError:
        return None
    if st.st_mode & 0o170000 != 0o010000 or st.st_ino != int(ino):  # FIFO
        return None
    return int(fd)


def _forked(rec_obj, fd):
    """In a child forked while recording: its own record beside the
    parent's, and its own control thread (threads do not survive fork)."""
    rec_obj.lock = _thread.allocate_lock()
    if rec_obj.written:
        return
    pid = os.getpid()
    out, code = rec_obj.base_out
    rec_obj.out = "%s.pid%d" % (out, pid)
    rec_obj.code_out = "%s.pid%d" % (code or out + ".code", pid)
    if fd is not None:
        try:
            _start_control(rec_obj, fd)
        except Exception as e:  # never the target's error
            rec_obj.fail("the control thread of a forked child", e)


def start_from_environ(environ=None):
    env = os.environ if environ is None else environ
    out = env.get("COLDSTART_PLAN_RECORD")
    if not out:
        return None
    fd = None
    if env.get("COLDSTART_PLAN_CONTROL"):
        fd = control_fd(env["COLDSTART_PLAN_CONTROL"])
        if fd is None:
            return None  # not a process coldstart started or one it forked
        # A program this process executes is not recorded either.
        os.set_inheritable(fd, False)
    eager = [e for e in (env.get("COLDSTART_PLAN_EAGER") or "").split(",")
             if e]
    eager_from = [e for e in (env.get("COLDSTART_PLAN_EAGER_FROM") or "")
                  .split(",") if e]
    rec_obj = Recorder(os.path.abspath(out), eager=eager,
                       eager_from=eager_from)
    if env.get("COLDSTART_PLAN_CODE_OUT"):
        rec_obj.code_out = os.path.abspath(env["COLDSTART_PLAN_CODE_OUT"])
    rec_obj.base_out = (rec_obj.out, rec_obj.code_out)
    _REC[0] = rec_obj
    ext = env.get("COLDSTART_PLAN_EXT")
    if ext:
        # Code compiled from strings (plan_code.py, "the string table").
        try:
            mod = _plan.load_plancode(ext)
            st = os.stat(ext)
            mod.record()
            rec_obj.strcode = mod
            rec_obj.strcode_ext = {"path": os.path.abspath(ext),
                                   "size": st.st_size,
                                   "mtime_ns": st.st_mtime_ns}
        except (OSError, ImportError, RuntimeError, _plan.PlanError) as e:
            sys.stderr.write("coldstart plan: code compiled from strings is "
                             "not recorded: %s\n" % e)
    rec_obj.install()
    if fd is not None:
        _start_control(rec_obj, fd)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=lambda: _forked(rec_obj, fd))
    import atexit
    atexit.register(rec_obj.stop)
    # What the recorder itself imported is not the target's.
    rec_obj.preloaded = set(sys.modules)
    return rec_obj
