"""coldstart-fdk under hostile or careless clients and environments: idle
connections filling every slot, idle and half-sent requests, endless
chunked trailers, a client that reads nothing of a large response, a large
body's memory, FN_LISTENER naming a file that is not ours, and a symlink
planted where the phony socket is bound.  Each test waits on real events
(a response, the server closing a connection, its exit), never on sleeps.
"""
import os
import socket
import stat
import subprocess
import tempfile
import time

import pytest

from test_fdk import FDK, INTERPRETERS, MULTI, PYDIR
from test_fdk import fdk_factory  # noqa: F401 - the fixture


@pytest.fixture(params=INTERPRETERS)
def python(request):
    return request.param


def _connect(f):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # Blocking: a unix connect() then waits for room in the backlog
    # instead of failing with EAGAIN.
    s.connect(f.sock)
    s.settimeout(10)
    return s


def _closed_by_server(s, timeout=10):
    """True when the server closes s (EOF) within timeout."""
    s.settimeout(timeout)
    try:
        while True:
            d = s.recv(65536)
            if not d:
                return True
    except socket.timeout:
        return False
    except ConnectionResetError:
        return True


def test_idle_connections_cannot_lock_callers_out(python, fdk_factory):
    f = fdk_factory(python)
    f.wait_ready()
    idle = [_connect(f) for _ in range(64)]
    try:
        # Every slot is taken by a connection that says nothing: the new
        # caller waits in the backlog until the oldest has been idle for
        # EVICT_AFTER (1 s), then gets its answer as that one makes room.
        st, r, body = f.call(b"in", {"X-Case": "echo"})
        assert st == 200 and body == b"in", f.errors()
        assert _closed_by_server(idle[0])
    finally:
        for s in idle:
            s.close()


def test_idle_and_half_sent_connections_time_out(python, fdk_factory):
    f = fdk_factory(python, env={"COLDSTART_FDK_IDLE_TIMEOUT": "0.3",
                                 "COLDSTART_FDK_REQUEST_TIMEOUT": "0.3"})
    f.wait_ready()
    idle = _connect(f)
    half = _connect(f)
    half.sendall(b"POST /call HTTP/1.1\r\nContent-Le")
    try:
        assert _closed_by_server(idle)
        assert _closed_by_server(half)
    finally:
        idle.close()
        half.close()
    st, r, body = f.call(b"still", {"X-Case": "echo"})
    assert st == 200 and body == b"still"


def test_chunked_trailers_are_bounded(python, fdk_factory):
    f = fdk_factory(python)
    f.wait_ready()
    s = _connect(f)
    try:
        s.sendall(b"POST /call HTTP/1.1\r\nX-Case: echo\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n")
        line = b"X-Trailer: " + b"t" * 100 + b"\r\n"
        out = b""
        try:
            for _ in range(20000):  # 2.2 MB of trailers, never ending
                s.sendall(line)
        except (BrokenPipeError, ConnectionResetError):
            pass
        s.settimeout(10)
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    break
                out += d
        except (socket.timeout, ConnectionResetError):
            pass
        assert out.startswith(b"HTTP/1.1 431 "), out[:200]
    finally:
        s.close()
    st, r, body = f.call(b"ok", {"X-Case": "echo"})
    assert st == 200


def test_client_not_reading_a_large_response_blocks_nobody(
        python, fdk_factory):
    f = fdk_factory(python)
    f.wait_ready()
    stuck = _connect(f)
    try:
        n = 64 * 1024 * 1024
        stuck.sendall(b"POST /call HTTP/1.1\r\nX-Case: big\r\n"
                      b"Content-Length: %d\r\n\r\n%d" % (len(str(n)), n))
        # The other caller is answered while the first reads nothing.
        conn = f.connect(timeout=10)
        st, r, body = f.call(b"other", {"X-Case": "echo"}, conn=conn)
        assert st == 200 and body == b"other", f.errors()
        conn.close()
        # And the first still gets its whole answer.
        got = 0
        stuck.settimeout(30)
        while got < n:
            d = stuck.recv(1 << 20)
            assert d
            got += len(d)
    finally:
        stuck.close()


def _peak_rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            if ln.startswith("VmHWM:"):
                return int(ln.split()[1])
    raise AssertionError("no VmHWM for %d" % pid)


@pytest.mark.parametrize("framing", ["length", "chunked"])
def test_request_body_is_held_once(python, fdk_factory, framing):
    f = fdk_factory(python)
    f.wait_ready()
    st, r, body = f.call(b"warm", {"X-Case": "tell"})
    assert st == 200
    before = _peak_rss_kb(f.proc.pid)
    n = 64 * 1024 * 1024
    data = b"z" * n
    s = _connect(f)
    try:
        if framing == "length":
            s.sendall(b"POST /call HTTP/1.1\r\nX-Case: tell\r\n"
                      b"Content-Length: %d\r\nConnection: close\r\n\r\n" % n)
            s.sendall(data)
        else:
            s.sendall(b"POST /call HTTP/1.1\r\nX-Case: tell\r\nConnection: "
                      b"close\r\nTransfer-Encoding: chunked\r\n\r\n")
            step = 1 << 20
            for i in range(0, n, step):
                s.sendall(b"%x\r\n" % step + data[i:i + step] + b"\r\n")
            s.sendall(b"0\r\n\r\n")
        out = b""
        s.settimeout(30)
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    finally:
        s.close()
    assert out.endswith(b"\r\n\r\n%d" % n), out[-200:]
    grew = (_peak_rss_kb(f.proc.pid) - before) * 1024
    # One copy of the body, plus what a chunked body's growth and the
    # receive buffers add.
    assert grew < 1.35 * n, "peak memory grew by %.2f x the body" % (grew / n)


def _run(python, env, timeout=20):
    return subprocess.run([python, FDK, env.pop("_FUNC")], env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("which", ["lsnr.sock", "phonylsnr.sock"])
def test_fn_listener_naming_a_regular_file_keeps_it(python, which):
    d = tempfile.mkdtemp(prefix="fdkfile", dir="/tmp")
    try:
        func = os.path.join(d, "func.py")
        with open(func, "w") as fh:
            fh.write(MULTI)
        victim = os.path.join(d, which)
        with open(victim, "w") as fh:
            fh.write("precious")
        env = {k: v for k, v in os.environ.items() if not k.startswith("FN_")}
        env.update(FN_LISTENER="unix:" + os.path.join(d, "lsnr.sock"),
                   PYTHONPATH=PYDIR, _FUNC=func)
        p = _run(python, env)
        assert p.returncode == 2, p.stderr
        assert "neither a socket nor a symlink" in p.stderr
        with open(victim) as fh:
            assert fh.read() == "precious"
    finally:
        import shutil
        shutil.rmtree(d, ignore_errors=True)


PLANT = '''
import os, sys, runpy
real = os.chmod
def chmod(path, mode, *a, **k):
    # The race a local attacker would win: the bound socket replaced by a
    # symlink to their target between bind() and chmod().
    p = os.fspath(path)
    if p.endswith("phonylsnr.sock"):
        os.unlink(p)
        os.symlink(os.environ["FDK_TEST_VICTIM"], p)
    return real(path, mode, *a, **k)
os.chmod = chmod
sys.argv = [%r] + sys.argv[1:]
runpy.run_path(%r, run_name="__main__")
'''


def test_socket_mode_does_not_follow_a_planted_symlink(python, fdk_factory):
    d = tempfile.mkdtemp(prefix="fdkplant", dir="/tmp")
    victim = os.path.join(d, "victim")
    with open(victim, "w") as fh:
        fh.write("x")
    os.chmod(victim, 0o600)
    func = os.path.join(d, "func.py")
    with open(func, "w") as fh:
        fh.write(MULTI)
    old = os.umask(0o077)  # a restrictive umask must not matter either
    try:
        f = fdk_factory(python, func=func,
                        argv=[python, "-c", PLANT % (FDK, FDK), func],
                        env={"FDK_TEST_VICTIM": victim})
    finally:
        os.umask(old)
    try:
        end = time.time() + 15
        while not os.path.islink(f.sock) and f.proc.poll() is None and \
                time.time() < end:
            time.sleep(0.005)
        assert stat.S_IMODE(os.stat(victim).st_mode) == 0o600
        phony = os.path.join(f.dir, "phonylsnr.sock")
        st = os.lstat(phony)
        assert stat.S_ISSOCK(st.st_mode), f.errors()
        assert stat.S_IMODE(st.st_mode) == 0o666
    finally:
        import shutil
        shutil.rmtree(d, ignore_errors=True)
