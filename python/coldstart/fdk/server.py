"""coldstart-fdk's entry point: the part that runs before the socket is ready.

main() checks the arguments and the environment, binds a phony socket next
to FN_LISTENER with mode 0666, listens, and only then links lsnr.sock to
it.  Everything else (the HTTP reader, the per-call context, the response
builder, the lazy loader and the request loop in coldstart.fdk.loop) is
imported after the link exists: in the default lazy mode when the first
connection arrives, so an idle container spends no CPU on it.  Before ready
this module imports only _socket and _signal (both C modules), besides the
coldstart and coldstart.fdk packages (the latter holds the listener code
this module shares with the loop).  Under Fn's CPU
quota every millisecond of CPU before the link counts; tests/e2e/test_fdk.py
checks this list (COLDSTART_FDK_DEBUG_MODULES names a file that receives the
modules loaded when the link is made).

--warm eager, and fdk.handle(), go through coldstart.fdk.loop.serve()
instead, which imports everything first.
"""

import os
import sys

from coldstart import fdk as _fdk
from coldstart.fdk import (DEFAULT_MAX_BODY, EXIT_OK, EXIT_USAGE,
                           ConfigError, Terminate, log)

try:
    import _signal as _sig
except ImportError:  # pragma: no cover - every CPython has _signal
    import signal as _sig

WARM_MODES = ("lazy", "background", "eager")

USAGE = """\
usage: coldstart-fdk [--warm lazy|background|eager] [--max-body BYTES]
                     [--plan FILE] FUNC [HANDLER]

Serves HANDLER (default: handler) of FUNC (a path to func.py, or a module
name) on the unix socket named by FN_LISTENER=unix:/path/lsnr.sock, the way
Fn's http-stream contract wants it.

  --warm lazy        import FUNC on the first call (default)
  --warm background  start importing FUNC in a thread once the socket is
                     ready; a call that arrives earlier waits for it
  --warm eager       import FUNC before the socket is ready (fdk-python)
  --max-body BYTES   refuse request bodies larger than this with 413
                     (default 104857600)
  --plan FILE        apply a start-up plan made by `coldstart plan` when
                     FUNC loads (docs/plan.md); with --warm background the
                     deferred modules load in a thread after the first
                     response

COLDSTART_FDK_WARM sets the warm mode when --warm is not given;
COLDSTART_PLAN names a plan when --plan is not given.
Exit status: 0 after SIGTERM or SIGINT, 1 when the socket cannot be set up
or the function ignored its deadline, 2 for a usage or environment error
(FN_LISTENER, FN_FORMAT, FUNC missing); a function's sys.exit(N) ends the
server with status N once the call is answered.
"""


# --plan FILE (or COLDSTART_PLAN), applied just before FUNC loads.
plan_path = None


def apply_plan(warm):
    """Applies --plan / COLDSTART_PLAN before the function loads; returns
    whether a plan is in use."""
    path = plan_path or os.environ.get("COLDSTART_PLAN")
    if path:
        from coldstart import plan
        return plan.install(path, warm="background" if warm == "background"
                            else "off") is not None
    return False


def _apply_plan_held(warm):
    """apply_plan() with the collector held from before it until the first
    response (coldstart.fdk.hold_gc): returns what hold_gc() returned when
    a plan is in use, else None (the thresholds put back)."""
    held = None
    if plan_path or os.environ.get("COLDSTART_PLAN"):
        held = _fdk.hold_gc(planned=True)
    if not apply_plan(warm) and held is not None:
        _fdk.release_gc(held)
        held = None
    return held


def _on_term(signum, frame):
    raise Terminate(signum)


def _first_connection(lsock):
    """Waits for Fn's agent to connect; returns the accepted descriptor,
    or None when accept() failed (the request loop then tries again)."""
    import select
    wake, old = _fdk.wakeup_pipe()
    try:
        p = select.poll()
        p.register(lsock.fileno(), select.POLLIN)
        p.register(wake[0], select.POLLIN)
        while True:
            for fd, ev in p.poll():
                if fd == wake[0]:
                    _fdk.drain(fd)
                    continue
                try:
                    return lsock._accept()[0]
                except OSError as e:
                    log("accept failed: %s" % e)
                    return None
    finally:
        _fdk.close_wakeup_pipe(wake, old)


def _dump_modules(name):
    # For tests: which modules were loaded when the socket became ready.
    try:
        with open(name, "w") as f:
            f.write("\n".join(sorted(sys.modules)) + "\n")
    except OSError as e:
        log("cannot write %s: %s" % (name, e))


def _is_path(target):
    # coldstart.lazy's rule, repeated here to keep coldstart.lazy out of
    # start-up: a file path ends in .py or contains a separator.
    return target.endswith(".py") or os.sep in target or \
        (os.altsep is not None and os.altsep in target)


def _parse_args(argv):
    warm = os.environ.get("COLDSTART_FDK_WARM") or "lazy"
    max_body = DEFAULT_MAX_BODY
    rest = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            return None
        if a == "--version":
            return "version"
        if a == "--":
            rest.extend(argv[i + 1:])
            break
        if a.startswith("--warm") or a.startswith("--max-body") or \
                a.startswith("--plan"):
            name, eq, value = a.partition("=")
            if name not in ("--warm", "--max-body", "--plan"):
                raise ConfigError("unknown option %r" % a)
            if not eq:
                i += 1
                if i >= len(argv):
                    raise ConfigError("option %s needs a value" % name)
                value = argv[i]
            if name == "--warm":
                warm = value
            elif name == "--plan":
                global plan_path
                plan_path = value
            else:
                if not value.isdigit() or int(value) <= 0:
                    raise ConfigError("--max-body wants a positive number "
                                      "of bytes, not %r" % value)
                max_body = int(value)
        elif a.startswith("-") and a != "-":
            raise ConfigError("unknown option %r" % a)
        else:
            rest.append(a)
        i += 1
    if warm not in WARM_MODES:
        raise ConfigError("warm mode %r is not one of %s" % (
            warm, ", ".join(WARM_MODES)))
    if not rest:
        raise ConfigError("missing FUNC (a path to func.py or a module name)")
    if len(rest) > 2:
        raise ConfigError("too many arguments: %s" % " ".join(rest[2:]))
    func = rest[0]
    handler = rest[1] if len(rest) == 2 else "handler"
    return func, handler, warm, max_body


def _serve_ready_first(func, handler, warm, max_body):
    """--warm lazy and background: links lsnr.sock with as little work as
    possible, then hands the socket to coldstart.fdk.loop (in lazy mode
    once the first connection is accepted)."""
    env = os.environ
    paths = _fdk.claim_environ(env)
    if paths is None:
        return EXIT_USAGE
    path, phony = paths
    lsock = None
    old = {}
    try:
        for signum in (_sig.SIGTERM, _sig.SIGINT):
            old[signum] = _sig.signal(signum, _on_term)
        try:
            lsock = _fdk.listen(path, phony)
            debug = env.get("COLDSTART_FDK_DEBUG_MODULES")
            if debug:
                # Written just before the link, so that it is complete when
                # the link appears; nothing is imported in between.
                _dump_modules(debug)
            _fdk.link(path, phony)
        except (ConfigError, OSError) as e:
            return _fdk.listen_failure(e, path)
        if "coldstart.otel" in sys.modules:
            sys.modules["coldstart.otel"].ready()
        first = None
        if warm == "lazy":
            # Nothing else happens until Fn's agent connects: an idle
            # container costs no CPU, and the rest loads on the first call.
            first = _first_connection(lsock)
        # Under a plan the collector waits for the first response from
        # here on (in lazy mode the first call has begun), the plan, the
        # server it loads and (background) the function's imports included.
        held = _apply_plan_held(warm)
        from coldstart.fdk import loop
        return loop.adopt(lsock, path, phony, first, func, handler, warm,
                          max_body, held)
    except Terminate as t:
        return t.status
    finally:
        _fdk.close_listener(lsock, path, phony)
        _fdk.active = False
        for signum, h in old.items():
            try:
                _sig.signal(signum, h)
            except (OSError, ValueError, TypeError):
                pass


def main(argv=None):
    """The coldstart-fdk command; returns its exit status."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        parsed = _parse_args(argv)
    except ConfigError as e:
        log(str(e))
        sys.stderr.write(USAGE)
        return EXIT_USAGE
    if parsed is None:
        sys.stdout.write(USAGE)
        return EXIT_OK
    if parsed == "version":
        from coldstart.fdk import VERSION
        sys.stdout.write("coldstart-fdk %s\n" % VERSION)
        return EXIT_OK
    func, handler, warm, max_body = parsed
    import coldstart
    if coldstart.otel_wanted(os.environ):
        # A trace of this cold start, sent after the first response.
        from coldstart import otel
        otel.begin()
    if _is_path(func) and not os.path.isfile(os.path.abspath(func)):
        log("no such function file: %r" % func)
        return EXIT_USAGE
    if warm == "eager":
        held = _apply_plan_held(warm)
        from coldstart.fdk import loop
        return loop.run(func, handler, warm, max_body, held)
    return _serve_ready_first(func, handler, warm, max_body)

