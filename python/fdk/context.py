"""fdk.context: fdk-python's InvokeContext and TracingContext."""

from coldstart.fdk.context import InvokeContext  # noqa: F401
from coldstart.fdk.context import TracingContext  # noqa: F401

__all__ = ["InvokeContext", "TracingContext"]
