"""The context object a handler gets, as awslambdaric 4.0.1 builds it: the
same attributes, the same class names and reprs (a handler may print
them)."""

import os
import sys
import time


class LambdaContext(object):
    def __init__(self, invoke_id, client_context, cognito_identity,
                 epoch_deadline_time_in_ms, invoked_function_arn=None,
                 tenant_id=None):
        env = os.environ
        self.aws_request_id = invoke_id
        self.log_group_name = env.get("AWS_LAMBDA_LOG_GROUP_NAME")
        self.log_stream_name = env.get("AWS_LAMBDA_LOG_STREAM_NAME")
        self.function_name = env.get("AWS_LAMBDA_FUNCTION_NAME")
        self.memory_limit_in_mb = env.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
        self.function_version = env.get("AWS_LAMBDA_FUNCTION_VERSION")
        self.invoked_function_arn = invoked_function_arn
        self.tenant_id = tenant_id

        self.client_context = _from_dict(ClientContext, client_context)
        if self.client_context is not None:
            self.client_context.client = _from_dict(
                Client, self.client_context.client)

        self.identity = _from_dict(CognitoIdentity, {})
        if cognito_identity is not None:
            self.identity.cognito_identity_id = cognito_identity.get(
                "cognitoIdentityId")
            self.identity.cognito_identity_pool_id = cognito_identity.get(
                "cognitoIdentityPoolId")

        self._epoch_deadline_time_in_ms = epoch_deadline_time_in_ms

    def get_remaining_time_in_millis(self):
        delta = self._epoch_deadline_time_in_ms - int(time.time() * 1000)
        return delta if delta > 0 else 0

    def log(self, msg):
        logging = sys.modules.get("logging")
        if logging is not None:
            for handler in logging.getLogger().handlers:
                if hasattr(handler, "log_sink"):
                    handler.log_sink.log(str(msg))
                    return
        sys.stdout.write(str(msg))

    def __repr__(self):
        return (
            "%s([aws_request_id=%s,log_group_name=%s,log_stream_name=%s,"
            "function_name=%s,memory_limit_in_mb=%s,function_version=%s,"
            "invoked_function_arn=%s,client_context=%s,identity=%s,"
            "tenant_id=%s])" % (
                self.__class__.__name__, self.aws_request_id,
                self.log_group_name, self.log_stream_name, self.function_name,
                self.memory_limit_in_mb, self.function_version,
                self.invoked_function_arn, self.client_context,
                self.identity, self.tenant_id))


class CognitoIdentity(object):
    __slots__ = ["cognito_identity_id", "cognito_identity_pool_id"]

    def __repr__(self):
        return "%s([cognito_identity_id=%s,cognito_identity_pool_id=%s])" % (
            self.__class__.__name__, self.cognito_identity_id,
            self.cognito_identity_pool_id)


class Client(object):
    __slots__ = ["installation_id", "app_title", "app_version_name",
                 "app_version_code", "app_package_name"]

    def __repr__(self):
        return ("%s([installation_id=%s,app_title=%s,app_version_name=%s,"
                "app_version_code=%s,app_package_name=%s])" % (
                    self.__class__.__name__, self.installation_id,
                    self.app_title, self.app_version_name,
                    self.app_version_code, self.app_package_name))


class ClientContext(object):
    __slots__ = ["custom", "env", "client"]

    def __repr__(self):
        return "%s([custom=%s,env=%s,client=%s])" % (
            self.__class__.__name__, self.custom, self.env, self.client)


def _from_dict(cls, d):
    if d is None:
        return None
    obj = cls()
    for field in cls.__slots__:
        setattr(obj, field, d.get(field, None))
    return obj
