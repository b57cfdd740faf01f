from deepchain.a import b  # noqa: F401
