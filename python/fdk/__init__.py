"""fdk-python's names over coldstart's FDK, so functions written for
fdk-python 0.1.117 (`import fdk`, `from fdk import response, context`,
`fdk.handle(handler)`) and their unit tests (`from fdk import fixtures`)
run unchanged.  Importing fdk sets up logging as fdk-python does."""

from coldstart.fdk import handle  # noqa: F401
from fdk import constants  # noqa: F401
from fdk import context  # noqa: F401
from fdk import log  # noqa: F401
from fdk import response  # noqa: F401

__all__ = ["constants", "context", "handle", "log", "response"]
