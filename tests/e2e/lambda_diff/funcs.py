"""Handlers the Lambda differential test runs under awslambdaric and under
coldstart.lambda: every kind of return value, exception, context use and
large payload.  Each returns or raises something whose rendering by the
runtime is what is compared."""

import collections
import decimal
import enum
import logging
import os
import sys

Point = collections.namedtuple("Point", "x y")


class Color(enum.IntEnum):
    RED = 1


class Tag(str):
    pass


class AsDict(object):
    def _asdict(self):
        return {"from": "_asdict"}


class AppError(Exception):
    pass


def ret_dict(event, context):
    return {"a": 1, "b": [1, 2, {"c": None}], "d": "x"}


def ret_list(event, context):
    return [1, "two", 3.0, None, True, False]


def ret_str(event, context):
    return "h\u00e9llo \u2603 \"quoted\" \\ \n tab\t"


def ret_int(event, context):
    return 42


def ret_float(event, context):
    return 0.1 + 0.2


def ret_none(event, context):
    return None


def ret_bool(event, context):
    return True


def ret_decimal(event, context):
    return {"price": decimal.Decimal("1.50"), "list": [decimal.Decimal("-0"),
            decimal.Decimal("1E+2"), decimal.Decimal("123456789.123456789")]}


def ret_decimal_special(event, context):
    return [decimal.Decimal("NaN"), decimal.Decimal("-sNaN"),
            decimal.Decimal("Infinity"), decimal.Decimal("-Infinity")]


def ret_bytes(event, context):
    return b"\x00\x01raw bytes \xff"


def ret_nested_bytes(event, context):
    return {"b": b"text in bytes", b"key": [b"x"]}


def ret_nested_bad_bytes(event, context):
    return [b"\xff\xfe"]


def ret_namedtuple(event, context):
    return {"p": Point(1, 2), "ps": [Point(3, 4)]}


def ret_tuple(event, context):
    return (1, (2, 3), [4])


def ret_set(event, context):
    return {"s": {1, 2}}


def ret_object(event, context):
    return object()


def ret_generator(event, context):
    return (i for i in range(3))


def ret_nan_inf(event, context):
    return [float("nan"), float("inf"), -float("inf"), 1e300, -0.0]


def ret_bigint(event, context):
    return [2 ** 100, -2 ** 70]


def ret_keys(event, context):
    return {7: "int", 2.5: "float", True: "true", False: "false", None: "none",
            "s": "str"}


def ret_bad_key(event, context):
    return {(1, 2): "tuple key"}


def ret_circular(event, context):
    d = {}
    d["self"] = d
    return d


def ret_subclasses(event, context):
    return {Tag("tag"): Tag("value"), "enum": Color.RED, "c": [Color.RED]}


def ret_asdict(event, context):
    return [AsDict()]


def ret_echo(event, context):
    return {"event": event, "type": type(event).__name__}


def ret_large(event, context):
    return "x" * (5 * 1024 * 1024)


def ret_large_event(event, context):
    return {"len": len(event["data"]), "tail": event["data"][-10:]}


def ret_too_large(event, context):
    return "y" * (7 * 1024 * 1024)


def raise_value_error(event, context):
    raise ValueError("bad value")


def _deeper(n):
    if n == 0:
        raise AppError("deep failure")
    return _deeper(n - 1)


def raise_nested(event, context):
    return _deeper(3)


def raise_custom(event, context):
    raise AppError("custom", 2)


def raise_chained(event, context):
    try:
        {}["missing"]
    except KeyError as e:
        raise RuntimeError("wrapped") from e


def raise_no_message(event, context):
    raise RuntimeError()


def raise_keyerror(event, context):
    return {}["nokey"]


def raise_unicode(event, context):
    raise ValueError("caf\u00e9 \u2603")


def raise_assert(event, context):
    assert event == "never", "assertion text"


def raise_exit(event, context):
    sys.exit(3)


def ctx_fields(event, context):
    return {
        "function_name": context.function_name,
        "function_version": context.function_version,
        "memory_limit_in_mb": context.memory_limit_in_mb,
        "log_group_name": context.log_group_name,
        "log_stream_name": context.log_stream_name,
        "invoked_function_arn": context.invoked_function_arn,
        "request_id_len": len(context.aws_request_id),
        "identity": [context.identity.cognito_identity_id,
                     context.identity.cognito_identity_pool_id],
        "client_context": repr(context.client_context),
        "tenant_id": context.tenant_id,
    }


def ctx_remaining(event, context):
    left = context.get_remaining_time_in_millis()
    return {"positive": left > 0, "under_limit": left <= 300000,
            "type": type(left).__name__}


def ctx_repr(event, context):
    return repr(context).replace(context.aws_request_id, "<id>")


def ctx_log(event, context):
    context.log("logged through context.log\n")
    return "ok"


def trace_env(event, context):
    return os.environ.get("_X_AMZN_TRACE_ID")


def log_records(event, context):
    print("printed line")
    log = logging.getLogger()
    log.debug("debug record")
    log.info("info record")
    log.warning("warning record %s", 1)
    logging.getLogger("child").error("child error")
    try:
        raise ValueError("logged exception")
    except ValueError:
        log.exception("with traceback")
    sys.stderr.write("to stderr\n")
    return {"level": log.level, "handlers": len(log.handlers)}


def log_extra(event, context):
    logging.getLogger().warning("with extra", extra={"field": 7})
    return "ok"
