"""python3 -m coldstart.lambda [--warm lazy|eager] [HANDLER]: the runtime,
as `python3 -m awslambdaric HANDLER` is run."""

import os
import sys

from . import EXIT_FAILURE, EXIT_USAGE, VERSION

USAGE = """usage: coldstart-lambda [--warm lazy|eager] [--plan FILE]
                        [--serve-events FILE]... [HANDLER]

Serves AWS Lambda invocations from the Runtime API at $AWS_LAMBDA_RUNTIME_API
by calling HANDLER (module.function, as awslambdaric takes it; default
$_HANDLER).  The module is imported on the first event (--warm lazy, the
default) or before the first event (--warm eager, awslambdaric's way);
COLDSTART_LAMBDA_WARM sets the mode when --warm is not given.
COLDSTART_LAMBDA_REPORT=1 prints a REPORT line of init and the first call
on stderr.

  --warm MODE   lazy or eager
  --plan FILE   apply a start-up plan (coldstart plan --lambda) during
                init, before the handler's module loads; COLDSTART_PLAN
                names one too
  --serve-events FILE
                serve a Runtime API of its own giving FILE as an event
                (repeat for more, in order), print what is posted and
                exit after the last; for coldstart plan --lambda
  --version     print the version and exit
  --help        print this help and exit
"""


def _fail(msg, status):
    sys.stderr.write("coldstart-lambda: %s\n" % msg)
    sys.stderr.flush()
    return status


def parse_args(argv, env):
    """(handler, warm, plan, event files) from the arguments and the
    environment, or an exit status after printing what was wrong (or the
    help)."""
    warm = env.get("COLDSTART_LAMBDA_WARM") or None
    plan = env.get("COLDSTART_PLAN") or None
    events = []
    handler = None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a in ("-h", "--help"):
            sys.stdout.write(USAGE)
            return 0
        if a == "--version":
            sys.stdout.write("coldstart-lambda %s\n" % VERSION)
            return 0
        name, eq, value = a.partition("=")
        if name in ("--warm", "--plan", "--serve-events"):
            if not eq:
                if not args:
                    return _fail("%s needs a value" % name, EXIT_USAGE)
                value = args.pop(0)
            if name == "--warm":
                warm = value
            elif name == "--plan":
                plan = value
            else:
                events.append(value)
            continue
        if a == "--":
            if args:
                handler = args.pop(0)
            break
        if a.startswith("-") and len(a) > 1:
            return _fail("unknown option %r (see --help)" % a, EXIT_USAGE)
        handler = a
        break
    if args:
        return _fail("unexpected argument %r after the handler" % args[0],
                     EXIT_USAGE)
    if warm is None:
        warm = "lazy"
    if warm not in ("lazy", "eager"):
        return _fail("warm mode %r is neither lazy nor eager" % warm,
                     EXIT_USAGE)
    if handler is None:
        handler = env.get("_HANDLER")
    if not handler:
        return _fail("no handler: give module.function or set _HANDLER",
                     EXIT_USAGE)
    for f in events:
        if not os.path.isfile(f):
            return _fail("no such event file %r" % f, EXIT_USAGE)
    return handler, warm, plan, events


def main(argv=None):
    env = os.environ
    parsed = parse_args(sys.argv[1:] if argv is None else argv, env)
    if not isinstance(parsed, tuple):
        return parsed
    handler, warm, plan, events = parsed
    if events:
        from .local import serve
        serve(events)
    address = env.get("AWS_LAMBDA_RUNTIME_API")
    if not address:
        return _fail("AWS_LAMBDA_RUNTIME_API is not set", EXIT_USAGE)
    if env.get("AWS_LAMBDA_MAX_CONCURRENCY") is not None:
        return _fail("AWS_LAMBDA_MAX_CONCURRENCY (Lambda Managed Instances) "
                     "is not supported", EXIT_USAGE)
    from .api import RuntimeAPI
    from .bootstrap import run
    from .errors import RuntimeAPIError
    report = None
    if env.get("COLDSTART_LAMBDA_REPORT", "") not in ("", "0"):
        from .report import Report
        report = Report()
    try:
        api = RuntimeAPI(address)
        run(handler, api, warm, report, plan=plan,
            max_events=len(events) or None)
    except RuntimeAPIError as e:
        return _fail(str(e), EXIT_FAILURE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
