"""For bench/lambda_gc_at_answer.py only (on PYTHONPATH before the
runtime's modules): wraps coldstart.release_gc so that, at the first
answer, the young collection the held start would make is made and timed
first (gc.collect(0): its CPU time and the garbage it found, written to
$GC_AT_ANSWER_OUT), then the runtime's own release runs."""
import os
import sys


def _wrap():
    import coldstart
    orig = coldstart.release_gc

    def release_gc(state, responded=False):
        if responded:
            import gc
            import time
            t = time.process_time()
            found = gc.collect(0)
            t = time.process_time() - t
            with open(os.environ["GC_AT_ANSWER_OUT"], "w") as f:
                f.write("%.3f %d\n" % (t * 1000, found))
        return orig(state, responded)

    coldstart.release_gc = release_gc


def _chain():
    # The sitecustomize further down the path (Debian's) runs as site
    # would have run it.
    from importlib.machinery import PathFinder
    here = os.path.dirname(os.path.abspath(__file__))
    spec = PathFinder.find_spec("sitecustomize", [
        p for p in sys.path if os.path.abspath(p or ".") != here])
    if spec is not None and spec.loader is not None:
        exec(spec.loader.get_code("sitecustomize"), {"__name__": "sitecustomize"})


if os.environ.get("GC_AT_ANSWER_OUT"):
    _wrap()
_chain()
