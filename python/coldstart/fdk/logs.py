"""Logging as fdk-python 0.1.117 sets it up: the root logger at DEBUG with
one stderr handler writing `CALL_ID - logger - LEVEL - message`, logger
"fdk" (the FDK's own lines) at WARNING or, with FDK_DEBUG, DEBUG, logger
"asyncio" at WARNING, and logger "fn" for the error line of a failed call.

coldstart-fdk calls setup() on the first call, after the socket is ready
(importing logging costs milliseconds of CPU that readiness must not pay);
`import fdk` and `fdk.fixtures` call it too, as fdk-python configures
logging when it is imported.  setup() runs once per process.  Under a
start-up plan (coldstart.plan installed), when logging is not imported yet
and FDK_DEBUG is off, setup() creates logging deferred instead and the
configuration runs right after logging's body, at its first use: a request
that never logs does not import logging, and one that does sees the
loggers as fdk-python sets them up.
"""

import os
import sys

_TRUE = ("true", "1", "t", "y", "yes", "yeah", "yup", "certainly", "uh-huh")

_request_id = None
_fdk_logger = None
_debug_on = False
# setup() left the configuration to logging's first use (under a plan).
_waiting = False


def _prepare():
    global _request_id, _debug_on
    if _request_id is None:
        import contextvars
        _request_id = contextvars.ContextVar("fn_request_id", default=None)
        _debug_on = os.environ.get("FDK_DEBUG") in _TRUE


def setup():
    """Configures the loggers once (or, under a plan, at logging's first
    use); returns the "fdk" logger or None while that waits."""
    global _waiting
    if _fdk_logger is None and not _waiting:
        _prepare()
        plan = sys.modules.get("coldstart.plan")
        if _debug_on or plan is None or plan.installed() is None or \
                not plan.defer_then("logging", _configure):
            _configure()
        else:
            _waiting = True
    return _fdk_logger


def _configure():
    global _fdk_logger
    import logging
    # A deferred logging's body runs here, and this set-up right after it.
    logging.Formatter
    if _fdk_logger is not None:
        return

    class RequestFormatter(logging.Formatter):
        def format(self, record):
            record.fn_request_id = _request_id.get()
            return logging.Formatter.format(self, record)

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


def _logger():
    """The "fdk" logger, configured now."""
    if _fdk_logger is None:
        _prepare()
        _configure()
    return _fdk_logger


def set_request_id(rid):
    """Sets the call id the log lines of the current context carry."""
    _prepare()
    _request_id.set(rid)


def get_logger():
    return _logger()


def debug(message):
    """One of the FDK's own debug lines; nothing unless FDK_DEBUG is set
    (and nothing before setup(), so it is safe before readiness)."""
    if _debug_on and _fdk_logger is not None:
        _fdk_logger.debug(message)


def log(message):
    _logger().debug(message)


def get_request_log():
    """The "fn" logger, which carries a failed call's error line."""
    _logger()
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
