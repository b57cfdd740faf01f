"""A client of the Lambda Runtime API (2018-06-01) on one keep-alive
connection, over the C module _socket: http.client would bring in email,
ssl and hashlib before the first event.

Requests are HTTP/1.1 with Content-Length; answers may come with
Content-Length, chunked, or ending with the connection.  A request on a
reused connection that the server had closed is sent again once on a new
one (nothing of it was read then).
"""

import _socket
import sys

from . import VERSION
from .errors import RuntimeAPIError

PREFIX = "/2018-06-01/runtime"
MAX_HEAD = 64 * 1024


def _split_address(address):
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise RuntimeAPIError("AWS_LAMBDA_RUNTIME_API %r is not HOST:PORT"
                              % address)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


class Response(object):
    __slots__ = ("status", "headers", "body")

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body


class RuntimeAPI(object):
    def __init__(self, address):
        self.address = address
        self.host, self.port = _split_address(address)
        # getaddrinfo() encodes a str host with the idna codec, which
        # imports encodings.idna, stringprep and unicodedata (a millisecond
        # of CPU before the first event); an ASCII host goes as bytes.
        try:
            self.host_arg = self.host.encode("ascii")
        except UnicodeEncodeError:
            self.host_arg = self.host
        self.sock = None
        self.buf = b""
        self.user_agent = "coldstart-lambda/%s (python %d.%d.%d)" % (
            (VERSION,) + tuple(sys.version_info[:3]))

    def _connect(self):
        last = None
        for family, type_, proto, _, addr in _socket.getaddrinfo(
                self.host_arg, self.port, 0, _socket.SOCK_STREAM):
            s = _socket.socket(family, type_, proto)
            try:
                s.connect(addr)
            except OSError as e:
                s.close()
                last = e
                continue
            if family in (_socket.AF_INET, _socket.AF_INET6):
                s.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
            self.sock = s
            self.buf = b""
            return
        raise RuntimeAPIError("cannot connect to the Runtime API at %s: %s"
                              % (self.address, last))

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        self.buf = b""

    def _recv(self):
        data = self.sock.recv(262144)
        if not data:
            raise EOFError
        return data

    def _read_head(self):
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end >= 0:
                head, self.buf = self.buf[:end], self.buf[end + 4:]
                return head
            if len(self.buf) > MAX_HEAD:
                raise RuntimeAPIError("the Runtime API sent a header block "
                                      "over %d bytes" % MAX_HEAD)
            self.buf += self._recv()

    def _read_exact(self, n):
        parts = [self.buf[:n]]
        have = len(parts[0])
        self.buf = self.buf[n:]
        while have < n:
            data = self._recv()
            take = data[:n - have]
            parts.append(take)
            have += len(take)
            if len(take) < len(data):
                self.buf = data[len(take):]
        return b"".join(parts)

    def _read_line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2:]
                return line
            if len(self.buf) > MAX_HEAD:
                raise RuntimeAPIError("the Runtime API sent a line over %d "
                                      "bytes" % MAX_HEAD)
            self.buf += self._recv()

    def _read_chunked(self):
        parts = []
        while True:
            size = int(self._read_line().split(b";", 1)[0].strip(), 16)
            if size == 0:
                while self._read_line():
                    pass
                return b"".join(parts)
            parts.append(self._read_exact(size))
            self._read_line()

    def _read_response(self):
        head = self._read_head().decode("latin-1").split("\r\n")
        status_line = head[0].split(" ", 2)
        if len(status_line) < 2 or not status_line[1].isdigit():
            raise RuntimeAPIError("the Runtime API sent a malformed status "
                                  "line %r" % head[0])
        status = int(status_line[1])
        headers = {}
        for line in head[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        keep = headers.get("connection", "").lower() != "close"
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = self._read_chunked()
        elif "content-length" in headers:
            body = self._read_exact(int(headers["content-length"]))
        elif status in (204, 304) or 100 <= status < 200:
            body = b""
        else:
            parts = [self.buf]
            self.buf = b""
            while True:
                try:
                    parts.append(self._recv())
                except EOFError:
                    break
            body = b"".join(parts)
            keep = False
        if not keep:
            self.close()
        return Response(status, headers, body)

    def request(self, method, path, body=b"", headers=()):
        """Sends one request and returns its Response; raises
        RuntimeAPIError when the API cannot be reached or the exchange
        breaks off."""
        lines = ["%s %s HTTP/1.1" % (method, path), "Host: " + self.address,
                 "User-Agent: " + self.user_agent]
        for name, value in headers:
            lines.append("%s: %s" % (name, value))
        if method != "GET":
            lines.append("Content-Length: %d" % len(body))
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        for attempt in (0, 1):
            reused = self.sock is not None
            if not reused:
                self._connect()
            try:
                if body and len(body) > 65536:
                    self.sock.sendall(data)
                    self.sock.sendall(body)
                else:
                    self.sock.sendall(data + body)
                return self._read_response()
            except (EOFError, OSError) as e:
                self.close()
                got_nothing = isinstance(e, EOFError) or isinstance(
                    e, (BrokenPipeError, ConnectionResetError))
                if reused and attempt == 0 and got_nothing:
                    continue
                raise RuntimeAPIError("the Runtime API at %s broke off %s "
                                      "%s: %s" % (self.address, method, path,
                                                  e or "connection closed"))
            except ValueError as e:
                self.close()
                raise RuntimeAPIError("the Runtime API sent a malformed "
                                      "answer to %s %s: %s" % (method, path,
                                                               e))

    def next(self):
        r = self.request("GET", PREFIX + "/invocation/next")
        if r.status != 200:
            raise RuntimeAPIError("GET %s/invocation/next answered %d: %s"
                                  % (PREFIX, r.status, r.body[:200].decode(
                                      "utf-8", "replace").strip()), r.status)
        if "lambda-runtime-aws-request-id" not in r.headers:
            raise RuntimeAPIError("the next invocation came without "
                                  "Lambda-Runtime-Aws-Request-Id")
        return r

    def post(self, path, body, content_type, extra=()):
        headers = [("Content-Type", content_type)]
        headers.extend(extra)
        r = self.request("POST", PREFIX + path, body, headers)
        if not 200 <= r.status < 300:
            raise RuntimeAPIError("POST %s%s answered %d: %s" % (
                PREFIX, path, r.status, r.body[:200].decode(
                    "utf-8", "replace").strip()), r.status)
        return r
