"""`coldstart plan --request FILE` (issue 28, item 4): the body is streamed
from a regular file, never read whole, so /dev/zero, a FIFO or a 1 GiB file
cannot grow coldstart's memory; a server that answers before reading the
body (413) is reported with its status.  Real files, a real FIFO, a real
HTTP server on 127.0.0.1.
"""
import hashlib
import os
import resource
import shutil
import socket
import subprocess
import tempfile
import textwrap

import pytest

from conftest import COLDSTART, DEBIAN_PYTHON, clean_env

pytestmark = pytest.mark.skipif(not os.path.exists(DEBIAN_PYTHON),
                                reason="Debian's python3 is not installed")

SERVER = """
import hashlib, os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        n = int(self.headers["Content-Length"])
        if n > 16 << 20:
            # Refused before reading: the client is still sending.
            self.send_response(413)
            self.send_header("Content-Length", "0")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            return
        h = hashlib.sha256()
        while n:
            chunk = self.rfile.read(min(n, 1 << 16))
            h.update(chunk)
            n -= len(chunk)
        out = h.hexdigest().encode()
        with open(os.environ["DIGESTS"], "ab") as f:
            f.write(out + b"\\n")
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    def log_message(self, *a):
        pass

HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


@pytest.fixture
def workdir():
    d = tempfile.mkdtemp(prefix="planreq", dir="/tmp")
    with open(os.path.join(d, "server.py"), "w") as f:
        f.write(textwrap.dedent(SERVER))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _sanitized():
    try:
        with open(COLDSTART, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


# make check's binary (AddressSanitizer) reserves terabytes of address
# space for its shadow memory: no address-space limit can be set on it, so
# there the tests check what coldstart says, not the bound.
SANITIZED = _sanitized()


def limit_memory():
    # 768 MiB of address space: a 1 GiB body read whole cannot fit.
    resource.setrlimit(resource.RLIMIT_AS, (768 << 20, 768 << 20))


def plan(workdir, *requests, limit=False):
    port = free_port()
    args = [COLDSTART, "plan", "--ready", "http://127.0.0.1:%d/" % port]
    for r in requests:
        args += ["--request", r]
    args += ["-o", os.path.join(workdir, "p.json"), "--", DEBIAN_PYTHON,
             "server.py", str(port)]
    return subprocess.run(args, cwd=workdir, env=clean_env(),
                          capture_output=True, text=True, timeout=300,
                          preexec_fn=limit_memory if limit and not SANITIZED else None)


def test_a_body_is_sent_whole_from_its_file(workdir):
    body = os.path.join(workdir, "big.bin")
    data = os.urandom(3 << 20)
    with open(body, "wb") as f:
        f.write(data)
    # Outside the working directory, which --verify puts back before each run.
    ddir = tempfile.mkdtemp(prefix="planreqd", dir="/tmp")
    digests = os.path.join(ddir, "digests")
    try:
        port = free_port()
        v = subprocess.run([COLDSTART, "plan", "--ready", "http://127.0.0.1:%d/" % port,
                            "--request", body, "--request", body, "--verify", "-o",
                            os.path.join(workdir, "p.json"), "--", DEBIAN_PYTHON,
                            "server.py", str(port)], cwd=workdir,
                           env=dict(clean_env(), DIGESTS=digests),
                           capture_output=True, text=True, timeout=300,
                           preexec_fn=None if SANITIZED else limit_memory)
        assert v.returncode == 0, v.stderr
        assert "verified: 2 responses identical" in v.stdout
        # Every run (recording, without and with the plan) sent it whole.
        with open(digests) as f:
            got = f.read().split()
    finally:
        shutil.rmtree(ddir, ignore_errors=True)
    assert len(got) >= 6 and set(got) == {hashlib.sha256(data).hexdigest()}


def test_a_1gib_body_the_server_refuses_is_reported_not_read(workdir):
    """A sparse 1 GiB file: coldstart runs under a 768 MiB address-space
    limit, so reading it whole (as before) fails; the server answers 413
    before reading it and coldstart says so."""
    body = os.path.join(workdir, "huge.bin")
    with open(body, "wb") as f:
        f.truncate(1 << 30)
    p = plan(workdir, body, limit=True)
    assert p.returncode == 5, p.stderr
    assert "request 1 ('%s') was answered 'HTTP/1.0 413" % body in p.stderr \
        or "request 1 ('%s') was answered 'HTTP/1.1 413" % body in p.stderr, p.stderr
    assert "of its 1073741824 bytes" in p.stderr
    assert not os.path.exists(os.path.join(workdir, "p.json"))


@pytest.mark.parametrize("what", ["fifo", "/dev/zero", "dir"])
def test_a_request_that_is_not_a_regular_file_is_refused_at_once(workdir, what):
    """Before, /dev/zero grew coldstart's memory without end and a FIFO
    without a writer blocked it forever."""
    if what == "fifo":
        path = os.path.join(workdir, "fifo")
        os.mkfifo(path)
        kind = "a FIFO"
    elif what == "dir":
        path = workdir
        kind = "a directory"
    else:
        path = what
        kind = "a character device"
    p = plan(workdir, path, limit=True)
    assert p.returncode == 1, p.stderr
    assert "request '%s' is %s, not a regular file" % (path, kind) in p.stderr
