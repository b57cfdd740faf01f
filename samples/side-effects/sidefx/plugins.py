"""Loaded with importlib.import_module(): -X importtime prints no row for it."""
import colorsys  # noqa: F401
