"""The per-call context handed to a function: fdk-python's InvokeContext API.

Also holds the Fn header conventions (Fn-Http-H-* encapsulation in gateway
mode) and the RFC 3339 deadline parser, all without importing datetime.
"""

import os
import sys

VERSION = "0.1.0"
FDK_VERSION = "coldstart-fdk/" + VERSION
FDK_RUNTIME = "python/%d.%d.%d %s" % (sys.version_info[0], sys.version_info[1],
                                     sys.version_info[2],
                                     sys.version_info[3])

HTTPSTREAM = "http-stream"
INTENT_HTTP_REQUEST = "httprequest"
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
DEFAULT_DEADLINE = 30


def push_header(headers, key, value):
    """Adds value under key; a repeated key collects its values in a list."""
    if key not in headers:
        headers[key] = value
        return
    cur = headers[key]
    cur = list(cur) if isinstance(cur, list) else [cur]
    if isinstance(value, list):
        cur.extend(value)
    else:
        cur.append(value)
    headers[key] = cur


def decap_headers(headers, merge=True):
    """Strips the Fn-Http-H- prefix of gateway headers (lower-case keys).

    With merge, the agent's own headers are kept too, unless a client header
    of the same name exists: the client's view wins.
    """
    out = {}
    if not headers:
        return out
    for k, v in headers.items():
        k = k.lower()
        if k.startswith(FN_HTTP_PREFIX) and len(k) > len(FN_HTTP_PREFIX):
            push_header(out, k[len(FN_HTTP_PREFIX):], v)
    if merge:
        for k, v in headers.items():
            k = k.lower()
            if not k.startswith(FN_HTTP_PREFIX) and k not in out:
                out[k] = v
    return out


def encap_headers(headers, status=None):
    """Gives user response headers the Fn-Http-H- prefix (lower-case keys);
    Content-Type and Fn-* headers keep their name."""
    out = {}
    if headers:
        for k, v in headers.items():
            k = str(k).lower()
            if k == CONTENT_TYPE or k.startswith("fn-"):
                push_header(out, k, v)
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


class TracingContext(object):
    """fdk-python's tracing view: OCI tracing settings plus B3 headers."""

    def __init__(self, is_tracing_enabled, trace_collector_url, trace_id,
                 span_id, parent_span_id, is_sampled, flags):
        self.__is_tracing_enabled = is_tracing_enabled
        self.__trace_collector_url = trace_collector_url
        self.__trace_id = trace_id
        self.__span_id = span_id
        self.__parent_span_id = parent_span_id
        self.__is_sampled = is_sampled
        self.__flags = flags

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
        return self.__is_sampled

    def flags(self):
        return self.__flags

    def service_name(self, override=None):
        app = os.environ.get("FN_APP_NAME", "")
        fn = os.environ.get("FN_FN_NAME", "")
        return (override or (app + "::" + fn)).lower()


class InvokeContext(object):
    """Request-specific facts, with fdk-python's method names.

    headers are the request headers with lower-case keys (repeated headers
    hold a list).  In gateway mode (Fn-Intent: httprequest) Headers() is the
    client's view with the Fn-Http-H- prefix removed and HTTPHeaders() only
    the client's headers; otherwise HTTPHeaders() is empty.
    """

    def __init__(self, app_id, app_name, fn_id, fn_name, call_id,
                 content_type="application/octet-stream", deadline=None,
                 config=None, headers=None, request_url=None, method="POST",
                 fn_format=None, tracing_context=None):
        self.__app_id = app_id
        self.__app_name = app_name
        self.__fn_id = fn_id
        self.__fn_name = fn_name
        self.__call_id = call_id
        self.__content_type = content_type
        self.__deadline = deadline
        self.__config = config if config is not None else {}
        self.__headers = headers if headers else {}
        self.__http_headers = {}
        self._request_url = request_url
        self._method = method
        self.__fn_format = fn_format
        self.__tracing_context = tracing_context
        self.__response_headers = {}
        self._response_status = None
        self._gateway = self.__headers.get(FN_INTENT) == INTENT_HTTP_REQUEST
        if self._gateway:
            self.__http_headers = decap_headers(self.__headers, False)
            self.__headers = decap_headers(self.__headers, True)

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
            return (now + dt.timedelta(seconds=DEFAULT_DEADLINE)).isoformat()
        return self.__deadline

    def RequestURL(self):
        return self._request_url

    def Method(self):
        return self._method

    def SetResponseHeaders(self, headers, status_code):
        """Merges headers into the response; in gateway mode they are
        stored with the Fn-Http-H- prefix and status as Fn-Http-Status."""
        if headers is None:
            headers = {}
        if not hasattr(headers, "items"):
            raise TypeError("response headers must be a dict, not %s"
                            % type(headers).__name__)
        if self._gateway:
            headers = encap_headers(headers, status=status_code)
        for k, v in headers.items():
            self.__response_headers[str(k).lower()] = v
        self._response_status = status_code

    def GetResponseHeaders(self):
        return self.__response_headers


def context_from_request(req, config=None):
    """Builds an InvokeContext from a parsed httpwire.Request and the
    process environment (FN_APP_ID, FN_APP_NAME, FN_FN_ID, FN_FN_NAME)."""
    env = os.environ if config is None else config
    headers = {}
    for k, v in req.header_list:
        push_header(headers, k.lower(), v)

    def one(name):
        v = headers.get(name)
        return v[-1] if isinstance(v, list) else v

    sampled = one("x-b3-sampled")
    tracing = TracingContext(
        env.get("OCI_TRACING_ENABLED", "0") == "1",
        env.get("OCI_TRACE_COLLECTOR_URL"),
        one("x-b3-traceid"), one("x-b3-spanid"), one("x-b3-parentspanid"),
        sampled is not None and sampled != "0", one("x-b3-flags"))
    return InvokeContext(
        env.get("FN_APP_ID"), env.get("FN_APP_NAME"), env.get("FN_FN_ID"),
        env.get("FN_FN_NAME"), one(FN_CALL_ID),
        content_type=one(CONTENT_TYPE), deadline=one(FN_DEADLINE),
        config=env, headers=headers, request_url=one(FN_HTTP_REQUEST_URL),
        method=one(FN_HTTP_METHOD), fn_format=HTTPSTREAM,
        tracing_context=tracing)
