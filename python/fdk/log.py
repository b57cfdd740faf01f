"""fdk.log: fdk-python's logging set-up (done when this module is
imported) and its helpers."""

from coldstart.fdk.logs import debug  # noqa: F401
from coldstart.fdk.logs import get_logger  # noqa: F401
from coldstart.fdk.logs import get_request_log  # noqa: F401
from coldstart.fdk.logs import log  # noqa: F401
from coldstart.fdk.logs import set_request_id  # noqa: F401
from coldstart.fdk.logs import setup as _setup

_setup()
