"""Top of a deliberately deep import chain."""
from deepchain import a  # noqa: F401

VERSION = "1.0"
