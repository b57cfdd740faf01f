# The plan benchmark's phase probe (bench/plan/phases.py), loaded through
# PYTHONPATH: where a function process spends its CPU.  It notes the thread
# CPU time when it loads (interpreter start-up, site included), then every
# import's CPU time (self and total, from importlib's _find_and_load) and
# every deferred body that coldstart.plan runs (its _load), with what forced
# it; PHASES_OUT receives the JSON at exit.  Diagnostics only: the
# benchmark's timed variants never load it.
import sys
import time

_T0 = time.thread_time_ns()
_P0 = time.process_time_ns()


def _probe():
    import os
    import _thread
    import opcode
    from importlib import _bootstrap

    out_path = os.environ.get("PHASES_OUT")
    if not out_path:
        return
    clock = time.thread_time_ns
    main = _thread.get_ident()
    stack = []
    rows = []
    state = {"install_ns": 0, "plan": None}

    def timed(kind, name, fn, *args):
        if _thread.get_ident() != main:
            return fn(*args)
        t0 = clock()
        fr = [name, 0]
        stack.append(fr)
        try:
            return fn(*args)
        finally:
            dt = clock() - t0
            stack.pop()
            if stack:
                stack[-1][1] += dt
            rows.append({"name": name, "kind": kind, "total": dt,
                         "self": dt - fr[1], "at": t0 - _T0,
                         "by": fr[2] if len(fr) > 2 else None})
            if kind == "import" and name == "coldstart.plan":
                patch_plan(sys.modules.get(name))

    orig_fl = _bootstrap._find_and_load

    def find_and_load(name, import_):
        return timed("import", name, orig_fl, name, import_)
    _bootstrap._find_and_load = find_and_load

    def forced_by():
        f = sys._getframe(2)
        plan_file = sys.modules["coldstart.plan"].__file__
        attr = None
        while f is not None and f.f_code.co_filename in (plan_file,
                                                          __file__):
            if attr is None and "attr" in f.f_code.co_varnames:
                attr = f.f_locals.get("attr")
            f = f.f_back
        if f is None:
            return "?"
        code = f.f_code
        where = f.f_globals.get("__name__", "?")
        if code.co_name == "<module>":
            op = code.co_code[f.f_lasti] if f.f_lasti >= 0 else None
            opname = opcode.opname[op] if op is not None else "?"
            return "body of %s (%s) %s" % (where, opname, attr)
        return "%s.%s" % (where, code.co_name)

    def patch_plan(plan):
        if plan is None or state["plan"] is not None:
            return
        state["plan"] = plan
        orig_load = plan._load

        def _load(mod):
            name = type(sys).__getattribute__(mod, "__dict__").get(
                "__name__")
            if name not in plan._pending or \
                    plan._pending[name].owner is not None:
                return orig_load(mod)
            by = forced_by()
            def run():
                stack[-1].append(by)
                return orig_load(mod)
            return timed("forced", name, run)
        plan._load = _load
        orig_install = plan.install

        def install(*a, **k):
            t0 = clock()
            try:
                return orig_install(*a, **k)
            finally:
                state["install_ns"] += clock() - t0
        plan.install = install

    def dump():
        plan = state["plan"]
        entries = {}
        fin = plan.installed() if plan is not None else None
        if fin is not None:
            entries = {n: fin.action(n) for n in fin.rows}
        for r in rows:
            r["action"] = entries.get(r["name"])
        data = {"startup_thread_ns": _T0, "startup_process_ns": _P0,
                "end_thread_ns": clock() - _T0, "install_ns":
                state["install_ns"], "rows": rows,
                "pending": plan.deferred() if plan is not None else [],
                "modules": len(sys.modules),
                # the string table's answers and misses (plan.py)
                "strings": list(plan._plancode[0].stats())
                if plan is not None and getattr(plan, "_plancode", None)
                else None}
        import json
        with open(out_path, "w") as f:
            json.dump(data, f)
    import atexit
    atexit.register(dump)
    # A process that leaves SIGTERM at its default still writes the data.
    import _signal

    def term(signum, frame):
        raise SystemExit(128 + signum)
    if _signal.getsignal(_signal.SIGTERM) == _signal.SIG_DFL:
        _signal.signal(_signal.SIGTERM, term)


_probe()
del _probe
