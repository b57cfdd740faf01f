"""Logging as fdk-python 0.1.117 sets it up: the root logger at DEBUG with
one stderr handler writing `CALL_ID - logger - LEVEL - message`, logger
"fdk" (the FDK's own lines) at WARNING or, with FDK_DEBUG, DEBUG, logger
"asyncio" at WARNING, and logger "fn" for the error line of a failed call.

coldstart-fdk calls setup() on the first call, after the socket is ready
(importing logging costs milliseconds of CPU that readiness must not pay);
`import fdk` and `fdk.fixtures` call it too, as fdk-python configures
logging when it is imported.  setup() runs once per process.
"""

import os
import sys

_TRUE = ("true", "1", "t", "y", "yes", "yeah", "yup", "certainly", "uh-huh")

_request_id = None
_fdk_logger = None
_debug_on = False


def setup():
    """Configures the loggers once; returns the "fdk" logger."""
    global _request_id, _fdk_logger, _debug_on
    if _fdk_logger is not None:
        return _fdk_logger
    import contextvars
    import logging

    _request_id = contextvars.ContextVar("fn_request_id", default=None)

    class RequestFormatter(logging.Formatter):
        def format(self, record):
            record.fn_request_id = _request_id.get()
            return logging.Formatter.format(self, record)

    _debug_on = os.environ.get("FDK_DEBUG") in _TRUE
    logging.getLogger("asyncio").setLevel(logging.WARNING)
    root = logging.getLogger()
    root.setLevel(logging.DEBUG)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(RequestFormatter(
        "%(fn_request_id)s - %(name)s - %(levelname)s - %(message)s"))
    root.addHandler(handler)
    logger = logging.getLogger("fdk")
    logger.setLevel(logging.DEBUG if _debug_on else logging.WARNING)
    _fdk_logger = logger
    return logger


def set_request_id(rid):
    """Sets the call id the log lines of the current context carry."""
    setup()
    _request_id.set(rid)


def get_logger():
    return setup()


def debug(message):
    """One of the FDK's own debug lines; nothing unless FDK_DEBUG is set
    (and nothing before setup(), so it is safe before readiness)."""
    if _debug_on and _fdk_logger is not None:
        _fdk_logger.debug(message)


def log(message):
    setup().debug(message)


def get_request_log():
    """The "fn" logger, which carries a failed call's error line."""
    setup()
    import logging
    return logging.getLogger("fn")


_HERE = os.path.dirname(os.path.abspath(__file__))
# The fdk package of fdk-python's names, installed beside coldstart.
_SHIM = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "fdk")


def _own_frame(tb):
    # Frames of the FDK and of asyncio's machinery, above the function's
    # own code in a traceback.
    f = tb.tb_frame.f_code.co_filename
    if f.startswith(_HERE + os.sep) or f.startswith(_SHIM + os.sep):
        return True
    aio = sys.modules.get("asyncio")
    return aio is not None and \
        f.startswith(os.path.dirname(aio.__file__) + os.sep)


def error_line(exc, text=None):
    """fdk-python's error line for a failed call: the exception (or text),
    a colon, and the traceback flattened to one line, from the function's
    own frames on."""
    import traceback
    tb = exc.__traceback__
    while tb is not None and _own_frame(tb):
        tb = tb.tb_next
    flat = "".join(s.replace("\n", "\\n") for s in traceback.format_tb(tb))
    return "{}:{}".format(exc if text is None else text, flat)
