"""coldstart-fdk as a drop-in for fdk-python 0.1.117, beyond the
differential test: fdk-python's own unit tests and its README's unit-test
example run against our fdk package; asyncio tasks live across calls;
function files named like loaded modules; BaseException, sys.exit(),
KeyboardInterrupt and deadlines a handler swallows; a signal right after
the link.  Each runs the real program over a real unix socket.
"""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import DEBIAN_PYTHON
from test_fdk import FDK, INTERPRETERS, MULTI, PYDIR, rfc3339
from test_fdk import fdk_factory  # noqa: F401 - the fixture
from test_fdk_diff import PEER, SKIP as PEER_SKIP

@pytest.fixture(params=INTERPRETERS)
def python(request):
    return request.param


def _wait_for(path, proc, timeout=15):
    """Waits for a file the server's function writes (or the server's
    exit); returns whether it appeared."""
    end = time.time() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None or time.time() > end:
            return False
        time.sleep(0.005)
    return True


# --- fdk-python's own tests and README against our fdk package -------------

def _readme_unit_test():
    # The "Unit testing your functions" example of fdk-python's README.
    text = open(os.path.join(PEER, "README.md")).read()
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        if "fixtures.setup_fn_call" in block and "def test_" in block:
            return block
    raise AssertionError("no unit-test example in fdk-python's README")


@pytest.mark.skipif(PEER_SKIP is not None, reason=PEER_SKIP or "")
def test_readme_unit_test_example_passes_under_pytest():
    p = subprocess.run([DEBIAN_PYTHON, "-c", "import pytest_asyncio"],
                       capture_output=True)
    if p.returncode:
        pytest.skip("the README's example needs pytest-asyncio (Debian "
                    "python3-pytest-asyncio)")
    d = tempfile.mkdtemp(prefix="fdkreadme", dir="/tmp")
    try:
        with open(os.path.join(d, "func.py"), "w") as f:
            f.write(_readme_unit_test())
        env = dict(os.environ, PYTHONPATH=PYDIR)
        p = subprocess.run([DEBIAN_PYTHON, "-m", "pytest", "-v", "-s",
                            "-p", "no:cacheprovider", "func.py"],
                           cwd=d, env=env, capture_output=True, text=True,
                           timeout=120)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1 passed" in p.stdout, p.stdout


# fdk-python's tests that reach into its internal modules (event_handler,
# the vendored server, customer_code) have no counterpart here.
PEER_TESTS = ["test_tracing.py", "test_headers.py", "test_http_stream.py"]
INTERNAL = ["test_default_enforced_response_code",
            "test_enforced_response_codes_502",
            "test_enforced_response_codes_504", "test_log_frame_header"]

CONFTEST = '''
import sys, types
import fdk
tests = types.ModuleType("fdk.tests")
tests.__path__ = [%r]
sys.modules["fdk.tests"] = tests
fdk.tests = tests
# test_http_stream.py imports fdk-python's internal event_handler for the
# four tests deselected here; a stand-in lets the module load.
sys.modules["fdk.event_handler"] = types.ModuleType("fdk.event_handler")
'''


@pytest.mark.skipif(PEER_SKIP is not None, reason=PEER_SKIP or "")
def test_fdk_pythons_own_unit_tests_pass_against_our_fdk():
    d = tempfile.mkdtemp(prefix="fdkpeer", dir="/tmp")
    try:
        for name in PEER_TESTS:
            shutil.copy(os.path.join(PEER, "fdk", "tests", name), d)
        with open(os.path.join(d, "conftest.py"), "w") as f:
            f.write(CONFTEST % os.path.join(PEER, "fdk", "tests"))
        env = dict(os.environ, PYTHONPATH=PYDIR)
        p = subprocess.run(
            [DEBIAN_PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "-k", " and ".join("not " + t for t in INTERNAL)] + PEER_TESTS,
            cwd=d, env=env, capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    assert p.returncode == 0, p.stdout + p.stderr
    m = re.search(r"(\d+) passed", p.stdout)
    assert m and int(m.group(1)) >= 25, p.stdout
    # The fixtures ran our package, not fdk-python's.
    assert "fdk-python-0.1.117/fdk/" not in p.stdout


ZIPKIN_CHECK = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
os.environ["OCI_TRACING_ENABLED"] = "1"
from coldstart.fdk import context
headers = {"fn-call-id": "c1", "x-b3-traceid": "t1", "x-b3-spanid": "s1",
           "x-b3-sampled": "1"}
ctx, _ = context.context_from_format("http-stream", headers=headers,
                                     data=b"")
z = ctx.TracingContext().zipkin_attrs()
assert ctx.TracingContext().__dict__["_TracingContext__zipkin_attrs"] is z
# A call's context does not import collections for it.
assert "collections" not in sys.modules, "collections imported"
import collections
N = collections.namedtuple(
    "ZipkinAttrs", "trace_id, span_id, parent_span_id, is_sampled, flags")
Z = type(z)
n = N(*z)
assert (repr(z), z, hash(z), z._asdict()) == (repr(n), n, hash(n),
                                              n._asdict()), repr(z)
assert sorted(vars(Z)) == sorted(vars(N)), set(vars(Z)) ^ set(vars(N))
for a in ("__doc__", "__name__", "__qualname__", "__module__", "_fields",
          "_field_defaults", "__match_args__", "__slots__", "__mro__"):
    want = getattr(N, a)
    if a == "__module__":
        want = "coldstart.fdk.context"
    elif a == "__mro__":
        want = tuple(c.__name__ for c in want)
        assert tuple(c.__name__ for c in Z.__mro__) == want, a
        continue
    assert getattr(Z, a) == want, (a, getattr(Z, a), want)
for a in ("__new__", "_make", "_replace", "__repr__", "_asdict",
          "__getnewargs__") + N._fields:
    zf, nf = getattr(Z, a), getattr(N, a)
    assert zf.__doc__ == nf.__doc__, a
    assert getattr(zf, "__qualname__", None) == \
        getattr(nf, "__qualname__", None), a
    assert type(zf) is type(nf), a
assert z.trace_id == "t1" and z.parent_span_id == "s1" and z.is_sampled
r = z._replace(flags=3)
assert type(r) is Z and r == n._replace(flags=3)
assert Z._make(range(5)) == N._make(range(5))
for call in (lambda T: T._make([1]), lambda T: T(1, 2),
             lambda T: T(1, 2, 3, 4, 5, x=1),
             lambda T: T._make(range(5))._replace(x=1)):
    errs = []
    for T in (Z, N):
        try:
            call(T)
        except (TypeError, ValueError) as e:
            errs.append((type(e), str(e)))
    assert errs[0] == errs[1] and len(errs) == 2, errs
import copy, pickle
assert copy.copy(z) == z and copy.deepcopy(z) == z
assert z.__getnewargs__() == tuple(z)
print("ok")
"""


def test_zipkin_attrs_are_fdk_pythons_namedtuple_without_collections():
    # fdk-python's TracingContext makes its ZipkinAttrs with
    # collections.namedtuple in every call's context (its own tests read
    # it); coldstart.fdk makes the same type without importing collections
    # (keyword, operator, reprlib and itertools with it: about 4 M
    # instructions of every function's first call).  -S: nothing of site's
    # has imported collections before.
    p = subprocess.run([DEBIAN_PYTHON, "-S", "-c", ZIPKIN_CHECK, PYDIR],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout == "ok\n", p.stdout + p.stderr


# --- asyncio ----------------------------------------------------------------

def test_task_left_by_a_coroutine_runs_while_idle(python, fdk_factory):
    f = fdk_factory(python)
    f.wait_ready()
    st, r, body = f.call(b"", {"X-Case": "bgtask"})
    assert st == 200 and body == b"started", f.errors()
    # No further call: the task must run while the server waits.
    assert _wait_for(f.marker + ".task", f.proc), f.errors()


def test_sync_handler_schedules_on_get_event_loop(python, fdk_factory):
    f = fdk_factory(python, env={"PYTHONWARNINGS": "ignore"})
    f.wait_ready()
    st, r, body = f.call(b"", {"X-Case": "sync_loop"})
    assert st == 200 and body == b"scheduled", f.errors()
    assert _wait_for(f.marker + ".sync", f.proc), f.errors()
    # asyncio.run() inside a sync handler still works, and afterwards
    # get_event_loop() is the server's loop again.
    st, r, body = f.call(b"", {"X-Case": "arun"})
    assert st == 200 and body == b"coro:run", f.errors()
    os.unlink(f.marker + ".sync")
    st, r, body = f.call(b"", {"X-Case": "sync_loop"})
    assert st == 200, f.errors()
    assert _wait_for(f.marker + ".sync", f.proc), f.errors()


# --- loading ----------------------------------------------------------------

@pytest.mark.parametrize("name", ["time", "json", "io", "os"])
def test_function_file_named_like_a_module(python, fdk_factory, name):
    d = tempfile.mkdtemp(prefix="fdkname", dir="/tmp")
    try:
        func = os.path.join(d, name + ".py")
        with open(func, "w") as fh:
            fh.write("import %s as m\nimport json as j\n"
                     "def handler(ctx, data=None):\n"
                     "    return j.dumps([__name__, m.__name__])\n" % name)
        f = fdk_factory(python, func=func)
        f.wait_ready()
        for _ in range(2):
            st, r, body = f.call(b"", {})
            assert st == 200, f.errors()
            assert body == ('["%s", "%s"]' % (name, name)).encode()
    finally:
        shutil.rmtree(d, ignore_errors=True)


# --- exits, BaseException and swallowed deadlines ---------------------------

def test_base_exception_subclass_is_502_and_serving_continues(
        python, fdk_factory):
    f = fdk_factory(python)
    f.wait_ready()
    st, r, body = f.call(b"", {"X-Case": "baseexc"})
    assert st == 502 and body == b"a BaseException subclass", f.errors()
    st, r, body = f.call(b"again", {"X-Case": "echo"})
    assert st == 200 and body == b"again"


def test_sys_exit_answers_the_call_then_exits_with_its_status(
        python, fdk_factory):
    f = fdk_factory(python)
    f.wait_ready()
    st, r, body = f.call(b"3", {"X-Case": "exit"})
    assert st == 502 and body == b"3", f.errors()
    assert f.proc.wait(timeout=10) == 3
    assert not os.path.lexists(f.sock)
    assert not os.path.exists(os.path.join(f.dir, "phonylsnr.sock"))


def test_keyboard_interrupt_answers_and_stops_without_traceback(
        python, fdk_factory):
    f = fdk_factory(python)
    f.wait_ready()
    st, r, body = f.call(b"", {"X-Case": "kbint"})
    assert st == 502, f.errors()
    assert f.proc.wait(timeout=10) == 0
    assert "Traceback" not in f.errors()
    assert not os.path.lexists(f.sock)


def test_deadline_caught_by_bare_except_is_still_504(python, fdk_factory):
    f = fdk_factory(python)
    f.wait_ready()
    st, r, body = f.call(b"", {"X-Case": "swallow_all",
                               "Fn-Deadline": rfc3339(0.3)})
    assert st == 504, body
    st, r, body = f.call(b"ok", {"X-Case": "echo"})
    assert st == 200 and body == b"ok"


def test_handler_that_never_lets_go_gets_504_and_the_server_exits(
        python, fdk_factory):
    f = fdk_factory(python, env={"COLDSTART_FDK_DEADLINE_GRACE": "0.3"})
    f.wait_ready()
    # The first call imports the function file; under load that can outlast
    # a short deadline, which then fires before the handler has reached the
    # loop that swallows it (a plain 504, not a wedged handler). So the
    # function is imported first and the deadline leaves time to get there.
    st, r, body = f.call(b"", {"X-Case": "str"})
    assert st == 200, body
    t0 = time.time()
    st, r, body = f.call(b"", {"X-Case": "wedge", "Fn-Deadline": rfc3339(2)})
    assert st == 504, body
    assert b"did not stop" in body
    assert f.proc.wait(timeout=10) == 1
    assert time.time() - t0 < 8
    assert not os.path.lexists(f.sock)


def test_sigterm_is_not_deferred_forever_by_a_wedged_handler(
        python, fdk_factory):
    f = fdk_factory(python, env={"COLDSTART_FDK_TERM_GRACE": "0.3"})
    f.wait_ready()
    conn = f.connect()
    conn.request("POST", "/call", body=b"", headers={"X-Case": "wedge"})
    assert _wait_for(f.marker + ".wedged", f.proc), f.errors()
    f.proc.send_signal(signal.SIGTERM)
    r = conn.getresponse()
    assert r.status == 502 and b"stopped" in r.read()
    conn.close()
    assert f.proc.wait(timeout=10) == 0
    assert not os.path.lexists(f.sock)


# --- a signal right after the link ------------------------------------------

RACE = '''
import os, signal, sys, runpy
real = os.symlink
def symlink(*a, **k):
    real(*a, **k)
    # The signal lands right after the link exists, before anything else.
    signal.raise_signal(int(os.environ["FDK_TEST_SIGNAL"]))
os.symlink = symlink
sys.argv = [%r] + sys.argv[1:]
runpy.run_path(%r, run_name="__main__")
'''


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("warm", ["lazy", "eager"])
def test_signal_right_after_the_link_removes_it(python, fdk_factory, signum,
                                                warm):
    d = tempfile.mkdtemp(prefix="fdkrace", dir="/tmp")
    func = os.path.join(d, "func.py")
    with open(func, "w") as fh:
        fh.write(MULTI)
    try:
        f = fdk_factory(python, func=func,
                        argv=[python, "-c", RACE % (FDK, FDK), "--warm", warm,
                              func],
                        env={"FDK_TEST_SIGNAL": str(int(signum))})
        assert f.proc.wait(timeout=20) == 0, f.errors()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    assert not os.path.lexists(f.sock), os.listdir(f.dir)
    assert not os.path.exists(os.path.join(f.dir, "phonylsnr.sock"))
    assert "Traceback" not in f.errors()


# --- logging ----------------------------------------------------------------

def test_logging_as_fdk_python_with_and_without_fdk_debug(python,
                                                          fdk_factory):
    quiet = fdk_factory(python)
    loud = fdk_factory(python, env={"FDK_DEBUG": "1"})
    for f in (quiet, loud):
        f.wait_ready()
        st, r, body = f.call(b"", {"X-Case": "str", "Fn-Call-Id": "L1"})
        assert st == 200, f.errors()
    assert quiet.errors() == ""
    assert "L1 - fdk - DEBUG - context provisioned\n" in loud.errors()
    assert "L1 - fdk - DEBUG - function result obtained\n" in loud.errors()


def test_second_signal_during_a_call_stops_at_once(python, fdk_factory):
    f = fdk_factory(python)
    f.wait_ready()
    conn = f.connect()
    conn.request("POST", "/call", body=b"", headers={"X-Case": "wedge"})
    assert _wait_for(f.marker + ".wedged", f.proc), f.errors()
    f.proc.send_signal(signal.SIGTERM)
    f.proc.send_signal(signal.SIGINT)
    r = conn.getresponse()
    assert r.status == 502 and b"stopped" in r.read()
    conn.close()
    assert f.proc.wait(timeout=10) == 0
    assert not os.path.lexists(f.sock)
