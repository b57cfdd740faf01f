"""Logs as awslambdaric 4.0.1 writes them: stdout (or the framed telemetry
descriptor Lambda passes in _LAMBDA_TELEMETRY_LOG_FD), the root logger's
handler with its text or JSON format (AWS_LAMBDA_LOG_FORMAT), its level
(AWS_LAMBDA_LOG_LEVEL), and the [ERROR] record of a failed call or init.

The logging module is imported only by setup_logging(), which the runtime
calls just before it imports the handler's module or, under a start-up
plan, right after logging's body runs at its first use (bootstrap.py).
"""

import os
import sys
import time

ERROR_LOG_LINE_TERMINATE = "\r"
ERROR_LOG_IDENT = "\u00a0"
DATETIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

LOG_FORMAT_JSON = 0
LOG_FORMAT_TEXT = 1

# logging's levels, without importing it: NOTSET..CRITICAL.
_LEVELS = (0, 10, 20, 30, 40, 50)
_JSON_FRAME_TYPES = dict(zip(_LEVELS, (
    t.to_bytes(4, "big") for t in (0xA55A0002, 0xA55A000A, 0xA55A000E,
                                   0xA55A0012, 0xA55A0016, 0xA55A001A))))
_TEXT_FRAME_TYPES = dict(zip(_LEVELS, (
    t.to_bytes(4, "big") for t in (0xA55A0003, 0xA55A000B, 0xA55A000F,
                                   0xA55A0013, 0xA55A0017, 0xA55A001B))))
DEFAULT_FRAME_TYPE = _TEXT_FRAME_TYPES[0]

_RESERVED_FIELDS = {
    "name", "msg", "args", "levelname", "levelno", "pathname", "filename",
    "module", "exc_info", "exc_text", "stack_info", "lineno", "funcName",
    "created", "msecs", "relativeCreated", "thread", "threadName",
    "processName", "process", "aws_request_id", "tenant_id", "_frame_type",
}

UNHANDLED_WARNING = (
    "LAMBDA_WARNING: "
    "Unhandled exception. "
    "The most likely cause is an issue in the function code. "
    "However, in rare cases, a Lambda runtime update can cause unexpected "
    "function behavior. "
    "For functions using managed runtimes, runtime updates can be triggered "
    "by a function change, or can be applied automatically. "
    "To determine if the runtime has been updated, check the runtime version "
    "in the INIT_START log entry. "
    "If this error correlates with a change in the runtime version, you may "
    "be able to mitigate this error by temporarily rolling back to the "
    "previous runtime version. "
    "For more information, see "
    "https://docs.aws.amazon.com/lambda/latest/dg/runtimes-update.html\r")


def log_format():
    v = os.environ.get("AWS_LAMBDA_LOG_FORMAT")
    if v and v.upper() == "JSON":
        return LOG_FORMAT_JSON
    return LOG_FORMAT_TEXT


def log_level():
    v = os.environ.get("AWS_LAMBDA_LOG_LEVEL")
    return {None: "", "TRACE": "DEBUG"}.get(v, v).upper()


def format_level(levelno):
    return min(50, max(0, levelno)) // 10 * 10


class Unbuffered(object):
    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, exc_tb):
        pass

    def __getattr__(self, attr):
        return getattr(self.stream, attr)

    def write(self, msg):
        self.stream.write(msg)
        self.stream.flush()

    def writelines(self, msgs):
        self.stream.writelines(msgs)
        self.stream.flush()


class StandardLogSink(object):
    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, exc_tb):
        pass

    def log(self, msg, frame_type=None):
        sys.stdout.write(msg)

    def log_error(self, message_lines):
        sys.stdout.write(ERROR_LOG_LINE_TERMINATE.join(message_lines) + "\n")


class FramedTelemetryLogSink(object):
    """Frames of type, length, microsecond timestamp (big-endian) and the
    message, on the descriptor Lambda gives."""

    def __init__(self, fd):
        self.fd = int(fd)
        self.file = None

    def __enter__(self):
        self.file = os.fdopen(self.fd, "wb", 0)
        return self

    def __exit__(self, exc_type, exc_value, exc_tb):
        self.file.close()

    def log(self, msg, frame_type=None):
        data = msg.encode("utf8")
        stamp = int(time.time_ns() / 1000)
        self.file.write((frame_type or DEFAULT_FRAME_TYPE)
                        + len(data).to_bytes(4, "big")
                        + stamp.to_bytes(8, "big") + data)

    def log_error(self, message_lines):
        self.log("\n".join(message_lines), frame_type=error_frame_type())


def create_log_sink():
    fd = os.environ.pop("_LAMBDA_TELEMETRY_LOG_FD", None)
    if fd is not None:
        return FramedTelemetryLogSink(fd)
    return StandardLogSink()


def error_frame_type():
    if log_format() == LOG_FORMAT_JSON:
        return _JSON_FRAME_TYPES[40]
    return _TEXT_FRAME_TYPES[40]


def _replace_indentation(line, indent_char, new_indent_char):
    n = 0
    for c in line:
        if c != indent_char:
            break
        n += 1
    return new_indent_char * n + line[n:]


def log_error(error_result, log_sink):
    """The [ERROR] record of an error document, in the format in force."""
    if log_format() == LOG_FORMAT_JSON:
        from .marshalling import to_json
        stamp = time.strftime(DATETIME_FORMAT, time.gmtime(time.time()))
        doc = {"timestamp": stamp, "log_level": "ERROR"}
        doc.update(error_result)
        log_sink.log_error([to_json(doc)])
        return
    desc = "[ERROR]"
    etype = error_result.get("errorType")
    if etype:
        desc += " " + etype
    emsg = error_result.get("errorMessage")
    if emsg:
        if etype:
            desc += ":"
        desc += " " + emsg
    lines = [desc]
    stack = error_result.get("stackTrace")
    if stack is not None:
        lines.append("Traceback (most recent call last):")
        for element in stack:
            if element == "":
                lines.append("")
            else:
                for line in element.splitlines():
                    lines.append(_replace_indentation(line, " ",
                                                      ERROR_LOG_IDENT))
    log_sink.log_error(lines)


def setup_logging(log_sink, request_id_of):
    """Installs awslambdaric's handler on the root logger (imports
    logging).  request_id_of() gives the current call's (request id,
    tenant id) to its filter."""
    import logging

    fmt = log_format()
    level = log_level()

    class LambdaLoggerHandler(logging.Handler):
        def __init__(self, sink):
            logging.Handler.__init__(self)
            self.log_sink = sink

        def emit(self, record):
            self.log_sink.log(self.format(record))

    class LambdaLoggerHandlerWithFrameType(logging.Handler):
        def __init__(self, sink):
            logging.Handler.__init__(self)
            self.log_sink = sink

        def emit(self, record):
            self.log_sink.log(
                self.format(record),
                frame_type=(getattr(record, "_frame_type", None)
                            or _TEXT_FRAME_TYPES.get(
                                format_level(record.levelno))))

    class LambdaLoggerFilter(logging.Filter):
        def filter(self, record):
            rid, tenant = request_id_of()
            record.aws_request_id = rid or ""
            record.tenant_id = tenant
            return True

    logging.Formatter.converter = time.gmtime
    logger = logging.getLogger()
    if fmt == LOG_FORMAT_JSON or level:
        handler = LambdaLoggerHandlerWithFrameType(log_sink)
    else:
        handler = LambdaLoggerHandler(log_sink)
    if fmt == LOG_FORMAT_JSON:
        handler.setFormatter(_json_formatter(logging))
    else:
        handler.setFormatter(logging.Formatter(
            "[%(levelname)s]\t%(asctime)s.%(msecs)03dZ\t%(aws_request_id)s"
            "\t%(message)s\n", "%Y-%m-%dT%H:%M:%S"))
    if level in logging._nameToLevel:
        logger.setLevel(level)
    handler.addFilter(LambdaLoggerFilter())
    logger.addHandler(handler)


def _json_formatter(logging):
    import json
    import traceback

    encode = json.JSONEncoder(ensure_ascii=False).encode

    class JsonFormatter(logging.Formatter):
        def __init__(self):
            logging.Formatter.__init__(self, datefmt=DATETIME_FORMAT)

        def format(self, record):
            record.levelno = format_level(record.levelno)
            record.levelname = logging.getLevelName(record.levelno)
            record._frame_type = _JSON_FRAME_TYPES.get(
                record.levelno, _JSON_FRAME_TYPES[0])
            exc = record.exc_info
            result = {
                "timestamp": self.formatTime(record, self.datefmt),
                "level": record.levelname,
                "message": record.getMessage(),
                "logger": record.name,
                "stackTrace": traceback.format_tb(exc[2]) if exc else None,
                "errorType": exc[0].__name__ if exc else None,
                "errorMessage": str(exc[1]) if exc else None,
                "requestId": getattr(record, "aws_request_id", None),
                "location": ("%s:%s:%s" % (record.pathname, record.funcName,
                                           record.lineno) if exc else None),
            }
            if getattr(record, "tenant_id", None) is not None:
                result["tenantId"] = record.tenant_id
            result.update((k, v) for k, v in record.__dict__.items()
                          if k not in _RESERVED_FIELDS and k not in result)
            result = {k: v for k, v in result.items() if v is not None}
            return encode(result) + "\n"

    return JsonFormatter()
