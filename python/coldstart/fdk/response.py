"""The response object a function may return: fdk-python 0.1.117's Response.

Creating one records its headers (with Fn-Fdk-Version and Fn-Fdk-Runtime)
and, in gateway mode, its status on the call's context, exactly as
fdk-python does, so code that reads ctx.GetResponseHeaders() still works.
"""

from coldstart.fdk import context as _context


class Response(object):
    """A function's answer: body, headers and status.

    response_data may be anything: bytes and bytearray are sent as they
    are, anything else as str(response_data) in response_encoding; a falsy
    value is sent as an empty body.  headers, when given, is updated in
    place with the FDK's version headers.  On the wire the status is 200,
    502 or 504 as given, any other status 200; in gateway mode the status
    also travels in Fn-Http-Status.
    """

    def __init__(self, ctx, response_data=None, headers=None, status_code=200,
                 response_encoding="utf-8"):
        self.ctx = ctx
        self.status_code = status_code
        self.response_data = response_data if response_data else ""
        self.response_encoding = response_encoding
        if headers is None:
            headers = {}
        headers.update({_context.FN_FDK_VERSION: _context.FDK_VERSION,
                        _context.FN_FDK_RUNTIME: _context.FDK_RUNTIME})
        ctx.SetResponseHeaders(headers, status_code)
        self.ctx = ctx

    def status(self):
        return self.status_code

    def body(self):
        return self.response_data

    def body_bytes(self):
        data = self.response_data
        if isinstance(data, (bytes, bytearray)):
            return data
        return str(data).encode(self.response_encoding)

    def context(self):
        return self.ctx


def dispatch_error(ctx, status, message):
    """fdk-python's answer for a failed (502) or timed-out (504) call: the
    message as the body, Content-Type application/json, recorded on the
    context like any Response."""
    return Response(ctx, response_data=message,
                    headers={_context.CONTENT_TYPE:
                             "application/json; charset=utf-8"},
                    status_code=status)


def to_response(ctx, result):
    """What fdk-python makes of a handler's return value: a Response as it
    is, anything else the body of a 200 Response carrying the headers the
    handler set on ctx."""
    if isinstance(result, Response):
        return result
    return Response(ctx, response_data=result,
                    headers=ctx.GetResponseHeaders(), status_code=200)
