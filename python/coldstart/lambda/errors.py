"""The runtime's own error kinds, as awslambdaric 4.0.1 names them in the
errorType of its error documents."""


class FaultException(Exception):
    MARSHAL_ERROR = "Runtime.MarshalError"
    UNMARSHAL_ERROR = "Runtime.UnmarshalError"
    USER_CODE_SYNTAX_ERROR = "Runtime.UserCodeSyntaxError"
    HANDLER_NOT_FOUND = "Runtime.HandlerNotFound"
    IMPORT_MODULE_ERROR = "Runtime.ImportModuleError"
    BUILT_IN_MODULE_CONFLICT = "Runtime.BuiltInModuleConflict"
    MALFORMED_HANDLER_NAME = "Runtime.MalformedHandlerName"
    BEFORE_SNAPSHOT_ERROR = "Runtime.BeforeSnapshotError"
    AFTER_RESTORE_ERROR = "Runtime.AfterRestoreError"
    LAMBDA_CONTEXT_UNMARSHAL_ERROR = "Runtime.LambdaContextUnmarshalError"

    def __init__(self, exception_type, msg, trace=None):
        Exception.__init__(self, msg)
        self.msg = msg
        self.exception_type = exception_type
        self.trace = trace


class RuntimeAPIError(Exception):
    """The Runtime API could not be reached or refused a request: the
    process ends (exit 1), as Lambda expects of a runtime that lost it.
    status is the HTTP status of a refused request (0 when there was no
    answer)."""

    def __init__(self, msg, status=0):
        Exception.__init__(self, msg)
        self.status = status
