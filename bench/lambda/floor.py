"""The floor of the Lambda benchmark: the least a runtime process can do to
answer a handler's first invocation the same.  It applies the handler's
plan in strict mode (every pure-Python module the event did not use is
deferred, even the ones the plan keeps eager; FLOOR_KEEP=mod,... keeps
those modules eager all the same, the ones the benchmark found strict mode
cannot defer without changing the answer), imports the handler's module
from the working directory (sys.path's first entry, as `python3 -m` gives
both runtimes), asks the Runtime API at AWS_LAMBDA_RUNTIME_API for the
first event over _socket, calls the handler with a minimal context and
posts its answer as JSON written the way awslambdaric writes these
handlers' answers (simplejson's separators, ASCII only as without an
AWS_EXECUTION_ENV of python3.12 or later, which the bench does not set):
dicts, lists, text, numbers, booleans and None, through _json's C
encoder.  Then it asks for the next event, as a runtime does, and waits
there (the RIE answers the caller meanwhile).  The bench runs it compiled
(lambda_bench.floor_program).

The collector is held from before the plan until the first response, the
start's objects then join its oldest generation (release_gc with
responded), and coldstart.plan.responded() is called after it, as
coldstart.lambda does under a plan.

usage: floor.py PLAN HANDLER (module.function)
"""
import os
import sys

import _json
import _socket

PREFIX = b"/2018-06-01/runtime/invocation/"


class _Context(object):
    """What a handler may read of its context (awslambdaric's attributes;
    the bench's handlers read none)."""

    def __init__(self, request_id, deadline_ms, arn):
        env = os.environ
        self.aws_request_id = request_id
        self.invoked_function_arn = arn
        self.function_name = env.get("AWS_LAMBDA_FUNCTION_NAME")
        self.function_version = env.get("AWS_LAMBDA_FUNCTION_VERSION")
        self.memory_limit_in_mb = env.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
        self.log_group_name = env.get("AWS_LAMBDA_LOG_GROUP_NAME")
        self.log_stream_name = env.get("AWS_LAMBDA_LOG_STREAM_NAME")
        self.client_context = None
        self.identity = None
        self._deadline_ms = deadline_ms

    def get_remaining_time_in_millis(self):
        import time
        return max(self._deadline_ms - int(time.time() * 1000), 0)


def _exchange(conn, request):
    """Sends request, returns (status, headers lower-cased, body) of the
    answer (Content-Length or chunked)."""
    conn.sendall(request)
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = conn.recv(65536)
        if not d:
            raise SystemExit("floor: the Runtime API closed the connection")
        buf += d
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        out = b""
        while True:
            while b"\r\n" not in body:
                body += conn.recv(65536)
            size, _, body = body.partition(b"\r\n")
            n = int(size.split(b";")[0], 16)
            while len(body) < n + 2:
                body += conn.recv(65536)
            out, body = out + body[:n], body[n + 2:]
            if not n:
                break
        body = out
    else:
        n = int(headers.get("content-length", "0"))
        while len(body) < n:
            body += conn.recv(65536)
    return int(lines[0].split(" ")[1]), headers, body


def _event(body, content_type):
    """The event as awslambdaric reads it: JSON for application/json (the
    C scanner json.loads uses, set up as its default decoder), else the
    bytes."""
    if content_type != "application/json":
        return body
    ctx = type(sys)("ctx")
    ctx.object_hook = ctx.object_pairs_hook = None
    ctx.parse_float, ctx.parse_int = float, int
    ctx.parse_constant = {"-Infinity": -float("inf"), "Infinity":
                          float("inf"), "NaN": float("nan")}.__getitem__
    ctx.strict = True
    ctx.memo = {}
    text = body.decode("utf-8")
    return _json.make_scanner(ctx)(text, len(text) - len(text.lstrip()))[0]


def _body(answer):
    """The answer as awslambdaric's simplejson writes it for the bench's
    handlers (bytes go as they are)."""
    if isinstance(answer, bytes):
        return answer, b"application/unknown"

    def default(o):
        raise TypeError("Object of type %s is not JSON serializable"
                        % type(o).__name__)
    quote = _json.encode_basestring_ascii
    if isinstance(answer, str):
        text = quote(answer)
    else:
        text = "".join(_json.make_encoder({}, default, quote, None, ": ",
                                          ", ", False, False, True)(answer, 0))
    return text.encode("utf-8"), b"application/json"


def main():
    plan_path, handler = sys.argv[1:3]
    # The working directory first on sys.path, as `python3 -m` sets it
    # (not this script's directory).
    sys.path[0] = os.environ.get("LAMBDA_TASK_ROOT") or os.getcwd()
    import coldstart
    held = coldstart.hold_gc(planned=True)
    from coldstart import plan
    keep = [m for m in os.environ.get("FLOOR_KEEP", "").split(",") if m]
    plan.install(plan_path, strict=True, keep=keep)
    modname, fname = handler.rsplit(".", 1)
    # The import system's own function: importlib.import_module would
    # import the importlib package (and warnings) first.
    fn = getattr(sys.modules["_frozen_importlib"]._gcd_import(modname),
                 fname)

    host, _, port = os.environ["AWS_LAMBDA_RUNTIME_API"].rpartition(":")
    conn = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    conn.connect((host, int(port)))
    conn.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
    nxt = (b"GET " + PREFIX + b"next HTTP/1.1\r\nHost: " +
           host.encode() + b"\r\n\r\n")
    status, headers, body = _exchange(conn, nxt)
    if status != 200:
        raise SystemExit("floor: GET next answered %d" % status)
    rid = headers["lambda-runtime-aws-request-id"]
    ctx = _Context(rid, int(headers.get("lambda-runtime-deadline-ms") or 0),
                   headers.get("lambda-runtime-invoked-function-arn", ""))
    out, ctype = _body(fn(_event(body, headers.get("content-type")), ctx))
    status = _exchange(conn, b"POST " + PREFIX + rid.encode() +
                       b"/response HTTP/1.1\r\nHost: " + host.encode() +
                       b"\r\nContent-Type: " + ctype +
                       b"\r\nContent-Length: %d\r\n\r\n" % len(out) + out)[0]
    if status != 202:
        raise SystemExit("floor: POST response answered %d" % status)
    if held is not None:
        coldstart.release_gc(held, responded=True)
    plan.responded()
    # The next GET waits until the next invocation (or the end).
    _exchange(conn, nxt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
