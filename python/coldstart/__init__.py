"""coldstart's Python side: the lazy customer-code loader (coldstart.lazy)
and the Fn FDK entrypoint (coldstart.fdk).  Kept tiny on purpose: the
tracer's bootstrap imports this package into every traced process."""

import os
import sys

__version__ = "0.1.0"


def otel_wanted(environ):
    """Whether the OpenTelemetry SDK's variables ask for traces of cold
    starts (coldstart.otel): checked before that module is imported, so
    that without them nothing is."""
    return bool(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or
                environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


# With a start-up plan applied, the cyclic collector's first threshold is
# raised until the first response has been sent, from the start of the
# first call (coldstart-fdk) or from before the plan is applied
# (coldstart-lambda; docs/plan.md, "The collector during the first call"):
# a first call's
# imports allocate hundreds of thousands of objects that live on, and the
# young collections they trigger, each walking what the last ones kept,
# cost 7-10% of that CPU (bench/plan/gc_cost.py on the bench's functions)
# while finding next to nothing.  The threshold stays finite, so garbage in
# cycles is still collected; COLDSTART_PLAN_GC=0 turns this off.
GC_HOLD_THRESHOLD = 100000


def hold_gc(planned=False):
    """Raises the collector's first threshold while a plan is applied (or,
    with planned, about to be); returns (the thresholds before, the
    thresholds set) for release_gc(), or None when it did nothing."""
    if not planned:
        plan = sys.modules.get("coldstart.plan")
        if plan is None or not plan.installed():
            return None
    if os.environ.get("COLDSTART_PLAN_GC") == "0":
        return None
    import gc
    before = gc.get_threshold()
    if not gc.isenabled() or not before[0] or before[0] >= GC_HOLD_THRESHOLD:
        return None
    held = (GC_HOLD_THRESHOLD,) + tuple(before[1:])
    gc.set_threshold(*held)
    return before, held


def release_gc(state, responded=False):
    """Puts the thresholds back, unless the program set its own meanwhile.
    With responded (the first response went out), the objects the held
    start made first move to the oldest generation without being walked
    (coldstart.plan.gc_merge), instead of all in the young collection the
    next allocation would make."""
    import gc
    before, held = state
    if gc.get_threshold() == held:
        if responded:
            plan = sys.modules.get("coldstart.plan")
            merge = getattr(plan, "gc_merge", None)
            if merge is not None:
                merge()
        gc.set_threshold(*before)
