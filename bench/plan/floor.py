"""The floor of the plan benchmark: the least a process can do to answer
an Fn function's first call.  It binds, chmods and links the socket as
Fn wants, and on the first POST /call applies the function's plan in
strict mode (every pure-Python module the request did not use is deferred,
even the ones the plan keeps eager), loads func.py, calls the handler once
with a minimal context and answers with its body, so only the modules
whose code the request ran (and the native extensions they need) run their
bodies.  FLOOR_KEEP=mod,... keeps those modules eager all the same (the
ones the benchmark found strict mode cannot defer without changing the
answer).  The cyclic collector is held from the first connection until
the answer has been sent and the start's objects then join the oldest
generation, as coldstart-fdk does under a plan (coldstart.hold_gc and
release_gc).  usage: floor.py PLAN FUNC HANDLER (FN_LISTENER in the
environment)
"""
import os
import sys

import _socket


class _Ctx(object):
    def __init__(self):
        self._headers = {}
        self._status = 200

    def SetResponseHeaders(self, headers, status_code):
        self._headers = headers
        self._status = status_code

    def GetResponseHeaders(self):
        return self._headers

    def Headers(self):
        return {}


def _read(conn):
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = conn.recv(65536)
        if not d:
            return None, b""
        buf += d
    head, _, body = buf.partition(b"\r\n\r\n")
    n = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v.strip() or b"0")
    while len(body) < n:
        d = conn.recv(65536)
        if not d:
            break
        body += d
    return head.split(b"\r\n", 1)[0], body


def _answer(plan_path, func, handler, body):
    from coldstart import plan
    # FLOOR_KEEP: what strict mode must keep eager for the same answer.
    keep = [m for m in os.environ.get("FLOOR_KEEP", "").split(",") if m]
    plan.install(plan_path, strict=True, keep=keep)
    # The import system's own functions, as coldstart-fdk loads the file:
    # importlib.util (and contextlib, functools, ... with it) is not what
    # the request needs.
    path = os.path.abspath(func)
    sys.path.insert(0, os.path.dirname(path))
    spec = sys.modules["_frozen_importlib_external"].spec_from_file_location(
        "func", path)
    mod = sys.modules["_frozen_importlib"].module_from_spec(spec)
    sys.modules["func"] = mod
    spec.loader.exec_module(mod)
    import io
    ctx = _Ctx()
    r = getattr(mod, handler)(ctx, data=io.BytesIO(body))
    if hasattr(r, "__await__"):
        import asyncio
        r = asyncio.new_event_loop().run_until_complete(r)
    if hasattr(r, "body") and callable(r.body):
        status, r = r.status(), r.body()
    else:
        status = ctx._status
    if isinstance(r, str):
        r = r.encode("utf-8")
    return status, r


def main():
    plan_path, func, handler = sys.argv[1:4]
    path = os.environ["FN_LISTENER"][len("unix:"):]
    d, base = os.path.split(path)
    phony = os.path.join(d, "phony" + base)
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    s.bind(phony)
    os.chmod(phony, 0o666)
    s.listen(16)
    os.symlink(os.path.basename(phony), path)
    fd, _ = s._accept()
    import coldstart
    held = coldstart.hold_gc(planned=True)
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM, 0, fd)
    line, body = _read(conn)
    status, out = _answer(plan_path, func, handler, body)
    conn.sendall(b"HTTP/1.1 200 OK\r\nFn-Http-Status: %d\r\nContent-Length: %d\r\n\r\n"
                 % (status, len(out)) + out)
    if held is not None:
        coldstart.release_gc(held, responded=True)
    sys.modules["coldstart.plan"].responded()
    # Stay until the agent closes, like a function server.
    while conn.recv(65536):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
