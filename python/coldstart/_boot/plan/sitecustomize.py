# coldstart's plan bootstrap.  With this directory on PYTHONPATH, every
# Python process records a start-up plan (COLDSTART_PLAN_RECORD, for
# `coldstart plan`) or applies one (COLDSTART_PLAN=plan.json, see
# docs/plan.md), takes this directory off sys.path again, then hands over
# to the sitecustomize that would have run without it (the next one on
# sys.path), so the target's sys.path and sitecustomize are its own.
# Python 2 and 3.7 and older are left alone.
import sys


def _boot():
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    # coldstart's python directory: above this file's, unless it runs from
    # the copy in coldstart's bytecode cache (docs/trace-format.md).
    home = os.environ.get("COLDSTART_PYDIR")
    pydir = os.path.dirname(home) if home else os.path.dirname(os.path.dirname(os.path.dirname(here)))

    def mine(p):
        try:
            return bool(p) and os.path.abspath(p) == here
        except Exception:
            return False
    removed = [p for p in sys.path if mine(p)]
    if removed:
        sys.path[:] = [p for p in sys.path if not mine(p)]
        for p in removed:
            sys.path_importer_cache.pop(p, None)
    env = os.environ
    if sys.version_info < (3, 8):
        out = env.get("COLDSTART_PLAN_RECORD")
        if out:
            # Tell `coldstart plan` at once instead of letting it wait.
            try:
                f = open(out, "w")
                f.write('{"format": "coldstart-plan-error", "error": '
                        '"Python %d.%d cannot be planned: 3.8 or newer is '
                        'needed"}\n' % sys.version_info[:2])
                f.close()
            except (IOError, OSError):
                pass
        return
    if not (env.get("COLDSTART_PLAN_RECORD") or env.get("COLDSTART_PLAN")):
        return
    added = pydir not in sys.path
    if added:
        sys.path.insert(0, pydir)
    try:
        if env.get("COLDSTART_PLAN_RECORD"):
            from coldstart import plan_record
            plan_record.start_from_environ(env)
        else:
            import coldstart
            if coldstart.otel_wanted(env):
                # A trace of this start, sent at coldstart.plan.responded()
                # or the exit (docs/fdk.md, "Cold-start traces").
                from coldstart import otel
                otel.begin(env)
            from coldstart import plan
            plan.install_from_environ(env)
    except Exception as e:
        sys.stderr.write("coldstart plan: bootstrap failed (%s: %s); "
                         "running without a plan\n" % (type(e).__name__, e))
    finally:
        if added:
            try:
                sys.path.remove(pydir)
            except ValueError:
                pass
            sys.path_importer_cache.pop(pydir, None)


_boot()
del _boot

_coldstart_plan_self = sys.modules.pop("sitecustomize", None)
try:
    import sitecustomize  # noqa: F401  the next one on sys.path
except ImportError as _exc:
    if sys.version_info[0] >= 3 and _exc.name != "sitecustomize":
        raise
    sys.modules["sitecustomize"] = _coldstart_plan_self
    del _exc
del _coldstart_plan_self
