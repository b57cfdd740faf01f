"""fdk.context: fdk-python's InvokeContext, TracingContext and
context_from_format()."""

from coldstart.fdk.context import InvokeContext  # noqa: F401
from coldstart.fdk.context import TracingContext  # noqa: F401
from coldstart.fdk.context import context_from_format  # noqa: F401
from coldstart.fdk.context import generate_id  # noqa: F401

__all__ = ["InvokeContext", "TracingContext", "context_from_format",
           "generate_id"]
