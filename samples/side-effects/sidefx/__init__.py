"""Imports every side-effect module of the sample."""
import importlib

from . import net, proc, nap, writer

plugins = importlib.import_module("sidefx.plugins")

try:
    from . import broken  # noqa: F401
except RuntimeError:
    broken = None
