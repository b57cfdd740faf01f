"""An Fn FDK for Python that starts fast: fdk-python's API over coldstart's
http-stream server.  `coldstart-fdk func.py [handler]` or
`python -m coldstart.fdk func.py [handler]` runs a function; handle() serves
a function object from its own `if __name__ == "__main__"` block.

This package imports nothing when it is imported, since coldstart-fdk loads
it before its socket is ready: InvokeContext and Response are loaded from
coldstart.fdk.context and coldstart.fdk.response on first use.
"""

__all__ = ["InvokeContext", "Response", "handle"]


def handle(handler, warm="lazy"):
    """Serves handler (a function, or an object with a handler() method
    returning one) on FN_LISTENER; exits the process when the server stops.

    When the module calling it is being loaded by coldstart-fdk, a server
    already runs in this process and the call does nothing.
    """
    from coldstart.fdk import server
    if server.active:
        server.log("fdk.handle() ignored: coldstart-fdk already serves "
                   "this process")
        return
    if callable(handler):
        fn = handler

        def resolve():
            return fn
    elif hasattr(handler, "handler"):
        resolve = handler.handler
    else:
        raise TypeError("fdk.handle() wants a function, not %s"
                        % type(handler).__name__)
    raise SystemExit(server.serve(resolve, warm=warm,
                                  what=getattr(handler, "__name__",
                                               "handler")))


def __getattr__(name):
    if name == "InvokeContext":
        from coldstart.fdk.context import InvokeContext
        return InvokeContext
    if name == "Response":
        from coldstart.fdk.response import Response
        return Response
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
