# coldstart bootstrap.  Found through PYTHONPATH in every Python process of a
# profiled tree: starts the import tracer when COLDSTART_TRACE_DIR is set,
# takes its own directory off sys.path, then hands over to the sitecustomize
# that would have run without coldstart (the next one on sys.path), so the
# target's sys.path, sys.argv, __main__ and sitecustomize are its own.
# Kept importable by Python 2.7 and 3.6, where it only hands over.
import sys


class _Spec(object):
    # The two attributes _imp.create_dynamic reads.
    def __init__(self, name, origin):
        self.name = name
        self.origin = origin


def _load_c(home, os, name="_tracer", var="COLDSTART_TRACER_PATH"):
    import _imp
    suffix = _imp.extension_suffixes()[0]
    dirs = [d for d in os.environ.get(var, "").split(os.pathsep) if d]
    dirs.append(home)
    for d in dirs:
        path = os.path.join(d, name + suffix)
        if os.path.isfile(path):
            mod = _imp.create_dynamic(_Spec("coldstart." + name, path))
            sys.modules.pop("coldstart." + name, None)
            return mod
    return None


def _start_sampler(home, os, trace_dir):
    # --timeline: the start-up sampler (docs/trace-format.md, "Samples").
    interval = os.environ.get("COLDSTART_TIMELINE", "")
    if not interval.isdigit() or sys.version_info < (3, 7):
        return
    sampler = _load_c(home, os, "_sampler", "COLDSTART_SAMPLER_PATH")
    if sampler is not None and sampler.start(trace_dir, int(interval)):
        os.register_at_fork(after_in_child=sampler.after_fork)


def _load_py(home, os):
    path = os.path.join(home, "_pytracer.py")
    mod = type(sys)("coldstart._pytracer")
    mod.__file__ = path
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec")
    exec(code, mod.__dict__)
    return mod


def _hide_pythonpath(os, mine):
    # coldstart put this directory first on PYTHONPATH.  The app's
    # os.environ shows PYTHONPATH as it was (unset when it was unset), while
    # the process environment keeps the entry, so the Python processes the
    # app starts with the inherited environment are traced too.  os.environ
    # and os.environb share one mapping; only it is rewritten, nothing is
    # putenv'ed.  A child given an env built from os.environ gets the entry
    # back from the tracer's subprocess.Popen audit hook (keep_boot_path).
    if sys.version_info < (3, 7):
        return
    try:
        env = os.environ
        key = env.encodekey("PYTHONPATH")
        value = env._data.get(key)
        if value is None:
            return
        parts = env.decodevalue(value).split(os.pathsep)
        if not parts or not mine(parts[0]):
            return
        rest = os.pathsep.join(parts[1:])
        if rest:
            env._data[key] = env.encodevalue(rest)
        else:
            del env._data[key]
    except Exception:
        pass


def _boot():
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    # coldstart's python/coldstart: this file's parent, unless it runs from
    # the copy in coldstart's bytecode cache (docs/design.md, "The tracer
    # cache").
    home = os.environ.get("COLDSTART_PYDIR") or os.path.dirname(here)

    def mine(p):
        try:
            return bool(p) and os.path.abspath(p) == here
        except Exception:
            return False
    removed = [p for p in sys.path if mine(p)]
    if removed:
        sys.path[:] = [p for p in sys.path if not mine(p)]
        for p in removed:
            sys.path_importer_cache.pop(p, None)
    _hide_pythonpath(os, mine)

    trace_dir = os.environ.get("COLDSTART_TRACE_DIR")
    mode = os.environ.get("COLDSTART_TRACER", "")
    if not trace_dir or mode == "off" or sys.version_info < (3, 7):
        return
    try:
        tracer = None
        if mode != "py":
            tracer = _load_c(home, os)
        if tracer is None:
            tracer = _load_py(home, os)
        if tracer.start(trace_dir):
            tracer.note("sys.path", "\n".join(sys.path))
            # What the interpreter imported before the tracer: its start-up
            # rows in the shared stderr belong to this process.
            chunk = []
            for name in list(sys.modules):
                chunk.append(name)
                if sum(len(n) + 1 for n in chunk) > 3000:
                    tracer.note("modules", "\n".join(chunk))
                    chunk = []
            if chunk:
                tracer.note("modules", "\n".join(chunk))
        _start_sampler(home, os, trace_dir)
    except Exception:
        # The target must run as without coldstart: no trace for this process.
        pass


_boot()
del _boot, _load_c, _load_py, _start_sampler, _Spec, _hide_pythonpath

_coldstart_self = sys.modules.pop("sitecustomize", None)
try:
    import sitecustomize  # noqa: F401  the one that would run without coldstart
except ImportError as _exc:
    # site.py ignores only a missing sitecustomize; anything else propagates
    # exactly as it would have.
    if sys.version_info[0] >= 3 and _exc.name != "sitecustomize":
        raise
    sys.modules["sitecustomize"] = _coldstart_self
    del _exc
del _coldstart_self
