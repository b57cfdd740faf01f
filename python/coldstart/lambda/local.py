"""A Runtime API inside the runtime's own process, for `coldstart plan
--lambda` (and trying a handler without Lambda): --serve-events FILE...
serves each file's content as one event, in order, on a loopback port, and
writes what the runtime posts to stdout; the runtime returns after the last
event, so the process runs to its end.

It uses only _socket and _thread, so that a plan recorded this way holds
what the runtime and the handler import, not the server's imports.

stdout gets, per event, a line `response|error REQUEST_ID CONTENT_TYPE`
then the body posted and a newline; an init error gives `init/error`
and its document.  The runtime's own output goes there too, as on Lambda.
"""

import _socket
import _thread
import os
import sys
import time

ARN = "arn:aws:lambda:local:000000000000:function:coldstart-plan"


def _read_request(conn, buf):
    while b"\r\n\r\n" not in buf:
        data = conn.recv(65536)
        if not data:
            return None, b""
        buf += data
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path = lines[0].split(" ")[:2]
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    n = int(headers.get("content-length", "0"))
    while len(rest) < n:
        data = conn.recv(max(65536, n - len(rest)))
        if not data:
            return None, b""
        rest += data
    return (method, path, headers, rest[:n]), rest[n:]


class LocalAPI(object):
    def __init__(self, files):
        self.events = []
        for f in files:
            with open(f, "rb") as fh:
                self.events.append(fh.read())
        self.next_index = 0
        self.sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.address = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.lock = _thread.allocate_lock()

    def start(self):
        _thread.start_new_thread(self._accept, ())

    def _accept(self):
        while True:
            try:
                fd = self.sock._accept()[0]
            except OSError:
                return
            conn = _socket.socket(fileno=fd)
            _thread.start_new_thread(self._serve, (conn,))

    def _reply(self, conn, status, body=b"", headers=()):
        head = ["HTTP/1.1 %d %s" % (status, "OK" if status < 300 else "Err"),
                "Content-Length: %d" % len(body)]
        head.extend("%s: %s" % h for h in headers)
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
                     + body)

    def _serve(self, conn):
        buf = b""
        try:
            while True:
                req, buf = _read_request(conn, buf)
                if req is None:
                    return
                method, path, headers, body = req
                if method == "GET" and path.endswith("/invocation/next"):
                    with self.lock:
                        i = self.next_index
                        self.next_index += 1
                    if i >= len(self.events):
                        self._reply(conn, 410, b"no more events")
                        continue
                    deadline = int(time.time() * 1000) + 900000
                    self._reply(conn, 200, self.events[i], [
                        ("Lambda-Runtime-Aws-Request-Id", "event-%d" % (i + 1)),
                        ("Lambda-Runtime-Deadline-Ms", str(deadline)),
                        ("Lambda-Runtime-Invoked-Function-Arn", ARN),
                        ("Content-Type", "application/json")])
                elif method == "POST":
                    parts = path.rstrip("/").split("/")
                    if path.endswith("/init/error"):
                        label = "init/error"
                    else:
                        label = "%s %s %s" % (parts[-1], parts[-2],
                                              headers.get("content-type", ""))
                    out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") \
                        else None
                    with self.lock:
                        sys.stdout.flush()
                        if out is not None:
                            out.write(label.encode() + b"\n" + body + b"\n")
                            out.flush()
                    self._reply(conn, 202, b"{}")
                else:
                    self._reply(conn, 404, b"")
        except OSError:
            return
        finally:
            conn.close()


def serve(files):
    """Starts the server; returns (its address, the number of events)."""
    api = LocalAPI(files)
    api.start()
    os.environ["AWS_LAMBDA_RUNTIME_API"] = api.address
    return api.address, len(api.events)
