"""fdk.errors: fdk-python's DispatchException, the error a failed call
answers with."""

from coldstart.fdk import response as _response


class DispatchException(Exception):
    """A failed call's answer: message as the body, status 502 or 504."""

    def __init__(self, ctx, status, message):
        self.status = status
        self.message = message
        self.ctx = ctx

    def response(self):
        return _response.dispatch_error(self.ctx, self.status, self.message)
