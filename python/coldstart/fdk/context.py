"""The per-call context handed to a function: fdk-python 0.1.117's
InvokeContext and TracingContext, with the same values, the same header
conventions (Fn-Http-H-* encapsulation in gateway mode) and the same quirks,
since functions and their unit tests read them.

Also holds the RFC 3339 deadline parser coldstart-fdk enforces deadlines
with, all without importing datetime (ctx.Deadline() imports it only when
the call came without an Fn-Deadline).
"""

import os
import sys

from coldstart.fdk import VERSION

# fdk-python's API level this module implements; coldstart's own version
# goes out in Fn-Fdk-Version.
FDK_PYTHON_VERSION = "0.1.117"
FDK_VERSION = "coldstart-fdk/" + VERSION
FDK_RUNTIME = "python/%d.%d.%d %s" % (sys.version_info[0], sys.version_info[1],
                                     sys.version_info[2],
                                     sys.version_info[3])

HTTPSTREAM = "http-stream"
INTENT_HTTP_REQUEST = "httprequest"
DEFAULT_DEADLINE = 30

FN_INTENT = "fn-intent"
FN_HTTP_PREFIX = "fn-http-h-"
FN_HTTP_STATUS = "fn-http-status"
FN_HTTP_METHOD = "fn-http-method"
FN_HTTP_REQUEST_URL = "fn-http-request-url"
FN_DEADLINE = "fn-deadline"
FN_CALL_ID = "fn-call-id"
FN_FDK_VERSION = "fn-fdk-version"
FN_FDK_RUNTIME = "fn-fdk-runtime"
CONTENT_TYPE = "content-type"
CONTENT_LENGTH = "content-length"
X_B3_TRACEID = "x-b3-traceid"
X_B3_SPANID = "x-b3-spanid"
X_B3_PARENTSPANID = "x-b3-parentspanid"
X_B3_SAMPLED = "x-b3-sampled"
X_B3_FLAGS = "x-b3-flags"


def _debug(message):
    # fdk-python's own debug lines (logger "fdk", shown with FDK_DEBUG).
    from coldstart.fdk import logs as log
    log.debug(message)


def push_header(headers, key, value):
    """Adds value under key; a repeated key collects its values in a new
    list (lists given as values are merged, never modified)."""
    if key not in headers:
        headers[key] = value
        return
    cur = headers[key]
    old = list(cur) if isinstance(cur, list) else [cur]
    new = list(value) if isinstance(value, list) else [value]
    headers[key] = old + new


def decap_headers(headers, merge=True):
    """The client's view of gateway headers (keys lower-cased): Fn-Http-H-*
    without the prefix, repeated ones collected; with merge, every other
    header too unless the client's of the same name came first."""
    out = {}
    if headers is None:
        return out
    for k, v in headers.items():
        k = k.lower()
        if k.startswith(FN_HTTP_PREFIX):
            push_header(out, k[len(FN_HTTP_PREFIX):], v)
        elif merge and k not in out:
            out[k] = v
    return out


def encap_headers(headers, status=None):
    """Response headers for gateway mode (keys lower-cased): each under
    Fn-Http-H-<name>; Content-Type, Fn-Fdk-Version and Fn-Fdk-Runtime keep
    their name, headers already carrying the prefix keep it too (and are
    also prefixed once more, as fdk-python does); status goes in
    Fn-Http-Status."""
    out = {}
    if headers is not None:
        for k, v in headers.items():
            k = k.lower()
            if k.startswith(FN_HTTP_PREFIX):
                push_header(out, k, v)
            if k in (CONTENT_TYPE, FN_FDK_VERSION, FN_FDK_RUNTIME):
                out[k] = v
            else:
                push_header(out, FN_HTTP_PREFIX + k, v)
    if status is not None:
        out[FN_HTTP_STATUS] = str(status)
    return out


def _days_from_civil(y, m, d):
    # Howard Hinnant's algorithm: days since 1970-01-01 of a Gregorian date.
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def parse_rfc3339(text):
    """Returns the POSIX time of an RFC 3339 timestamp such as
    2026-11-30T09:16:36.123+01:00 or ...Z; raises ValueError."""
    s = text.strip()
    if len(s) < 20 or s[4] != "-" or s[7] != "-" or s[10] not in "Tt " or \
            s[13] != ":" or s[16] != ":":
        raise ValueError("not an RFC 3339 timestamp: %r" % text)
    try:
        y, mo, d = int(s[0:4]), int(s[5:7]), int(s[8:10])
        h, mi, sec = int(s[11:13]), int(s[14:16]), int(s[17:19])
    except ValueError:
        raise ValueError("not an RFC 3339 timestamp: %r" % text)
    if not (1 <= mo <= 12 and 1 <= d <= 31 and h <= 23 and mi <= 59 and
            sec <= 60):
        raise ValueError("out-of-range RFC 3339 timestamp: %r" % text)
    rest = s[19:]
    frac = 0.0
    if rest.startswith("."):
        i = 1
        while i < len(rest) and rest[i].isdigit():
            i += 1
        if i == 1:
            raise ValueError("not an RFC 3339 timestamp: %r" % text)
        frac = float("0" + rest[:i])
        rest = rest[i:]
    if rest in ("Z", "z"):
        offset = 0
    elif len(rest) == 6 and rest[0] in "+-" and rest[3] == ":" and \
            rest[1:3].isdigit() and rest[4:6].isdigit():
        offset = int(rest[1:3]) * 3600 + int(rest[4:6]) * 60
        if rest[0] == "-":
            offset = -offset
    else:
        raise ValueError("RFC 3339 timestamp without a valid zone: %r" % text)
    days = _days_from_civil(y, mo, d)
    return days * 86400 + h * 3600 + mi * 60 + sec + frac - offset


def generate_id():
    """A random 64-bit trace or span id in 16 hex digits."""
    return "%016x" % int.from_bytes(os.urandom(8), "big")


_zipkin_type = None
_ZIPKIN_FIELDS = ("trace_id", "span_id", "parent_span_id", "is_sampled",
                  "flags")


def _make_zipkin_type():
    # What collections.namedtuple("ZipkinAttrs", "trace_id, span_id,
    # parent_span_id, is_sampled, flags") makes (fdk-python's type): the
    # same fields, methods, docs and repr, written out so that a call does
    # not import collections (with keyword, operator, reprlib and
    # itertools: about 4 M instructions of every function's first call).
    try:
        from _collections import _tuplegetter
    except ImportError:  # pragma: no cover - CPython has it since 3.8
        from operator import itemgetter

        def _tuplegetter(index, doc):
            return property(itemgetter(index), doc=doc)
    fields = _ZIPKIN_FIELDS
    new_tuple = tuple.__new__

    class ZipkinAttrs(tuple):
        "ZipkinAttrs(trace_id, span_id, parent_span_id, is_sampled, flags)"

        __slots__ = ()
        _fields = fields
        _field_defaults = {}
        __match_args__ = fields

        def __new__(_cls, trace_id, span_id, parent_span_id, is_sampled,
                    flags):
            "Create new instance of ZipkinAttrs(trace_id, span_id, " \
                "parent_span_id, is_sampled, flags)"
            return new_tuple(_cls, (trace_id, span_id, parent_span_id,
                                    is_sampled, flags))

        @classmethod
        def _make(cls, iterable):
            "Make a new ZipkinAttrs object from a sequence or iterable"
            result = new_tuple(cls, iterable)
            if len(result) != len(fields):
                raise TypeError("Expected %d arguments, got %d"
                                % (len(fields), len(result)))
            return result

        def _replace(self, **kwds):
            "Return a new ZipkinAttrs object replacing specified fields " \
                "with new values"
            result = self._make(map(kwds.pop, fields, self))
            if kwds:
                raise ValueError("Got unexpected field names: %r"
                                 % list(kwds))
            return result

        def __repr__(self):
            "Return a nicely formatted representation string"
            return self.__class__.__name__ + (
                "(trace_id=%r, span_id=%r, parent_span_id=%r, "
                "is_sampled=%r, flags=%r)" % self)

        def _asdict(self):
            "Return a new dict which maps field names to their values."
            return dict(zip(fields, self))

        def __getnewargs__(self):
            "Return self as a plain tuple.  Used by copy and pickle."
            return tuple(self)

    ZipkinAttrs.__qualname__ = "ZipkinAttrs"
    for name in ("__new__", "_make", "_replace", "__repr__", "_asdict",
                 "__getnewargs__"):
        f = ZipkinAttrs.__dict__[name]
        getattr(f, "__func__", f).__qualname__ = "ZipkinAttrs." + name
    for i, name in enumerate(fields):
        setattr(ZipkinAttrs, name,
                _tuplegetter(i, "Alias for field number %d" % i))
    return ZipkinAttrs


def _zipkin_attrs_type():
    global _zipkin_type
    if _zipkin_type is None:
        _zipkin_type = _make_zipkin_type()
    return _zipkin_type


class TracingContext(object):
    """Tracing settings (OCI_TRACING_ENABLED, OCI_TRACE_COLLECTOR_URL) and
    the call's B3 ids.

    zipkin_attrs() is what py_zipkin wants: with tracing enabled the
    caller's span becomes the parent and a new span id is made, since Fn's
    load balancer sends the parent's span as X-B3-SpanId.
    """

    def __init__(self, is_tracing_enabled, trace_collector_url, trace_id,
                 span_id, parent_span_id, is_sampled, flags):
        self.__is_tracing_enabled = is_tracing_enabled
        self.__trace_collector_url = trace_collector_url
        self.__trace_id = trace_id
        self.__span_id = span_id
        self.__parent_span_id = parent_span_id
        self.__is_sampled = is_sampled
        self.__flags = flags
        self.__app_name = os.environ.get("FN_APP_NAME")
        self.__app_id = os.environ.get("FN_APP_ID")
        self.__fn_name = os.environ.get("FN_FN_NAME")
        self.__fn_id = os.environ.get("FN_FN_ID")
        self.__zipkin_attrs = self.__make_zipkin_attrs(is_tracing_enabled)

    def is_tracing_enabled(self):
        return self.__is_tracing_enabled

    def trace_collector_url(self):
        return self.__trace_collector_url

    def trace_id(self):
        return self.__trace_id

    def span_id(self):
        return self.__span_id

    def parent_span_id(self):
        return self.__parent_span_id

    def is_sampled(self):
        return bool(self.__is_sampled)

    def flags(self):
        return self.__flags

    def zipkin_attrs(self):
        return self.__zipkin_attrs

    def __make_zipkin_attrs(self, is_tracing_enabled):
        span_id = self.__span_id
        parent_span_id = self.__parent_span_id
        if is_tracing_enabled:
            parent_span_id = span_id
            span_id = generate_id()
        return _zipkin_attrs_type()(self.__trace_id, span_id, parent_span_id,
                                    bool(self.__is_sampled), self.__flags)

    def service_name(self, override=None):
        name = override if override is not None else \
            str(self.__app_name) + "::" + str(self.__fn_name)
        return name.lower()

    def annotations(self):
        return {"generatedBy": "faas", "appName": self.__app_name,
                "appID": self.__app_id, "fnName": self.__fn_name,
                "fnID": self.__fn_id}


class InvokeContext(object):
    """Request-specific facts, with fdk-python's method names and values.

    headers are the request headers with lower-case keys, one value each
    (the last of a repeated header).  In gateway mode (Fn-Intent:
    httprequest) Headers() is the client's view with the Fn-Http-H- prefix
    removed merged over the agent's headers, and HTTPHeaders() the client's
    headers only; otherwise HTTPHeaders() is empty.
    """

    def __init__(self, app_id, app_name, fn_id, fn_name, call_id,
                 content_type="application/octet-stream", deadline=None,
                 config=None, headers=None, request_url=None, method="POST",
                 fn_format=None, tracing_context=None):
        self.__app_id = app_id
        self.__fn_id = fn_id
        self.__call_id = call_id
        self.__config = config if config else {}
        self.__headers = headers if headers else {}
        self.__http_headers = {}
        self.__deadline = deadline
        self.__content_type = content_type
        self._request_url = request_url
        self._method = method
        self.__response_headers = {}
        self.__fn_format = fn_format
        self.__app_name = app_name
        self.__fn_name = fn_name
        self.__tracing_context = tracing_context if tracing_context else None
        _debug("request headers. gateway: {0} {1}".format(
            self.__is_gateway(), headers))
        if self.__is_gateway():
            self.__headers = decap_headers(headers, True)
            self.__http_headers = decap_headers(headers, False)

    def AppID(self):
        return self.__app_id

    def AppName(self):
        return self.__app_name

    def FnID(self):
        return self.__fn_id

    def FnName(self):
        return self.__fn_name

    def CallID(self):
        return self.__call_id

    def Config(self):
        return self.__config

    def Headers(self):
        return self.__headers

    def HTTPHeaders(self):
        return self.__http_headers

    def Format(self):
        return self.__fn_format

    def TracingContext(self):
        return self.__tracing_context

    def Deadline(self):
        """The Fn-Deadline header, or now + 30 s in ISO 8601 when absent."""
        if self.__deadline is None:
            import datetime as dt
            now = dt.datetime.now(dt.timezone.utc).astimezone()
            now += dt.timedelta(0, float(DEFAULT_DEADLINE))
            return now.isoformat()
        return self.__deadline

    def SetResponseHeaders(self, headers, status_code):
        """Merges headers (keys lower-cased) into the response headers; in
        gateway mode they are encapsulated first and status_code goes in
        Fn-Http-Status.  Outside gateway mode status_code is not kept."""
        _debug("setting headers. gateway: {0}".format(self.__is_gateway()))
        if self.__is_gateway():
            headers = encap_headers(headers, status=status_code)
        for k, v in headers.items():
            self.__response_headers[k.lower()] = v

    def GetResponseHeaders(self):
        return self.__response_headers

    def RequestURL(self):
        return self._request_url

    def Method(self):
        return self._method

    def __is_gateway(self):
        return self.__headers.get(FN_INTENT) == INTENT_HTTP_REQUEST


def context_from_format(format_def, **kwargs):
    """Returns (InvokeContext, data) for format_def "http-stream" from
    headers= (a dict with lower-case keys) and data=, with the app and
    function facts and the tracing settings from the environment; other
    formats give None.  Raises ValueError for an OCI_TRACING_ENABLED or
    X-B3-Sampled that is not an integer, as fdk-python does."""
    env = os.environ
    enabled = env.get("OCI_TRACING_ENABLED")
    enabled = bool(int(enabled)) if enabled is not None else False
    if format_def != HTTPSTREAM:
        return None
    data = kwargs.get("data")
    headers = kwargs.get("headers")
    trace_id = span_id = parent_span_id = sampled = flags = None
    if enabled:
        trace_id = headers.get(X_B3_TRACEID)
        if trace_id is None:
            trace_id = generate_id()
        span_id = headers.get(X_B3_SPANID)
        parent_span_id = headers.get(X_B3_PARENTSPANID)
        if span_id is None:
            span_id = generate_id()
        sampled = headers.get(X_B3_SAMPLED)
        sampled = int(sampled) if sampled is not None else 1
        flags = headers.get(X_B3_FLAGS)
    tracing = TracingContext(enabled, env.get("OCI_TRACE_COLLECTOR_URL"),
                             trace_id, span_id, parent_span_id, sampled,
                             flags)
    ctx = InvokeContext(
        env.get("FN_APP_ID"), env.get("FN_APP_NAME"), env.get("FN_FN_ID"),
        env.get("FN_FN_NAME"), headers.get(FN_CALL_ID),
        content_type=headers.get(CONTENT_TYPE),
        deadline=headers.get(FN_DEADLINE), config=env, headers=headers,
        method=headers.get(FN_HTTP_METHOD),
        request_url=headers.get(FN_HTTP_REQUEST_URL), fn_format=HTTPSTREAM,
        tracing_context=tracing)
    return ctx, data
