"""Traces of live cold starts for OpenTelemetry backends (docs/fdk.md,
"Cold-start traces").

coldstart-fdk, `python -m coldstart.run` and a plan's bootstrap import this
module only when OTEL_EXPORTER_OTLP_ENDPOINT or
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set (coldstart.otel_wanted() says so
without importing anything).  They call begin() as the process starts,
ready() when it listens and responded(headers) once the first response is
written; a thread then sends one trace over OTLP/HTTP: the process from
exec to the first response, its phases, and the imports it ran before the
first response, as coldstart's tracer recorded them.  The trace is parented
to the first request's W3C `traceparent` or B3 headers when it carries them.

Stdlib only.  Nothing here may disturb the program: every failure is one
line on stderr, the send is bounded by the SDK's timeout
(OTEL_EXPORTER_OTLP_TRACES_TIMEOUT / OTEL_EXPORTER_OTLP_TIMEOUT, ms, default
10000), and before the first response only this small module loads (it
imports os, sys and time); the trace is built, encoded and sent by
coldstart.otel_send, which loads with http.client in the sending thread.
"""

import os
import sys
import time

_state = {}
_lock = [None]


def _protocol(environ):
    v = environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
    if not v:
        v = environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    return (v or "http/protobuf").strip()


def wanted(environ):
    """Whether a trace is to be sent: an endpoint, and neither
    OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none, and a protocol
    this sends (http/protobuf or http/json; another is said on stderr).
    The rest of the variables are read by the sending thread."""
    if not (environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or
            environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")):
        return False
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    proto = _protocol(environ)
    if proto not in ("http/protobuf", "http/json"):
        _say("OTEL_EXPORTER_OTLP_PROTOCOL %r is not supported (http/protobuf "
             "or http/json); no cold-start trace is sent" % proto)
        return False
    return True


def _say(msg):
    try:
        sys.stderr.write("coldstart: %s\n" % msg)
        sys.stderr.flush()
    except Exception:
        pass


def _start_tracer(environ):
    # Under `coldstart profile` the process is traced already;
    # COLDSTART_OTEL_IMPORTS=0 sends the process and its phases alone.
    if environ.get("COLDSTART_TRACE_DIR") or sys.version_info < (3, 7) or \
            environ.get("COLDSTART_OTEL_IMPORTS") == "0":
        return None, None
    try:
        from coldstart import _tracer
    except ImportError:
        return None, None
    base = environ.get("TMPDIR") or "/tmp"
    path = os.path.join(base, "coldstart-otel-%d-%d" % (os.getpid(),
                                                        time.monotonic_ns()))
    try:
        os.mkdir(path, 0o700)
    except OSError:
        return None, None
    try:
        if _tracer.start(path):
            return _tracer, path
    except Exception:
        pass
    _remove_dir(path)
    return None, None


def _remove_dir(path):
    try:
        for name in os.listdir(path):
            os.unlink(os.path.join(path, name))
        os.rmdir(path)
    except OSError:
        pass


def begin(environ=None):
    """Starts recording this process's cold start when the variables ask
    for a trace; returns whether they do.  Called once, early.  Only what
    must be read now is: the clock, and the tracer is started; the
    variables are read again, and the exec time from /proc, in the sending
    thread."""
    if _state:
        return _state.get("on", False)
    env = os.environ if environ is None else environ
    _state["on"] = wanted(env)
    if not _state["on"]:
        return False
    _state["begin"] = time.monotonic_ns()
    _state["env"] = env
    import _thread
    _lock[0] = _thread.allocate_lock()
    _state["pid"] = os.getpid()
    _state["tracer"], _state["dir"] = _start_tracer(env)
    import atexit
    atexit.register(_at_exit)
    return True


def ready():
    """The process listens (readiness)."""
    if _state.get("on") and "ready" not in _state and \
            _state.get("pid") == os.getpid():
        _state["ready"] = time.monotonic_ns()


def responded(headers=None):
    """The first response was written: sends the trace from a thread
    (once).  headers: the first request's, a mapping with lower-case
    names, for its trace context."""
    if not _state.get("on") or _state.get("pid") != os.getpid():
        return
    with _lock[0]:
        if "responded" in _state:
            return
        _state["responded"] = time.monotonic_ns()
        _state["cpu"] = time.process_time_ns()
        _state["headers"] = dict(headers) if headers else None
        import _thread
        done = _thread.allocate_lock()
        done.acquire()
        _state["sending"] = done
    if _state["tracer"] is not None:
        try:
            _state["tracer"].stop()
        except Exception:
            pass
    import _thread
    try:
        _thread.start_new_thread(_send_thread, (done,))
    except RuntimeError:  # interpreter shutting down
        done.release()


def _at_exit():
    # A program that never said it responded: the trace ends at its exit,
    # sent now; one being sent is waited for, within the timeout.
    if _state.get("pid") != os.getpid():
        return
    if "responded" not in _state:
        responded()
    done = _state.get("sending")
    if done is not None and done.acquire(True, _state.get("timeout", 10.0) + 1):
        done.release()
    elif _state.get("dir"):
        # The send is still under way: its tracer file goes with the process.
        _remove_dir(_state["dir"])


def _send_thread(done):
    try:
        from coldstart import otel_send
        otel_send.send(_state)
    except Exception as e:  # never into the program
        _say("cannot send the cold-start trace: %s: %s" % (type(e).__name__,
                                                           e))
    finally:
        done.release()
