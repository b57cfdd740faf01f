"""Raises at import; the package catches it."""
raise RuntimeError("sidefx.broken refuses to load")
