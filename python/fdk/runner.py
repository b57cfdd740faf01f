"""fdk.runner: one call of a function as fdk-python runs it, for
fdk.fixtures and for code that drives a handler itself.  (coldstart-fdk's
server runs calls its own way, with the deadline enforced.)"""

import types

from coldstart.fdk import context as _context
from coldstart.fdk import logs as _log
from coldstart.fdk import response as _response


async def with_deadline(ctx, handler_code, data):
    """Calls handler_code.handler() with ctx and data, awaiting it when it
    is a coroutine function (the deadline is not enforced here)."""
    handle_func = handler_code.handler()
    result = handle_func(ctx, data=data)
    if isinstance(result, types.CoroutineType):
        return await result
    return result


async def handle_request(handler_code, format_def, **kwargs):
    """Returns the function's Response for a call with headers= and data=;
    a TimeoutError becomes a 504 and any other exception a 502, logged on
    the "fn" logger."""
    ctx, body = _context.context_from_format(format_def, **kwargs)
    _log.set_request_id(ctx.CallID())
    try:
        result = await with_deadline(ctx, handler_code, body)
        return _response.to_response(ctx, result)
    except TimeoutError as ex:
        _log.get_request_log().error(_log.error_line(ex))
        return _response.dispatch_error(ctx, 504, str(ex))
    except Exception as ex:
        _log.get_request_log().error(_log.error_line(ex))
        return _response.dispatch_error(ctx, 502, str(ex))
