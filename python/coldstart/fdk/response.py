"""The response object a function may return: fdk-python's Response.

Creating one records its headers and status on the call's context, exactly
as fdk-python does, so code that reads ctx.GetResponseHeaders() still works.
"""

from coldstart.fdk import context as _context


class Response(object):
    """A function's answer: body, headers and the status the caller sees.

    response_data may be str, bytes, a JSON-serialisable value or None.  The
    status travels to the caller in Fn-Http-Status; the HTTP status the Fn
    agent sees stays 200, since any other status makes it kill the container.
    """

    def __init__(self, ctx, response_data=None, headers=None,
                 status_code=200):
        self.ctx = ctx
        self.status_code = status_code
        self.response_data = response_data if response_data is not None \
            else ""
        headers = dict(headers) if headers else {}
        headers[_context.FN_FDK_VERSION] = _context.FDK_VERSION
        ctx.SetResponseHeaders(headers, status_code)

    def status(self):
        return self.status_code

    def body(self):
        return self.response_data

    def context(self):
        return self.ctx
