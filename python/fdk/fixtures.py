"""fdk.fixtures: fdk-python's unit-test helpers, for tests such as

    @pytest.mark.asyncio
    async def test_hello():
        call = await fixtures.setup_fn_call(handler, content=b'{"name": "x"}')
        content, status, headers = await call
        assert status == 200

setup_fn_call() builds the headers Fn's agent would send (a deadline 30 s
from now, gateway headers when gateway=True) and returns an awaitable of
(body, status, response headers); setup_fn_call_raw() takes the headers as
they are.
"""

from coldstart.fdk import context as _context
from fdk import runner


async def process_response(fn_call_coro):
    """Awaits a call; returns (body, status, response headers)."""
    resp = await fn_call_coro
    return resp.body(), resp.status(), resp.context().GetResponseHeaders()


def setup_headers(deadline=None, headers=None, request_url="/",
                  method="POST", gateway=False):
    """The request headers of a call: headers (encapsulated as Fn-Http-H-*
    with Fn-Intent: httprequest when gateway), the request URL and method,
    and Fn-Deadline (30 s from now unless given)."""
    new_headers = {}
    if gateway:
        new_headers = _context.encap_headers(headers)
        new_headers[_context.FN_INTENT] = _context.INTENT_HTTP_REQUEST
    elif headers is not None:
        for k, v in headers.items():
            new_headers[k] = v
    new_headers[_context.FN_HTTP_REQUEST_URL] = request_url
    new_headers[_context.FN_HTTP_METHOD] = method
    if deadline is None:
        import datetime as dt
        now = dt.datetime.now(dt.timezone.utc).astimezone()
        now += dt.timedelta(0, float(_context.DEFAULT_DEADLINE))
        deadline = now.isoformat()
    new_headers[_context.FN_DEADLINE] = deadline
    return new_headers


class fake_request(object):
    """A request object with Fn's headers and an empty body."""

    def __init__(self, gateway=False):
        self.headers = setup_headers(gateway=gateway)
        self.body = b""


class code(object):
    """Wraps a handler function the way the FDK holds a function."""

    def __init__(self, fn):
        self.fn = fn

    def handler(self):
        return self.fn


async def setup_fn_call(handle_func, request_url="/", method="POST",
                        headers=None, content=None, deadline=None,
                        gateway=False):
    new_headers = setup_headers(deadline=deadline, headers=headers,
                                method=method, request_url=request_url,
                                gateway=gateway)
    return await setup_fn_call_raw(handle_func, content, new_headers)


async def setup_fn_call_raw(handle_func, content=None, headers=None):
    if headers is None:
        headers = {}
    return process_response(runner.handle_request(
        code(handle_func), _context.HTTPSTREAM, headers=headers,
        data=content))
