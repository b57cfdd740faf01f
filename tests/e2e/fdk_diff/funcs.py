"""Functions for the differential test of coldstart-fdk against fdk-python
0.1.117 (tests/e2e/test_fdk_diff.py): each handler is served on its own
by both FDKs and gets the same requests.  Together they exercise every
part of fdk-python's API and every kind of return value.  Nothing here may
depend on time or chance, or the two runs could not be compared."""

import asyncio
import decimal
import json
import logging
import os
import sys
import time

import fdk
from fdk import context
from fdk import response

log = logging.getLogger("difftest")


def _body(data):
    return data.getvalue() if data is not None else b""


# --- return values ----------------------------------------------------------

def ret_str(ctx, data=None):
    return "plain text é"


def ret_bytes(ctx, data=None):
    return b"\x00\x01binary\xff"


def ret_bytearray(ctx, data=None):
    return bytearray(b"from a bytearray")


def ret_none(ctx, data=None):
    return None


def ret_empty_str(ctx, data=None):
    return ""


def ret_zero(ctx, data=None):
    return 0


def ret_false(ctx, data=None):
    return False


def ret_int(ctx, data=None):
    return 42


def ret_float(ctx, data=None):
    return 2.5


def ret_dict(ctx, data=None):
    return {"a": 1, "b": [1, 2], "c": None}


def ret_empty_dict(ctx, data=None):
    return {}


def ret_list(ctx, data=None):
    return ["x", 1, True]


def ret_tuple(ctx, data=None):
    return (1, "two")


def ret_decimal(ctx, data=None):
    return decimal.Decimal("1.10")


def ret_object(ctx, data=None):
    class Thing(object):
        def __str__(self):
            return "a thing with str()"
    return Thing()


def ret_echo(ctx, data=None):
    return _body(data)


def ret_echo_len(ctx, data=None):
    data.seek(0, 2)
    return "%d bytes" % data.tell()


# --- Response objects -------------------------------------------------------

def resp_json(ctx, data=None):
    name = "World"
    try:
        name = json.loads(_body(data)).get("name")
    except (Exception, ValueError) as ex:
        print(str(ex))
    return response.Response(
        ctx, response_data=json.dumps({"message": "Hello {0}".format(name)}),
        headers={"Content-Type": "application/json"})


def resp_status(ctx, data=None):
    return response.Response(ctx, response_data="created", status_code=201,
                             headers={"X-Status": "set"})


def resp_404(ctx, data=None):
    return response.Response(ctx, response_data="missing", status_code=404)


def resp_502(ctx, data=None):
    return response.Response(ctx, response_data="upstream", status_code=502)


def resp_504(ctx, data=None):
    return response.Response(ctx, response_data="slow", status_code=504)


def resp_no_data(ctx, data=None):
    return response.Response(ctx)


def resp_bytes_png(ctx, data=None):
    return response.Response(ctx, response_data=b"\x89PNG\r\n\x1a\n",
                             headers={"Content-Type": "image/png"})


def resp_encoding(ctx, data=None):
    return response.Response(ctx, response_data="caf\u00e9",
                             response_encoding="latin-1")


def resp_list_header(ctx, data=None):
    return response.Response(ctx, response_data="two values",
                             headers={"X-Multi": ["v1", "v2"],
                                      "X-Int": 7})


def resp_methods(ctx, data=None):
    r = response.Response(ctx, response_data=b"abc", status_code=202)
    return "%s %r %r %s" % (r.status(), r.body(), r.body_bytes(),
                            r.context() is ctx)


def resp_redirect(ctx, data=None):
    # fdk-python's README: the status set here is overridden by the
    # Response's own status (200).
    ctx.SetResponseHeaders({"Location": "http://www.example.com"}, 302)
    return response.Response(ctx, response_data="Page moved")


def set_headers_plain(ctx, data=None):
    ctx.SetResponseHeaders({"X-Custom": "yes", "Content-Type": "text/csv"},
                           203)
    return "a,b\n1,2\n"


def get_response_headers(ctx, data=None):
    ctx.SetResponseHeaders({"X-One": "1"}, 200)
    return json.dumps(sorted(ctx.GetResponseHeaders().items()))


# --- the context ------------------------------------------------------------

def ctx_ids(ctx, data=None):
    return json.dumps([ctx.AppID(), ctx.AppName(), ctx.FnID(), ctx.FnName(),
                       ctx.CallID(), ctx.Format(), ctx.Method(),
                       ctx.RequestURL()])


def ctx_headers(ctx, data=None):
    return json.dumps(ctx.Headers(), sort_keys=True)


def ctx_http_headers(ctx, data=None):
    return json.dumps(ctx.HTTPHeaders(), sort_keys=True)


def ctx_config(ctx, data=None):
    cfg = ctx.Config()
    return json.dumps([cfg.get("MY_SETTING"), cfg.get("FN_APP_NAME"),
                       cfg is os.environ])


def ctx_deadline(ctx, data=None):
    d = ctx.Deadline()
    # Without Fn-Deadline it is 30 s from now: only its shape is stable.
    return d if ctx.Headers().get("fn-deadline") else "%d %s" % (
        len(d), d[10])


def ctx_tracing(ctx, data=None):
    tc = ctx.TracingContext()
    z = tc.zipkin_attrs()
    shape = lambda v: v if v is None or not isinstance(v, str) or \
        ctx.Headers().get("x-b3-spanid") == v or \
        ctx.Headers().get("x-b3-traceid") == v else "generated:%d" % len(v)
    return json.dumps({
        "enabled": tc.is_tracing_enabled(), "url": tc.trace_collector_url(),
        "trace": shape(tc.trace_id()), "span": shape(tc.span_id()),
        "parent": tc.parent_span_id(), "sampled": tc.is_sampled(),
        "flags": tc.flags(), "service": tc.service_name(),
        "service2": tc.service_name("Override"),
        "annotations": tc.annotations(),
        "z_trace": shape(z.trace_id), "z_span": shape(z.span_id),
        "z_parent": shape(z.parent_span_id), "z_sampled": z.is_sampled,
        "z_flags": z.flags, "z_fields": list(z._fields)}, sort_keys=True)


def ctx_type(ctx, data=None):
    return json.dumps([isinstance(ctx, context.InvokeContext),
                       type(data).__name__, data.tell(),
                       type(ctx.TracingContext()).__name__])


def ctx_build(ctx, data=None):
    # A context built by hand, as unit tests do.
    c = context.InvokeContext("app", "name", "fn", "fname", "cid",
                              headers={"fn-intent": "httprequest",
                                       "fn-http-h-x-a": "1", "x-b": "2"})
    c.SetResponseHeaders({"X-R": "r"}, 418)
    return json.dumps([c.Headers(), c.HTTPHeaders(), c.GetResponseHeaders(),
                       c.Config(), c.Deadline()[:2]], sort_keys=True)


# --- failures ---------------------------------------------------------------

def raise_value_error(ctx, data=None):
    raise ValueError("bad value")


def raise_empty(ctx, data=None):
    raise RuntimeError()


def raise_timeout(ctx, data=None):
    raise TimeoutError("took too long")


def raise_after_headers(ctx, data=None):
    ctx.SetResponseHeaders({"X-Before": "set"}, 201)
    raise KeyError("after headers")


def raise_nested(ctx, data=None):
    def inner():
        return {}["missing"]
    try:
        inner()
    except KeyError as e:
        raise LookupError("wrapped") from e


def bad_response_headers(ctx, data=None):
    return response.Response(ctx, response_data="x", headers=["not", "dict"])


def not_callable_result(ctx, data=None):
    class NoStr(object):
        def __str__(self):
            raise RuntimeError("no str")
    return NoStr()


# --- logging and output -----------------------------------------------------

def logs(ctx, data=None):
    logging.getLogger().info("root info %s", ctx.CallID())
    log.warning("named warning")
    logging.getLogger("fdk").info("fdk info is hidden")
    logging.getLogger("fdk").warning("fdk warning shows")
    logging.debug("module-level debug")
    print("to stdout", ctx.CallID())
    print("to stderr", file=sys.stderr)
    return "logged"


def log_exception(ctx, data=None):
    try:
        1 / 0
    except ZeroDivisionError:
        log.exception("caught")
    return "ok"


# --- asyncio ----------------------------------------------------------------

async def coro_str(ctx, data=None):
    await asyncio.sleep(0)
    return "from a coroutine " + _body(data).decode("utf-8", "replace")[:20]


async def coro_response(ctx, data=None):
    await asyncio.sleep(0)
    return response.Response(ctx, response_data={"via": "coroutine"},
                             status_code=202)


async def coro_raise(ctx, data=None):
    await asyncio.sleep(0)
    raise KeyError("async failure")


async def coro_log(ctx, data=None):
    async def sub():
        logging.getLogger().info("from a task")
        return 1
    n = await asyncio.ensure_future(sub())
    return "task gave %d" % n


def sync_get_event_loop(ctx, data=None):
    loop = asyncio.get_event_loop()
    return type(loop).__name__.endswith("EventLoop") and "has a loop"


def slow(ctx, data=None):
    time.sleep(float(_body(data) or b"0"))
    return "slept"


_count = {"n": 0}


def module_state(ctx, data=None):
    _count["n"] += 1
    return "call %d of this process" % _count["n"]


def fdk_names(ctx, data=None):
    return json.dumps([hasattr(fdk, "handle"), response.Response.__name__,
                       context.TracingContext.__name__])
