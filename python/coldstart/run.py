"""`python -m coldstart.run --plan FILE [--warm off|background] script.py|-m mod [args]`

Runs a script or module as `python script.py` / `python -m mod` would,
with a start-up plan (made by `coldstart plan`, docs/plan.md) applied
first.  With --warm background the deferred modules load in a thread once
the program calls coldstart.plan.responded(), or after --warm-after
seconds (default 1) when it never does.  Exit status: the program's own;
2 for a usage error.  A plan that cannot be used is ignored with a warning.
"""

import os
import sys

USAGE = """\
usage: python -m coldstart.run [--plan FILE] [--warm off|background]
                               [--warm-after SECONDS] script.py | -m module
                               [args...]

Runs the script or module with the start-up plan FILE applied (default:
$COLDSTART_PLAN).  --warm background loads the deferred modules in a thread
after the first response (coldstart.plan.responded()) or --warm-after
seconds (default 1).
"""


class _Usage(Exception):
    pass


def _parse(argv):
    plan = os.environ.get("COLDSTART_PLAN") or None
    warm = os.environ.get("COLDSTART_PLAN_WARM") or "off"
    after = 1.0
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            return None
        if a == "-m":
            if i + 1 >= len(argv):
                raise _Usage("-m needs a module name")
            return plan, warm, after, ("module", argv[i + 1], argv[i + 2:])
        if a.startswith("--") and a != "--":
            name, eq, value = a.partition("=")
            if name not in ("--plan", "--warm", "--warm-after"):
                raise _Usage("unknown option %r" % a)
            if not eq:
                i += 1
                if i >= len(argv):
                    raise _Usage("%s needs a value" % name)
                value = argv[i]
            if name == "--plan":
                plan = value
            elif name == "--warm":
                if value not in ("off", "background"):
                    raise _Usage("--warm %r is not off or background"
                                 % value)
                warm = value
            else:
                try:
                    after = float(value)
                except ValueError:
                    after = -1
                if not after >= 0:
                    raise _Usage("--warm-after wants seconds, not %r"
                                 % value)
            i += 1
            continue
        if a == "--":
            i += 1
            if i >= len(argv):
                break
            a = argv[i]
        elif a.startswith("-"):
            raise _Usage("unknown option %r" % a)
        return plan, warm, after, ("path", a, argv[i + 1:])
    raise _Usage("missing the script or -m module to run")


def _warm_later(after):
    import _thread
    import time

    def run():
        time.sleep(after)
        from coldstart import plan
        plan.responded()
    _thread.start_new_thread(run, ())


def _is_source(target):
    """A plain source file (not a directory, zip archive or .pyc, which
    runpy runs as the interpreter would)."""
    if not os.path.isfile(target) or target.endswith((".pyc", ".pyo")):
        return False
    with open(target, "rb") as f:
        return f.read(4) != b"PK\x03\x04"


def _run_source(target):
    """Runs a source file as `python script.py` does: a fresh __main__ with
    what the interpreter gives it (__annotations__, __builtins__, __file__
    absolute since 3.9, __cached__ None, a SourceFileLoader), sys.argv[0]
    as typed, and an uncaught exception's traceback from the script's own
    frame, exit status 1 (KeyboardInterrupt: killed by SIGINT)."""
    import builtins
    import types
    from importlib.machinery import SourceFileLoader
    path = os.path.abspath(target) if sys.version_info >= (3, 9) else target
    with open(path, "rb") as f:
        source = f.read()
    main = types.ModuleType("__main__")
    main.__dict__.update(__annotations__={}, __builtins__=builtins,
                         __file__=path, __cached__=None,
                         __loader__=SourceFileLoader("__main__", path))
    sys.modules["__main__"] = main
    try:
        code = compile(source, path, "exec", dont_inherit=True)
        exec(code, main.__dict__)
    except SystemExit:
        raise
    except BaseException as e:
        tb = e.__traceback__
        # Not this file's frames: the interpreter's traceback starts at
        # the script (or at compile(), for a SyntaxError, which has none).
        while tb is not None and tb.tb_frame.f_code is _run_source.__code__:
            tb = tb.tb_next
        e.__traceback__ = tb
        sys.excepthook(type(e), e, tb)
        sys.stderr.flush()
        if isinstance(e, KeyboardInterrupt):
            import signal
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        sys.exit(1)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        parsed = _parse(argv)
    except _Usage as e:
        sys.stderr.write("coldstart.run: %s\n%s" % (e, USAGE))
        return 2
    if parsed is None:
        sys.stdout.write(USAGE)
        return 0
    plan_path, warm, after, (kind, target, rest) = parsed
    import coldstart
    if coldstart.otel_wanted(os.environ):
        # A trace of this start: exec to coldstart.plan.responded() or the
        # exit (docs/fdk.md, "Cold-start traces").
        from coldstart import otel
        otel.begin()
    import runpy
    if kind == "path":
        if not os.path.exists(target):
            sys.stderr.write("coldstart.run: no such file %r\n" % target)
            return 2
        # What `python script.py` puts first on sys.path.
        sys.path[0] = os.path.dirname(os.path.abspath(target))
    sys.argv[:] = [target] + rest
    if plan_path:
        from coldstart import plan
        if plan.install(plan_path, warm=warm) is not None and \
                warm == "background":
            _warm_later(after)
    if kind == "path":
        if _is_source(target):
            _run_source(target)
        else:
            runpy.run_path(target, run_name="__main__")
    else:
        sys.argv[0] = "-m"
        runpy._run_module_as_main(target, alter_argv=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
