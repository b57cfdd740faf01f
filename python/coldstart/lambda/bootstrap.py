"""The runtime: init, the invocation loop, and how a handler is found and
loaded.  Named bootstrap.py as awslambdaric's is: error documents drop the
leading traceback frames whose file ends in /bootstrap.py, and with the
same name the same frames go (a stack trace shows the same lines under
either runtime).

Init (before the first GET next) checks without running customer code what
awslambdaric's import would reject: a malformed handler, a built-in module
name, a module that the path finder cannot find, a syntax error in it, a
handler name it never binds.  Any of these, or a module it cannot analyse
in that way, is imported right away as awslambdaric does, so the error is
the same document posted to /runtime/init/error.  Otherwise the module's
code object (compiled now, read from its .pyc, or under a start-up plan
taken from the plan's code archive) is kept and executed by the import
system on the first event, before that event is handled.
"""

import os
import sys

from . import logs
from .errors import FaultException, RuntimeAPIError

# The import system's own modules (importlib.machinery's classes): the
# importlib package would import warnings before the first event when the
# runtime is started as a script, not by `python3 -m`.
_bootstrap = sys.modules["_frozen_importlib"]
_external = sys.modules["_frozen_importlib_external"]

_GLOBAL_AWS_REQUEST_ID = None
_GLOBAL_TENANT_ID = None

WARM_LAZY = "lazy"
WARM_EAGER = "eager"
INIT_TYPE_SNAP_START = "snap-start"
PREVIEW_RUNTIME_ENVS = {"AWS_Lambda_python3.15"}
MAX_XRAY_HEADER = 1024 * 1024

# Names whose presence in a module's code means it may bind any global.
_DYNAMIC_NAMES = {"globals", "vars", "setattr", "__dict__", "exec", "eval",
                  "__getattr__", "modules", "locals", "__builtins__",
                  "__import__", "import_module", "update", "setdefault"}


def _request_ids():
    return _GLOBAL_AWS_REQUEST_ID, _GLOBAL_TENANT_ID


def make_error(error_message, error_type, stack_trace, invoke_id=None):
    return {
        "errorMessage": error_message if error_message else "",
        "errorType": error_type if error_type else "",
        "requestId": invoke_id if invoke_id is not None else "",
        "stackTrace": stack_trace if stack_trace else [],
    }


def extract_traceback(tb):
    import traceback
    return [(f.filename, f.lineno, f.name, f.line)
            for f in traceback.extract_tb(tb)]


def _user_frames(tb):
    tuples = extract_traceback(tb)
    for i in range(len(tuples)):
        if "/bootstrap.py" not in tuples[i][0]:
            return tuples[i:]
    return tuples


def build_fault_result(exc_info, msg):
    import traceback
    etype, value, tb = exc_info
    return make_error(msg if msg else str(value), etype.__name__,
                      traceback.format_list(_user_frames(tb)))


def make_xray_fault(ex_type, ex_msg, working_dir, tb_tuples):
    stack = []
    files = set()
    for tb_file, tb_line, tb_method, _ in tb_tuples:
        stack.append({"label": tb_method, "path": tb_file, "line": tb_line})
        files.add(tb_file)
    return {"working_directory": working_dir,
            "exceptions": [{"message": ex_msg, "type": ex_type,
                            "stack": stack}],
            "paths": list(files)}


def split_handler(handler):
    try:
        modname, fname = handler.rsplit(".", 1)
    except ValueError as e:
        raise FaultException(FaultException.MALFORMED_HANDLER_NAME,
                             "Bad handler '{}': {}".format(handler, str(e)))
    return modname, fname


def _get_handler(handler):
    """awslambdaric's handler lookup: the import and getattr, with its
    error documents."""
    import importlib
    modname, fname = split_handler(handler)
    try:
        if modname.split(".")[0] in sys.builtin_module_names:
            raise FaultException(
                FaultException.BUILT_IN_MODULE_CONFLICT,
                "Cannot use built-in module {} as a handler module".format(
                    modname))
        m = importlib.import_module(modname.replace("/", "."))
    except ImportError as e:
        raise FaultException(
            FaultException.IMPORT_MODULE_ERROR,
            "Unable to import module '{}': {}".format(modname, str(e)))
    except SyntaxError as e:
        trace = ['  File "%s" Line %s\n    %s' % (e.filename, e.lineno,
                                                  e.text)]
        raise FaultException(
            FaultException.USER_CODE_SYNTAX_ERROR,
            "Syntax error in module '{}': {}".format(modname, str(e)), trace)
    try:
        return getattr(m, fname)
    except AttributeError:
        raise FaultException(
            FaultException.HANDLER_NOT_FOUND,
            "Handler '{}' missing on module '{}'".format(fname, modname),
            None)


def _code_names(code):
    names = set()
    stack = [code]
    star = False
    while stack:
        co = stack.pop()
        names.update(co.co_names)
        for c in co.co_consts:
            if hasattr(c, "co_names"):
                stack.append(c)
            elif c == ("*",):
                star = True
    return names, star


def may_bind(code, name):
    """False only when code (a module's, with its functions and classes)
    certainly never binds the global name: no mention of it, no star
    import, nothing that writes globals by other means."""
    names, star = _code_names(code)
    return star or name in names or not _DYNAMIC_NAMES.isdisjoint(names)


class Prepared(object):
    """A handler found at init: its module's import is deferred."""

    __slots__ = ("handler", "name", "spec", "code", "loader_type")

    def __init__(self, handler, name, spec, code):
        self.handler = handler
        self.name = name
        self.spec = spec
        self.code = code
        self.loader_type = type(spec.loader) if spec is not None else None


def _claimed_elsewhere(name):
    """True when a finder on sys.meta_path other than Python's own
    (site's hooks, an editable install's) would give name: the import is
    then left to them, from the start."""
    std = (_bootstrap.BuiltinImporter, _bootstrap.FrozenImporter,
           _external.PathFinder)
    planner = sys.modules.get("coldstart.plan")
    plan_finder = planner.installed() if planner is not None else None
    for f in sys.meta_path:
        # (A start-up plan's finder answers a module only from the file the
        # path finder would find.)
        if f in std or isinstance(f, std) or f is plan_finder:
            continue
        find = getattr(f, "find_spec", None)
        if find is None or find(name, None) is not None:
            return True
    return False


def prepare(handler):
    """Init's checks.  Returns a Prepared for a deferred import, or None
    when the module is to be imported now (it looks missing or broken,
    lacks the handler, or cannot be analysed).  Raises FaultException for a
    malformed handler or a built-in module name, as awslambdaric does."""
    FrozenImporter = _bootstrap.FrozenImporter
    PathFinder = _external.PathFinder
    SourceFileLoader = _external.SourceFileLoader
    SourcelessFileLoader = _external.SourcelessFileLoader
    modname, fname = split_handler(handler)
    if modname.split(".")[0] in sys.builtin_module_names:
        return None
    name = modname.replace("/", ".")
    if name in sys.modules:
        return Prepared(handler, name, None, None)
    parts = name.split(".")
    if _claimed_elsewhere(parts[0]):
        return None
    spec = None
    path = None
    try:
        for i in range(len(parts)):
            sub = ".".join(parts[:i + 1])
            if i == 0 and FrozenImporter.find_spec(sub) is not None:
                return None
            spec = PathFinder.find_spec(sub, path)
            if spec is None:
                return None
            path = spec.submodule_search_locations
            if i < len(parts) - 1 and path is None:
                return None
        loader = spec.loader
        if not isinstance(loader, (SourceFileLoader, SourcelessFileLoader)):
            return Prepared(handler, name, None, None)
        planner = sys.modules.get("coldstart.plan")
        archived = planner.archived_loader(name, spec.origin) if \
            planner is not None and type(loader) is SourceFileLoader \
            else None
        # Under a plan that recorded the file, its code from the plan's
        # archive: no compiling (the compiler's first use in a process
        # builds all of its AST types, more than a small handler's import).
        code = (archived or loader).get_code(name)
    except Exception:
        return None
    if code is None or not may_bind(code, fname):
        return None
    if len(parts) > 1:
        # The parent packages run first and may change what the name
        # means: keep the check, let the import system find it again.
        return Prepared(handler, name, None, None)
    return Prepared(handler, name, spec, code)


class _OneShotFinder(object):
    """Gives the spec found at init, once, with a loader whose get_code()
    returns the code object compiled then (the import system executes it
    exactly as it would the file's)."""

    def __init__(self, prepared):
        class StashLoader(prepared.loader_type):
            # The file's own code (compiled or read at init): a plan records
            # the module as its base loader's (plan_record._kind).
            coldstart_plan_kind = "bytecode" if issubclass(
                prepared.loader_type, _external.SourcelessFileLoader) \
                else "source"

            def get_code(self, fullname, _code=[prepared.code]):
                if fullname == prepared.name and _code:
                    return _code.pop()
                return super().get_code(fullname)

        self.name = prepared.name
        self.spec = prepared.spec
        self.spec.loader = StashLoader(prepared.name, prepared.spec.origin)

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        self.remove()
        return self.spec

    def remove(self):
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass


def _load(prepared):
    finder = None
    if prepared.code is not None and prepared.name not in sys.modules:
        finder = _OneShotFinder(prepared)
        sys.meta_path.insert(0, finder)
    try:
        return _get_handler(prepared.handler)
    finally:
        if finder is not None:
            finder.remove()


def _preview_warning_due():
    return (not os.environ.get("LAMBDA_DISABLE_PREVIEW_WARN", "") and
            os.environ.get("AWS_EXECUTION_ENV", "") in PREVIEW_RUNTIME_ENVS)


def _log_preview_runtime_warning():
    if _preview_warning_due():
        import logging
        link = "https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtimes.html"
        if os.environ.get("AWS_REGION", "").startswith("cn-"):
            link = ("https://docs.amazonaws.cn/lambda/latest/dg/"
                    "lambda-runtimes.html")
        logging.warning(
            "LAMBDA_WARNING: This is a preview runtime version and should "
            "not be used for production workloads. For further information "
            "and to provide feedback, see %s\r" % link)


class _Logging(object):
    def __init__(self, sink):
        self.sink = sink
        self.done = False

    def setup(self):
        """Sets up logging as awslambdaric does, now or, under a start-up
        plan when nothing has imported logging yet, right after logging's
        body at its first use (coldstart.plan.defer_then): a function that
        never logs does not import logging, traceback and string (as
        coldstart-fdk does), and one that logs sees the same handler."""
        if not self.done:
            self.done = True
            planner = sys.modules.get("coldstart.plan")
            if planner is not None and planner.installed() is not None \
                    and not _preview_warning_due() \
                    and planner.defer_then("logging", self._configure):
                return
            self._configure()

    def _configure(self):
        logs.setup_logging(self.sink, _request_ids)
        _log_preview_runtime_warning()


def _init_failed(error_result, log_setup):
    import logging
    log_setup.setup()
    logging.warning(logs.UNHANDLED_WARNING)
    logs.log_error(error_result, log_setup.sink)


def _parse_json_header(header, name):
    from .marshalling import loads
    try:
        return loads(header)
    except Exception as e:
        raise FaultException(
            FaultException.LAMBDA_CONTEXT_UNMARSHAL_ERROR,
            "Unable to parse {} JSON: {}".format(name, str(e)), None)


def _create_context(headers, invoke_id, deadline_ms):
    from .context import LambdaContext
    client_context = None
    cc = headers.get("lambda-runtime-client-context")
    if cc:
        client_context = _parse_json_header(cc, "Client Context")
    cognito = None
    ci = headers.get("lambda-runtime-cognito-identity")
    if ci:
        cognito = _parse_json_header(ci, "Cognito Identity")
    return LambdaContext(invoke_id, client_context, cognito, deadline_ms,
                         headers.get("lambda-runtime-invoked-function-arn",
                                     ""),
                         headers.get("lambda-runtime-aws-tenant-id") or None)


def _deadline_ms(headers):
    v = headers.get("lambda-runtime-deadline-ms", "")
    digits = ""
    for c in v.strip():
        if not c.isdigit():
            break
        digits += c
    return int(digits) if digits else 0


def handle_event_request(api, request_handler, invoke_id, inv, log_sink):
    from . import marshalling
    error_result = None
    try:
        headers = inv.headers
        lambda_context = _create_context(headers, invoke_id,
                                         _deadline_ms(headers))
        event = marshalling.unmarshal_request(
            inv.body, headers.get("content-type") or None)
        response = request_handler(event, lambda_context)
        result, content_type = marshalling.marshal_response(response)
    except FaultException as e:
        xray_fault = make_xray_fault("LambdaValidationError", e.msg,
                                     os.getcwd(), [])
        error_result = make_error(e.msg, e.exception_type, e.trace, invoke_id)
    except Exception:
        import traceback
        etype, value, tb = sys.exc_info()
        tb_tuples = _user_frames(tb)
        xray_fault = make_xray_fault(etype.__name__, str(value), os.getcwd(),
                                     tb_tuples)
        error_result = make_error(str(value), etype.__name__,
                                  traceback.format_list(tb_tuples), invoke_id)
        del tb
    if error_result is not None:
        logs.log_error(error_result, log_sink)
        _post_error(api, invoke_id, error_result, xray_fault)
    else:
        try:
            api.post("/invocation/%s/response" % invoke_id, result,
                     content_type)
        except RuntimeAPIError as e:
            # Lambda refuses a response over its size limit (413) and has
            # answered the caller already; awslambdaric dies here, which
            # costs the next call a cold start.  Say so and go on.
            if e.status != 413:
                raise
            logs.log_error(make_error(
                "the Runtime API refused the response (%d bytes): %s" % (
                    len(result), e), "coldstart-lambda.ResponseRefused",
                None, invoke_id), log_sink)


def _post_error(api, invoke_id, error_result, xray_fault):
    from .marshalling import to_json
    body = to_json(error_result).encode("utf-8", "surrogatepass")
    xray = to_json(xray_fault) if xray_fault is not None else ""
    if len(xray.encode("utf-8", "surrogatepass")) >= MAX_XRAY_HEADER:
        xray = ""
    extra = [("Lambda-Runtime-Function-Error-Type",
              _header_safe(error_result.get("errorType", "")))]
    if xray:
        extra.append(("Lambda-Runtime-Function-XRay-Error-Cause",
                      _header_safe(xray)))
    api.post("/invocation/%s/error" % invoke_id, body, "application/json",
             extra)


def _header_safe(value):
    # A header value goes out as latin-1 on one line.
    return value.encode("ascii", "backslashreplace").decode("ascii") \
        .replace("\r", " ").replace("\n", " ")


def _post_init_error(api, error_result, error_type=None):
    from .marshalling import to_json
    body = to_json(error_result).encode("utf-8", "surrogatepass")
    api.post("/init/error", body, "application/json",
             [("Lambda-Runtime-Function-Error-Type",
               _header_safe(error_type or error_result["errorType"]))])


def _update_xray_env(trace_id):
    if trace_id:
        os.environ["_X_AMZN_TRACE_ID"] = trace_id
    else:
        os.environ.pop("_X_AMZN_TRACE_ID", None)


def _on_init_complete(api, log_setup):
    """SnapStart: the before-snapshot hooks, restore/next, the after-restore
    hooks (from snapshot_restore_py when it is installed)."""
    try:
        from snapshot_restore_py import get_before_snapshot
    except ImportError:
        get_before_snapshot = None
    try:
        if get_before_snapshot is not None:
            callables = get_before_snapshot()
            while callables:
                func, args, kwargs = callables.pop()
                func(*args, **kwargs)
        r = api.request("GET", "/2018-06-01/runtime/restore/next")
        if r.status != 200:
            raise RuntimeAPIError("GET restore/next answered %d" % r.status)
    except Exception:
        error_result = build_fault_result(sys.exc_info(), None)
        logs.log_error(error_result, log_setup.sink)
        _post_init_error(api, error_result,
                         FaultException.BEFORE_SNAPSHOT_ERROR)
        sys.exit(64)
    try:
        if get_before_snapshot is not None:
            from snapshot_restore_py import get_after_restore
            for func, args, kwargs in get_after_restore():
                func(*args, **kwargs)
    except Exception:
        from .marshalling import to_json
        error_result = build_fault_result(sys.exc_info(), None)
        logs.log_error(error_result, log_setup.sink)
        api.post("/restore/error",
                 to_json(error_result).encode("utf-8", "surrogatepass"),
                 "application/json",
                 [("Lambda-Runtime-Function-Error-Type",
                   FaultException.AFTER_RESTORE_ERROR)])
        sys.exit(65)


# What coldstart.hold_gc() returned when the plan was applied: the
# collector's first threshold stays raised until the first response.
_gc_held = []


def _apply_plan(plan):
    """Installs a start-up plan (docs/plan.md) before the handler's module
    loads, the collector held from before it until the first response
    (coldstart.hold_gc, as coldstart-fdk does); a plan that cannot be used
    is said on stderr and the module loads without it."""
    if plan:
        import coldstart
        held = coldstart.hold_gc(planned=True)
        from coldstart import plan as planner
        if planner.install(plan, warm="off") is None:
            if held is not None:
                coldstart.release_gc(held)
        elif held is not None:
            _gc_held.append(held)


def _release_gc():
    # At the first answer (a response, or an error document): the objects
    # of the held start go to the oldest generation unwalked.
    if _gc_held:
        import coldstart
        coldstart.release_gc(_gc_held.pop(), responded=True)


def _responded():
    _release_gc()
    planner = sys.modules.get("coldstart.plan")
    if planner is not None:
        planner.responded()


def run(handler, api, warm, report=None, plan=None, max_events=None):
    """Serves invocations until the process is ended; exits 1 after an init
    error posted to init/error.  A deferred import that fails answers the
    event that brought it with the init error's document and is tried
    again on the next event."""
    global _GLOBAL_AWS_REQUEST_ID, _GLOBAL_TENANT_ID
    sys.stdout = logs.Unbuffered(sys.stdout)
    sys.stderr = logs.Unbuffered(sys.stderr)
    snap_start = (os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE")
                  == INIT_TYPE_SNAP_START)
    if snap_start:
        warm = WARM_EAGER
    with logs.create_log_sink() as log_sink:
        log_setup = _Logging(log_sink)
        request_handler = None
        prepared = None
        error_result = None
        try:
            if warm != WARM_EAGER:
                # Under a plan, applied during init: prepare() takes the
                # handler's code from the plan's archive.
                _apply_plan(plan)
                plan = None
                prepared = prepare(handler)
            if prepared is None:
                _apply_plan(plan)
                plan = None
                log_setup.setup()
                request_handler = _get_handler(handler)
        except FaultException as e:
            error_result = make_error(e.msg, e.exception_type, e.trace)
        except Exception:
            error_result = build_fault_result(sys.exc_info(), None)
        if error_result is not None:
            _init_failed(error_result, log_setup)
            _post_init_error(api, error_result)
            sys.exit(1)
        if snap_start:
            _on_init_complete(api, log_setup)

        debug_modules = os.environ.get("COLDSTART_LAMBDA_DEBUG_MODULES")
        handled = 0
        while True:
            if report is not None:
                report.init_done()
            if debug_modules:
                # What init loaded, for tests/e2e/test_lambda.py: written
                # just before the first GET next, nothing imported between.
                with open(debug_modules, "w") as f:
                    f.write("\n".join(sorted(sys.modules)) + "\n")
                debug_modules = None
            inv = api.next()
            if report is not None:
                report.arrived()
            invoke_id = inv.headers["lambda-runtime-aws-request-id"]
            if request_handler is None:
                try:
                    _apply_plan(plan)
                    plan = None
                    log_setup.setup()
                    request_handler = _load(prepared)
                except FaultException as e:
                    error_result = make_error(e.msg, e.exception_type,
                                              e.trace)
                except Exception:
                    error_result = build_fault_result(sys.exc_info(), None)
                if error_result is not None:
                    # The event's answer is the document awslambdaric
                    # posts to init/error; the next event tries the import
                    # again, as a new init would.
                    _init_failed(error_result, log_setup)
                    _post_error(api, invoke_id, error_result, None)
                    error_result = None
                    if not handled:
                        _release_gc()
                    handled += 1
                    if max_events is not None and handled >= max_events:
                        sys.exit(1)
                    continue
            _GLOBAL_AWS_REQUEST_ID = invoke_id
            _GLOBAL_TENANT_ID = (inv.headers.get("lambda-runtime-aws-tenant-id")
                                 or None)
            _update_xray_env(inv.headers.get("lambda-runtime-trace-id"))
            handle_event_request(api, request_handler, invoke_id, inv,
                                 log_sink)
            if report is not None:
                report.invoked(invoke_id, log_sink)
                report = None
            if not handled:
                _responded()
            handled += 1
            if max_events is not None and handled >= max_events:
                return
