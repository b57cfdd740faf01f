"""fdk.headers: fdk-python's gateway header helpers."""

from coldstart.fdk.context import decap_headers  # noqa: F401
from coldstart.fdk.context import encap_headers  # noqa: F401
from coldstart.fdk.context import push_header  # noqa: F401

__all__ = ["decap_headers", "encap_headers", "push_header"]
