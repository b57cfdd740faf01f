"""coldstart-fdk with a start-up plan holds the cyclic collector back during
the first call (docs/plan.md, "The collector"): the first threshold is
GC_HOLD_THRESHOLD from the first request until its response is sent, then
what it was; a program that sets its own thresholds keeps them; without a
plan, or with COLDSTART_PLAN_GC=0, nothing changes."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import DEBIAN_PYTHON, ROOT, clean_env
from test_plan import _fdk_calls, _fn_call, plan_cmd, write

sys.path.insert(0, os.path.join(ROOT, "python"))
from coldstart.fdk.loop import GC_HOLD_THRESHOLD  # noqa: E402

pytestmark = pytest.mark.skipif(not os.path.exists(DEBIAN_PYTHON),
                                reason="Debian's python3 is not installed")

FUNC = """
    import gc, json
    from fdk import response

    def handler(ctx, data=None):
        req = json.loads(data.getvalue() or b"{}")
        seen = list(gc.get_threshold())
        if req.get("set"):
            gc.set_threshold(*req["set"])
        # 5000 new containers: several collections at the usual first
        # threshold, none at the held one unless the count was near it.
        runs = []
        cb = lambda phase, info: runs.append(phase) if phase == "start" else None
        young = gc.get_count()[0]
        gc.callbacks.append(cb)
        keep = [[] for i in range(5000)]
        gc.callbacks.remove(cb)
        return response.Response(ctx, response_data=json.dumps(
            {"threshold": seen, "young": young, "collections": len(runs)}))
"""


def _planned(prefix, func):
    """A directory holding func as func.py and its plan p.json, made with
    the one-liner; removed after the test."""
    d = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    write(d, "func.py", func)
    write(d, "req.json", "{}")
    p = plan_cmd("--python", DEBIAN_PYTHON, "--fn", "func.py", "--request",
                 "req.json", "-o", os.path.join(d, "p.json"), cwd=d)
    assert p.returncode == 0, p.stderr
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def planned():
    yield from _planned("plangc", FUNC)


def calls(workdir, how, bodies, extra_env=()):
    out, err = _fdk_calls(workdir, how, [json.dumps(b).encode() for b in bodies], extra_env)
    assert "coldstart plan:" not in err, err
    return out


def default_threshold():
    return json.loads(subprocess.run(
        [DEBIAN_PYTHON, "-c", "import gc, json; print(json.dumps(gc.get_threshold()))"],
        capture_output=True, text=True, check=True).stdout)


def test_held_during_the_first_call_then_as_before(planned):
    usual = default_threshold()
    first, second = calls(planned, ["--plan", "p.json"], [{}, {}])
    assert first["threshold"] == [GC_HOLD_THRESHOLD] + usual[1:]
    assert second["threshold"] == usual
    assert first["young"] < GC_HOLD_THRESHOLD - 5000 and first["collections"] == 0, first
    assert second["collections"] >= 5000 // usual[0], second


# Loaded through PYTHONPATH: notes every collection that ran once
# coldstart.plan was imported (the first call has begun then) and the
# threshold it ran at; the handler reads the list.
COUNTER = """
    import gc, sys
    RUNS = []

    def _note(phase, info):
        if phase == "start" and "coldstart.plan" in sys.modules:
            RUNS.append(gc.get_threshold()[0])
    gc.callbacks.append(_note)
"""


def test_held_from_the_first_connection_in_lazy_mode():
    # The plan, the server's request loop and the function load for the
    # first call, after the first connection: the collector waits for them
    # too (no collection at the usual threshold before the response).
    d = tempfile.mkdtemp(prefix="plangcfirst", dir="/tmp")
    try:
        write(d, "probe/sitecustomize.py", COUNTER)
        write(d, "func.py", FUNC.replace(
            '"collections": len(runs)}', '"collections": len(runs), "before": '
            'getattr(__import__("sitecustomize"), "RUNS", None)}'))
        write(d, "req.json", "{}")
        p = plan_cmd("--python", DEBIAN_PYTHON, "--fn", "func.py", "--request",
                     "req.json", "-o", os.path.join(d, "p.json"), cwd=d)
        assert p.returncode == 0, p.stderr
        out, err = _fdk_calls(d, ["--plan", "p.json"], [b"{}"],
                              {"PYTHONPATH": os.path.join(d, "probe")})
        assert "coldstart plan:" not in err, err
        assert out[0]["threshold"][0] == GC_HOLD_THRESHOLD
        assert out[0]["before"] == [], out[0]
        # Switched off: the same first call collects at the usual threshold.
        out, err = _fdk_calls(d, ["--plan", "p.json"], [b"{}"],
                              {"PYTHONPATH": os.path.join(d, "probe"),
                               "COLDSTART_PLAN_GC": "0"})
        assert out[0]["before"] and GC_HOLD_THRESHOLD not in out[0]["before"]
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_without_a_plan_or_turned_off_nothing_changes(planned):
    usual = default_threshold()
    for how, env in (([], {}), (["--plan", "p.json"], {"COLDSTART_PLAN_GC": "0"})):
        first, second = calls(planned, how, [{}, {}], env)
        assert first["threshold"] == second["threshold"] == usual, (how, env)


def test_a_program_that_sets_its_own_thresholds_keeps_them(planned):
    first, second = calls(planned, ["--plan", "p.json"], [{"set": [1234, 5, 6]}, {}])
    assert first["threshold"][0] == GC_HOLD_THRESHOLD
    assert second["threshold"] == [1234, 5, 6]


MERGE = """
    import gc, json
    from fdk import response

    KEEP = []

    class Node(object):
        pass

    def handler(ctx, data=None):
        # The first call keeps a list and leaves 100 objects of garbage in
        # cycles ({"freeze": true}: after freezing what the program has);
        # the second says where the list is and what a full collection
        # finds.
        req = json.loads(data.getvalue() or b"{}")
        if not KEEP:
            if req.get("freeze"):
                gc.freeze()
            KEEP.append([[] for i in range(1000)])
            for i in range(100):
                n = Node()
                n.me = n
            return response.Response(ctx, response_data="{}")
        return response.Response(ctx, response_data=json.dumps(
            {"in_oldest": any(o is KEEP[0] for o in gc.get_objects(2)),
             "frozen": gc.get_freeze_count() > 0, "found": gc.collect()}))
"""


def test_at_the_first_response_the_start_s_objects_go_to_the_oldest_generation():
    # docs/plan.md, "The collector during the first call": the objects the
    # held first call made move to the oldest generation unwalked once its
    # response is sent (no young collection of all of them then); their
    # garbage waits for the next full collection.  A program that froze
    # objects keeps them frozen, and the young collection runs after the
    # response as before (finding the garbage).
    d = next(_planned("plangcmerge", MERGE))
    try:
        first, second = calls(d, ["--plan", "p.json"], [{}, {}])
        assert second == {"in_oldest": True, "frozen": False,
                          "found": second["found"]} and second["found"] >= 100, second
        first, second = calls(d, ["--plan", "p.json"], [{"freeze": True}, {}])
        assert second["frozen"] and not second["in_oldest"] and second["found"] < 100, second
        first, second = calls(d, [], [{}, {}])
        assert not second["frozen"], second
    finally:
        shutil.rmtree(d, ignore_errors=True)


SLOW_CALLBACKS = """
    import time, weakref
    from fdk import response

    _refs = []

    class Node(object):
        pass

    def _gone(ref):
        time.sleep(0.002)

    def handler(ctx, data=None):
        # Garbage in cycles whose collection, once the hold ends after the
        # response, runs 1000 weakref callbacks of 2 ms in the main thread.
        # The program froze what it had first: the objects of the start are
        # then not merged into the oldest generation at the response, and
        # the young collection runs right after it, as it did before.
        import gc
        gc.freeze()
        for i in range(1000):
            n = Node()
            n.me = n
            _refs.append(weakref.ref(n, _gone))
        return response.Response(ctx, response_data="ok")
"""


def test_sigterm_during_the_collection_after_the_first_response_stops():
    # The signal lands in a weakref callback; raised from the handler there,
    # the exception was printed as ignored and the server ran on.
    d = tempfile.mkdtemp(prefix="plangcterm", dir="/tmp")
    try:
        write(d, "func.py", SLOW_CALLBACKS)
        write(d, "req.json", "{}")
        p = plan_cmd("--python", DEBIAN_PYTHON, "--fn", "func.py", "--request", "req.json",
                     "-o", os.path.join(d, "p.json"), cwd=d)
        assert p.returncode == 0, p.stderr
        for i in range(3):
            sock = os.path.join(d, "lsnr.sock")
            env = clean_env()
            env.update(FN_LISTENER="unix:" + sock, FN_FORMAT="http-stream")
            proc = subprocess.Popen([DEBIAN_PYTHON, os.path.join(ROOT, "python", "coldstart-fdk"),
                                     "--plan", "p.json", "func.py", "handler"], cwd=d, env=env,
                                    stderr=subprocess.PIPE)
            try:
                for _ in range(600):
                    if os.path.islink(sock):
                        break
                    time.sleep(0.01)
                assert _fn_call(sock, b"{}", "c1") == b"ok"
                time.sleep(0.1)
                proc.send_signal(signal.SIGTERM)
                try:
                    rc = proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                    pytest.fail("round %d: no exit 15 s after SIGTERM: %s" % (i, proc.stderr.read()[-600:]))
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            err = proc.stderr.read()
            assert rc == 0 and b"Exception ignored" not in err, err[-600:]
    finally:
        shutil.rmtree(d, ignore_errors=True)


AT_IMPORT = """
    import gc, json, os
    from fdk import response

    # What the collector looked like while the function's module loaded;
    # GC_AT_IMPORT=disable or =set: the program's own settings at import.
    if os.environ.get("GC_AT_IMPORT") == "disable":
        gc.disable()
    elif os.environ.get("GC_AT_IMPORT") == "set":
        gc.set_threshold(4321, 7, 8)
    SEEN = {"threshold": list(gc.get_threshold()), "enabled": gc.isenabled()}
    if os.environ.get("GC_IMPORTED"):
        open(os.environ["GC_IMPORTED"], "w").close()

    def handler(ctx, data=None):
        req = json.loads(data.getvalue() or b"{}")
        if req.get("disable"):
            gc.disable()
        return response.Response(ctx, response_data=json.dumps(
            {"at_import": SEEN, "threshold": list(gc.get_threshold()),
             "enabled": gc.isenabled()}))
"""


@pytest.fixture
def at_import():
    yield from _planned("plangcimp", AT_IMPORT)


def calls_after_import(workdir, how, bodies):
    """Like calls(), but the first call is sent only once the function's
    module has loaded (in the background thread for --warm background)."""
    d = tempfile.mkdtemp(prefix="plangcimp", dir="/tmp")
    sock, marker = os.path.join(d, "lsnr.sock"), os.path.join(d, "imported")
    env = clean_env(("PYTHONPATH", "FDK_DEBUG"))
    env.update(FN_LISTENER="unix:" + sock, FN_FORMAT="http-stream", GC_IMPORTED=marker)
    proc = subprocess.Popen([DEBIAN_PYTHON, os.path.join(ROOT, "python", "coldstart-fdk")]
                            + how + ["func.py", "handler"], cwd=workdir, env=env,
                            stderr=subprocess.PIPE)
    try:
        for _ in range(3000):
            if os.path.islink(sock) and os.path.exists(marker):
                break
            time.sleep(0.01)
        out = [json.loads(_fn_call(sock, json.dumps(b).encode(), "c%d" % i))
               for i, b in enumerate(bodies, 1)]
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
        shutil.rmtree(d, ignore_errors=True)
    assert "coldstart plan:" not in err.decode(), err
    return out


@pytest.mark.parametrize("warm", ["eager", "background"])
def test_held_from_the_plan_in_eager_and_background_modes(at_import, warm):
    # The function's imports run before the first request (eager: before
    # the socket is ready; background: in a thread after it, which the
    # first call here waits for): the collector waits for them too, until
    # the first response.
    usual = default_threshold()
    first, second = calls_after_import(at_import, ["--warm", warm, "--plan", "p.json"],
                                       [{}, {}])
    assert first["at_import"] == {"threshold": [GC_HOLD_THRESHOLD] + usual[1:],
                                  "enabled": True}, first
    assert first["threshold"][0] == GC_HOLD_THRESHOLD
    assert second["threshold"] == usual and second["enabled"], second
    # Switched off, or without a plan: the usual thresholds throughout.
    for how, env in ((["--plan", "p.json"], {"COLDSTART_PLAN_GC": "0"}), ([], {})):
        first, = calls(at_import, ["--warm", warm] + how, [{}], env)
        assert first["at_import"]["threshold"] == first["threshold"] == usual, (how, env)


@pytest.mark.parametrize("warm", ["lazy", "eager"])
def test_the_program_s_own_collector_settings_stay(at_import, warm):
    # After the first answer the collector is as the program left it:
    # disabled if it disabled it (at import or in the call), its own
    # thresholds if it set them, else as it was.
    how = ["--warm", warm, "--plan", "p.json"]
    usual = default_threshold()
    first, second = calls(at_import, how, [{"disable": True}, {}])
    assert first["at_import"]["enabled"] and not first["enabled"]
    assert second["enabled"] is False and second["threshold"] == usual, second
    first, second = calls(at_import, how, [{}, {}], {"GC_AT_IMPORT": "disable"})
    assert first["at_import"]["enabled"] is False, first
    assert second["enabled"] is False and second["threshold"] == usual, second
    first, second = calls(at_import, how, [{}, {}], {"GC_AT_IMPORT": "set"})
    assert first["at_import"]["threshold"] == [4321, 7, 8], first
    assert second["enabled"] and second["threshold"] == [4321, 7, 8], second
