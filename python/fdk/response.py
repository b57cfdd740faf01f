"""fdk.response: fdk-python's Response, served by coldstart-fdk."""

from coldstart.fdk.response import Response  # noqa: F401

__all__ = ["Response"]
