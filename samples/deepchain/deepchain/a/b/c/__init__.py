from deepchain.a.b.c import leaf  # noqa: F401
