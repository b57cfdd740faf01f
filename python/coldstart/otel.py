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


def _env(environ, name, default=None):
    v = environ.get("OTEL_EXPORTER_OTLP_TRACES_" + name)
    if not v:
        v = environ.get("OTEL_EXPORTER_OTLP_" + name)
    return v if v else default


def _unquote(s):
    """Percent-decoding, as the SDKs apply to the variables' values."""
    b = s.encode("utf-8", "surrogateescape")
    out, i = bytearray(), 0
    while i < len(b):
        hexa = b[i + 1:i + 3]
        if b[i] == 0x25 and len(hexa) == 2 and \
                all(c in b"0123456789abcdefABCDEF" for c in hexa):
            out.append(int(hexa, 16))
            i += 3
        else:
            out.append(b[i])
            i += 1
    return out.decode("utf-8", "replace")


def _pairs(text):
    """k=v,k2=v2 (values percent-encoded), as the SDK variables give them;
    malformed entries are skipped, as the SDKs do."""
    out = []
    for item in (text or "").split(","):
        k, eq, v = item.partition("=")
        k = k.strip()
        if eq and k:
            out.append((_unquote(k), _unquote(v.strip())))
    return out


def config(environ=None):
    """What the OpenTelemetry SDK's variables ask for, or None when no
    trace is to be sent (no endpoint, OTEL_SDK_DISABLED=true,
    OTEL_TRACES_EXPORTER=none, or a protocol other than http/protobuf and
    http/json, which is said on stderr)."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return None
    url = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if not url:
        base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        if not base:
            return None
        url = base.rstrip("/") + "/v1/traces"
    proto = _env(env, "PROTOCOL", "http/protobuf").strip()
    if proto not in ("http/protobuf", "http/json"):
        _say("OTEL_EXPORTER_OTLP_PROTOCOL %r is not supported (http/protobuf "
             "or http/json); no cold-start trace is sent" % proto)
        return None
    try:
        timeout = float(_env(env, "TIMEOUT", "10000")) / 1000.0
    except ValueError:
        timeout = 10.0
    if not timeout > 0:
        timeout = 10.0
    res = _pairs(env.get("OTEL_RESOURCE_ATTRIBUTES"))
    service = env.get("OTEL_SERVICE_NAME") or dict(res).get("service.name")
    if not service:
        service = "unknown_service:" + os.path.basename(sys.executable or
                                                        "python")
    return {"url": url, "json": proto == "http/json", "timeout": timeout,
            "headers": _pairs(_env(env, "HEADERS", "")),
            "service": service, "resource": res}


def _say(msg):
    try:
        sys.stderr.write("coldstart: %s\n" % msg)
        sys.stderr.flush()
    except Exception:
        pass


def _exec_times():
    """The process's exec in Unix and CLOCK_MONOTONIC nanoseconds: its
    start in /proc/self/stat (clock ticks since boot, so never later than
    the real exec) against CLOCK_BOOTTIME, the clock of those ticks."""
    real, mono = time.time_ns(), time.monotonic_ns()
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        ticks = int(stat[stat.rindex(b")") + 2:].split()[19])
        hz = os.sysconf("SC_CLK_TCK")
        boot = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
        age = boot - ticks * 1000000000 // hz
        if 0 <= age < 10 ** 13:
            return real - age, mono - age
    except (OSError, ValueError, IndexError, AttributeError):
        pass
    return real, mono


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
    for a trace; returns whether they do.  Called once, early."""
    if _state:
        return _state.get("cfg") is not None
    env = os.environ if environ is None else environ
    cfg = config(env)
    _state["cfg"] = cfg
    if cfg is None:
        return False
    import _thread
    _lock[0] = _thread.allocate_lock()
    _state["pid"] = os.getpid()
    _state["exec_real"], _state["exec_mono"] = _exec_times()
    _state["begin"] = time.monotonic_ns()
    _state["tracer"], _state["dir"] = _start_tracer(env)
    import atexit
    atexit.register(_at_exit)
    return True


def ready():
    """The process listens (readiness)."""
    if _state.get("cfg") is not None and "ready" not in _state and \
            _state.get("pid") == os.getpid():
        _state["ready"] = time.monotonic_ns()


def responded(headers=None):
    """The first response was written: sends the trace from a thread
    (once).  headers: the first request's, a mapping with lower-case
    names, for its trace context."""
    if _state.get("cfg") is None or _state.get("pid") != os.getpid():
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
    if done is not None and done.acquire(True, _state["cfg"]["timeout"] + 1):
        done.release()


def _send_thread(done):
    try:
        from coldstart import otel_send
        otel_send.send(_state)
    except Exception as e:  # never into the program
        _say("cannot send the cold-start trace: %s: %s" % (type(e).__name__,
                                                           e))
    finally:
        done.release()
