"""The sending half of coldstart.otel, loaded in its thread after the first
response: the cold start's trace built from coldstart.otel's record and the
tracer's file (docs/trace-format.md), encoded as OTLP/protobuf or OTLP/JSON
(stdlib only; checked by the official OpenTelemetry bindings in
tests/e2e/test_fdk_otel.py) and POSTed with http.client within the SDK's
timeout."""

import os
import sys
import time

from coldstart.otel import _protocol, _remove_dir, _say, wanted


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
    trace is to be sent (coldstart.otel.wanted())."""
    env = os.environ if environ is None else environ
    if not wanted(env):
        return None
    url = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if not url:
        base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        if not base:
            return None
        url = base.rstrip("/") + "/v1/traces"
    proto = _protocol(env)
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


def _exec_times():
    """The process's exec in Unix and CLOCK_MONOTONIC nanoseconds: its
    start in /proc/self/stat (clock ticks since boot, so never later than
    the real exec) against CLOCK_BOOTTIME, the clock of those ticks (read
    now, after the response: the clocks' offsets do not move meanwhile)."""
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


# --- the trace context of the first request ---------------------------------

def _hex_id(s, n):
    s = (s or "").strip().lower()
    if len(s) == n // 2 and n == 32:
        s = "0" * 16 + s  # a 64-bit B3 trace id
    if len(s) != n or s.strip("0") == "" or \
            any(c not in "0123456789abcdef" for c in s):
        return None
    return s


def _parent_context(headers):
    """(trace id, span id) in hex from W3C traceparent, B3 single or B3
    multi headers; None."""
    if not headers:
        return None
    h = {str(k).lower(): str(v) for k, v in headers.items()}
    tp = h.get("traceparent")
    if tp:
        parts = tp.strip().split("-")
        if len(parts) >= 4 and parts[0] != "ff" and len(parts[0]) == 2:
            t, s = _hex_id(parts[1], 32), _hex_id(parts[2], 16)
            if t and s and len(parts[1]) == 32:
                return t, s
    b3 = h.get("b3")
    if b3 and "-" in b3:
        parts = b3.strip().split("-")
        t, s = _hex_id(parts[0], 32), _hex_id(parts[1], 16)
        if t and s:
            return t, s
    t, s = _hex_id(h.get("x-b3-traceid"), 32), _hex_id(h.get("x-b3-spanid"), 16)
    if t and s:
        return t, s
    return None


# --- the tracer's records ---------------------------------------------------

def _unescape(s):
    if "\\" not in s:
        return s
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            if n == "x" and i + 3 < len(s):
                out.append(chr(int(s[i + 2:i + 4], 16)))
                i += 4
                continue
            out.append({"t": "\t", "n": "\n", "r": "\r"}.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _read_imports(s, until):
    """The imports of this process's trace (docs/trace-format.md) that began
    before `until` (CLOCK_MONOTONIC ns): dicts with name, start, end (None:
    still open), cpu (ns or None), failed, depth, parent (index or -1)."""
    path = s.get("dir")
    if not path:
        return []
    data = b""
    try:
        for name in os.listdir(path):
            if name.startswith("%d-" % s["pid"]):
                with open(os.path.join(path, name), "rb") as f:
                    data = f.read()
                break
    except OSError:
        return []
    nul = data.find(b"\0")
    if nul >= 0:
        data = data[:nul]
    out, stacks = [], {}
    for line in data.decode("utf-8", "replace").split("\n"):
        f = line.split("\t")
        if len(f) < 6 or f[0] not in ("S", "E", "F"):
            continue
        try:
            t, tid, cpu = int(f[1]), f[2], int(f[3])
        except ValueError:
            continue
        stack = stacks.setdefault(tid, [])
        if f[0] == "S":
            if t >= until:
                continue
            out.append({"name": _unescape(f[5]), "start": t, "end": None,
                        "cpu0": cpu, "cpu": None, "failed": False,
                        "parent": stack[-1] if stack else -1, "tid": tid})
            stack.append(len(out) - 1)
        elif stack:
            i = stack.pop()
            rec = out[i]
            if t <= until:
                rec["end"] = t
                if cpu >= 0 and rec["cpu0"] >= 0:
                    rec["cpu"] = cpu - rec["cpu0"]
                rec["failed"] = f[0] == "F"
    return out


# --- the trace --------------------------------------------------------------

def _random_hex(n):
    while True:
        s = os.urandom(n // 2).hex()
        if s.strip("0"):
            return s


def _limits():
    out = []
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()[:2]
        if quota != "max":
            out.append(("coldstart.limits.cpus",
                        float(quota) / float(period)))
    except (OSError, ValueError):
        pass
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            mem = f.read().strip()
        if mem != "max":
            out.append(("coldstart.limits.memory_bytes", int(mem)))
    except (OSError, ValueError):
        pass
    return out


def build(s):
    """The trace as (resource attributes, spans): attributes are lists of
    (key, value) with str, int, float or bool values; spans dicts with
    trace, id, parent (hex; parent "" for none), name, start, end (Unix
    ns), attrs and error (a status message or None)."""
    cfg = s["cfg"]
    to_real = s["exec_real"] - s["exec_mono"]
    end = s["responded"]
    parent = _parent_context(s.get("headers"))
    trace = parent[0] if parent else _random_hex(32)
    spans = []

    def span(parent_id, name, start, stop, attrs=(), error=None):
        sid = _random_hex(16)
        spans.append({"trace": trace, "id": sid, "parent": parent_id,
                      "name": name, "start": start + to_real,
                      "end": max(stop, start) + to_real,
                      "attrs": list(attrs), "error": error})
        return sid

    ready_at = s.get("ready")
    attrs = [("process.pid", s["pid"]),
             ("coldstart.first_response_us", (end - s["exec_mono"]) // 1000),
             ("coldstart.cpu_us", s["cpu"] // 1000)]
    if ready_at is not None:
        attrs.append(("coldstart.ready_us", (ready_at - s["exec_mono"]) // 1000))
    plan = sys.modules.get("coldstart.plan")
    if plan is not None and plan.installed() is not None:
        forced, deferred = plan.forced(), plan.deferred()
        attrs += [("coldstart.plan", True),
                  ("coldstart.plan.deferred", len(deferred)),
                  ("coldstart.plan.deferred_modules", ",".join(deferred)),
                  ("coldstart.plan.forced", len(forced)),
                  ("coldstart.plan.forced_modules", ",".join(forced))]
    imports = _read_imports(s, end)
    attrs.append(("coldstart.imports", len(imports)))
    attrs.append(("coldstart.imports_recorded", s.get("tracer") is not None))
    root = span(parent[1] if parent else "", "cold start", s["exec_mono"],
                end, attrs)
    span(root, "interpreter start-up", s["exec_mono"], s["begin"])
    if ready_at is not None:
        span(root, "until ready", s["exec_mono"], ready_at)
        span(root, "first response", ready_at, end)
    ids, child_sum = [], [0] * len(imports)
    for rec in imports:
        stop = rec["end"] if rec["end"] is not None else end
        if rec["parent"] >= 0:
            child_sum[rec["parent"]] += stop - rec["start"]
    for i, rec in enumerate(imports):
        stop = rec["end"] if rec["end"] is not None else end
        a = [("code.namespace", rec["name"]),
             ("coldstart.self_us",
              max(0, stop - rec["start"] - child_sum[i]) // 1000),
             ("coldstart.cumulative_us", (stop - rec["start"]) // 1000),
             ("coldstart.phase", "after ready" if ready_at is not None and
              rec["start"] >= ready_at else
              "before ready" if ready_at is not None else "import")]
        if rec["cpu"] is not None:
            a.append(("coldstart.cpu_ns", rec["cpu"]))
        if rec["end"] is None:
            a.append(("coldstart.never_finished", True))
        if rec["failed"]:
            a.append(("coldstart.failed", True))
        up = ids[rec["parent"]] if rec["parent"] >= 0 else root
        ids.append(span(up, "import " + rec["name"], rec["start"], stop, a,
                        "the import raised" if rec["failed"] else None))
    res = [("service.name", cfg["service"])]
    res += [(k, v) for k, v in cfg["resource"] if k != "service.name"]
    res += [("process.pid", s["pid"]),
            ("process.executable.path", sys.executable or ""),
            ("process.runtime.name", sys.implementation.name),
            ("process.runtime.version",
             ".".join(str(x) for x in sys.version_info[:3])),
            ("telemetry.sdk.name", "coldstart"),
            ("telemetry.sdk.language", "python"),
            ("telemetry.sdk.version", _version())]
    res += _limits()
    return res, spans


def _version():
    try:
        from coldstart import __version__
        return __version__
    except ImportError:
        return "unknown"


# --- OTLP encodings (opentelemetry/proto/collector/trace/v1) ---------------

def _varint(v):
    out = bytearray()
    v &= (1 << 64) - 1
    while v >= 0x80:
        out.append((v & 0x7f) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _field(num, wire, payload):
    return _varint(num << 3 | wire) + payload


def _len(num, data):
    if isinstance(data, str):
        data = data.encode("utf-8", "replace")
    return _field(num, 2, _varint(len(data)) + data)


def _int(num, v):
    return _field(num, 0, _varint(v))


def _fixed64(num, v):
    return _field(num, 1, (v & ((1 << 64) - 1)).to_bytes(8, "little"))


def _any_value(v):
    import struct
    if isinstance(v, bool):
        return _int(2, int(v))
    if isinstance(v, int):
        return _int(3, v)
    if isinstance(v, float):
        return _field(4, 1, struct.pack("<d", v))
    return _len(1, str(v))


def _kv(num, key, value):
    return _len(num, _len(1, key) + _len(2, _any_value(value)))


def encode_protobuf(resource, spans):
    """An ExportTraceServiceRequest in protobuf's wire format."""
    body = []
    for s in spans:
        m = [_len(1, bytes.fromhex(s["trace"])), _len(2, bytes.fromhex(s["id"]))]
        if s["parent"]:
            m.append(_len(4, bytes.fromhex(s["parent"])))
        m += [_len(5, s["name"]), _int(6, 1), _fixed64(7, s["start"]),
              _fixed64(8, s["end"])]
        m += [_kv(9, k, v) for k, v in s["attrs"]]
        if s["error"]:
            m.append(_len(15, _len(2, s["error"]) + _int(3, 2)))
        body.append(_len(2, b"".join(m)))
    scope = _len(1, _len(1, "coldstart") + _len(2, _version()))
    rs = _len(1, b"".join(_kv(1, k, v) for k, v in resource)) + \
        _len(2, scope + b"".join(body))
    return _len(1, rs)


def _json_value(v):
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": str(v)}


def encode_json(resource, spans):
    """The same request as OTLP/JSON: hex ids, int64 as decimal strings."""
    import json

    def attrs(items):
        return [{"key": k, "value": _json_value(v)} for k, v in items]
    out = []
    for s in spans:
        d = {"traceId": s["trace"], "spanId": s["id"], "name": s["name"],
             "kind": 1, "startTimeUnixNano": str(s["start"]),
             "endTimeUnixNano": str(s["end"]), "attributes": attrs(s["attrs"])}
        if s["parent"]:
            d["parentSpanId"] = s["parent"]
        if s["error"]:
            d["status"] = {"message": s["error"], "code": 2}
        out.append(d)
    doc = {"resourceSpans": [{
        "resource": {"attributes": attrs(resource)},
        "scopeSpans": [{"scope": {"name": "coldstart", "version": _version()},
                        "spans": out}]}]}
    return json.dumps(doc, separators=(",", ":")).encode("utf-8")


# --- sending ------------------------------------------------------------------

def post(cfg, body):
    """POSTs body to the collector; returns None, or why it failed."""
    import http.client
    import urllib.parse
    u = urllib.parse.urlsplit(cfg["url"])
    if u.scheme not in ("http", "https") or not u.hostname:
        return "the endpoint %r is not an http(s) URL" % cfg["url"]
    cls = http.client.HTTPSConnection if u.scheme == "https" else \
        http.client.HTTPConnection
    deadline = time.monotonic() + cfg["timeout"]
    conn = cls(u.hostname, u.port, timeout=cfg["timeout"])
    try:
        headers = {"Content-Type": "application/json" if cfg["json"] else
                   "application/x-protobuf",
                   "User-Agent": "coldstart/" + _version()}
        for k, v in cfg["headers"]:
            headers[k] = v
        conn.request("POST", (u.path or "/") + ("?" + u.query if u.query
                                                else ""), body, headers)
        if conn.sock is not None:
            conn.sock.settimeout(max(0.001, deadline - time.monotonic()))
        resp = conn.getresponse()
        text = resp.read(200)
        if not 200 <= resp.status < 300:
            return "%s answered %d %s: %s" % (
                cfg["url"], resp.status, resp.reason,
                text.decode("utf-8", "replace").strip())
        return None
    except (OSError, http.client.HTTPException) as e:
        return "%s: %s" % (cfg["url"], e or type(e).__name__)
    finally:
        conn.close()


def send(state):
    """Builds, encodes and sends the trace of the cold start state holds
    (coldstart.otel's record); removes the tracer's directory."""
    try:
        cfg = config(state["env"])
        if cfg is None:
            return
        state["cfg"], state["timeout"] = cfg, cfg["timeout"]
        state["exec_real"], state["exec_mono"] = _exec_times()
        resource, spans = build(state)
    finally:
        if state.get("dir"):
            _remove_dir(state["dir"])
    cfg = state["cfg"]
    body = encode_json(resource, spans) if cfg["json"] else \
        encode_protobuf(resource, spans)
    why = post(cfg, body)
    if why:
        _say("cannot send the cold-start trace to %s" % why)
