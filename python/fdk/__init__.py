"""fdk-python's names over coldstart's FDK, so functions written for
fdk-python (`import fdk`, `from fdk import response, context`,
`fdk.handle(handler)`) run unchanged under coldstart-fdk."""

from coldstart.fdk import handle  # noqa: F401
from fdk import context  # noqa: F401
from fdk import response  # noqa: F401

__all__ = ["context", "handle", "response"]
