from deepchain.a.b import c  # noqa: F401
