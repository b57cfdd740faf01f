"""Deferred loading of customer code, so a server can be ready before it runs.

LazyModule loads a module from a file path or a module name on first use,
once, from any thread; LazyFunction does the same for one attribute (a
handler).  defer_import() and defer_imports() defer chosen third-party
modules with coldstart.plan's deferred modules.  Importing this file imports nothing
beyond what Python has already loaded at start-up.
"""

import os
import sys
import _thread

__all__ = ["LazyModule", "LazyFunction", "module", "function",
           "defer_import", "defer_imports"]


def _is_path(target):
    return target.endswith(".py") or os.sep in target or \
        (os.altsep is not None and os.altsep in target)


def _module_name_for(path):
    base = os.path.basename(path)
    return base[:-3] if base.endswith(".py") else base


class LazyModule(object):
    """A module that is imported the first time get() is called.

    target is a file path (anything ending in .py or containing a slash) or
    a dotted module name.  A file is loaded under name (default: its base
    name without .py), registered in sys.modules before its body runs, like
    an ordinary import, and its directory is put at the front of sys.path
    (when add_path is true) so the file can import its siblings; __name__
    and __file__ are what a plain import would give.

    get() is thread-safe: one thread imports while the others wait.  If the
    import raises, the exception propagates to that caller, is kept in
    .error, the half-built module is removed from sys.modules and the next
    get() tries again.  A get() from inside the module's own body (a
    circular use) returns the half-built module, as import does.
    """

    def __init__(self, target, name=None, add_path=True):
        if not target:
            raise ValueError("empty module target")
        self.target = target
        self.is_path = _is_path(target)
        if self.is_path:
            self.path = os.path.abspath(target)
            self.name = name or _module_name_for(self.path)
        else:
            self.path = None
            self.name = name or target
        self.add_path = add_path
        self.error = None
        self.attempts = 0
        self._module = None
        self._lock = _thread.RLock()
        self._loading = False

    @property
    def loaded(self):
        return self._module is not None

    def _load_path(self):
        import importlib.util

        if not os.path.isfile(self.path):
            raise ImportError("no such file: %r" % self.path,
                              name=self.name, path=self.path)
        old = sys.modules.get(self.name)
        if old is not None:
            old_file = getattr(old, "__file__", None)
            if old_file and os.path.abspath(old_file) == self.path:
                return old
            raise ImportError(
                "cannot load %r as module %r: that name is already taken by "
                "%r; choose another name" % (self.path, self.name, old),
                name=self.name, path=self.path)
        if self.add_path:
            d = os.path.dirname(self.path)
            if d not in sys.path:
                sys.path.insert(0, d)
        spec = importlib.util.spec_from_file_location(self.name, self.path)
        if spec is None or spec.loader is None:
            raise ImportError("cannot load %r: not a Python source file"
                              % self.path, name=self.name, path=self.path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[self.name] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            if sys.modules.get(self.name) is mod:
                del sys.modules[self.name]
            raise
        # The module may replace itself in sys.modules, as import allows.
        return sys.modules.get(self.name, mod)

    def _load_name(self):
        import importlib
        return importlib.import_module(self.name)

    def get(self):
        """Returns the module, importing it first if needed; raises what the
        import raised."""
        mod = self._module
        if mod is not None:
            return mod
        # Waiting in short slices keeps the main thread responsive to
        # signals (deadline alarms, SIGTERM) while another thread imports.
        while not self._lock.acquire(True, 0.05):
            pass
        try:
            if self._module is not None:
                return self._module
            if self._loading:
                part = sys.modules.get(self.name)
                if part is None:
                    raise ImportError("circular use of %r while it loads"
                                      % self.name, name=self.name)
                return part
            self._loading = True
            self.attempts += 1
            try:
                mod = self._load_path() if self.is_path else \
                    self._load_name()
            except BaseException as e:
                self.error = e
                raise
            finally:
                self._loading = False
            self.error = None
            self._module = mod
            return mod
        finally:
            self._lock.release()

    def __repr__(self):
        return "<LazyModule %r (%s)>" % (
            self.target, "loaded" if self.loaded else "not loaded")


class LazyFunction(object):
    """A callable that loads its module on the first call.

    resolve() returns the attribute attr of the module (default
    "handler"), raising ImportError from the import, or AttributeError or
    TypeError with a clear message when the attribute is missing or not
    callable.  Calling the object calls the resolved function.
    """

    def __init__(self, target, attr="handler", name=None, add_path=True):
        self.module = target if isinstance(target, LazyModule) else \
            LazyModule(target, name=name, add_path=add_path)
        self.attr = attr

    def resolve(self):
        mod = self.module.get()
        try:
            fn = getattr(mod, self.attr)
        except AttributeError:
            raise AttributeError("%r has no attribute %r" % (
                self.module.path or self.module.name, self.attr))
        if not callable(fn):
            raise TypeError("%r in %r is a %s, not a function" % (
                self.attr, self.module.path or self.module.name,
                type(fn).__name__))
        return fn

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)

    def __repr__(self):
        return "<LazyFunction %r of %r>" % (self.attr, self.module)


def module(target, name=None, add_path=True):
    """Returns a LazyModule for a file path or module name."""
    return LazyModule(target, name=name, add_path=add_path)


def function(target, attr="handler", name=None, add_path=True):
    """Returns a LazyFunction: attr of target, loaded on first call."""
    return LazyFunction(target, attr=attr, name=name, add_path=add_path)


def defer_import(name):
    """Returns module name with its body deferred until it is first really
    used; see defer_imports() for how and for the caveats.

        np = defer_import("numpy")      # instead of `import numpy as np`

        def handler(ctx, data=None):
            return str(np.arange(3))    # numpy's body runs here, once
    """
    return defer_imports(name)[0]


def defer_imports(*names):
    """Defers the body of each named module until it is first really used;
    returns the module objects.

    The module is created now (spec, __file__, __path__ set) and put in
    sys.modules, with coldstart.plan's deferred-module class: its body runs
    at the first read of an attribute other than the ones the import system
    reads, so later `import name` statements, `import name.sub` and
    `from name import sub` (a submodule) do not load it; `from name import
    x` loads it to bind x.  Modules that are already imported are returned
    as they are; a name that cannot be found raises ModuleNotFoundError now.

    Caveats:

    - Only modules whose loader reads source or bytecode are deferred;
      extension modules (.so), builtins and frozen modules are imported at
      once, since creating them runs their init.
    - For "a.b", the parent package "a" is imported now, eagerly.
    - Errors in the module's body surface at the first use, with the
      body's own traceback, possibly far from here; later uses raise the
      same exception, and a later import statement imports it afresh.
    - Until it loads, the module's type is a private subclass of ModuleType;
      code that checks type(module) can be confused.
    - The deferred module sits in sys.modules, so the deferral is
      process-wide, not limited to the caller.
    """
    import importlib.util
    from coldstart import plan

    mods = []
    for name in names:
        if name in sys.modules:
            mods.append(sys.modules[name])
            continue
        spec = importlib.util.find_spec(name)
        if spec is None:
            raise ModuleNotFoundError("no module named %r" % name, name=name)
        if not isinstance(spec.loader, plan.DEFERRABLE_LOADERS):
            mods.append(importlib.import_module(name))
            continue
        spec.loader = plan.deferring_loader(spec.loader)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        if "." in name:
            parent, _, child = name.rpartition(".")
            setattr(sys.modules[parent], child, mod)
        mods.append(mod)
    return mods
