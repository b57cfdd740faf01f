"""A small HTTP/1.1 request reader and response writer for coldstart-fdk.

It only turns bytes into requests and responses into bytes: no sockets, no
printing and no imports, so the FDK starts without http.server or email and
tests can feed it any bytes they like.
"""

MAX_HEAD = 64 * 1024
MAX_CHUNK_LINE = 4096

REASONS = {
    100: "Continue", 200: "OK", 400: "Bad Request", 404: "Not Found",
    405: "Method Not Allowed", 413: "Payload Too Large",
    417: "Expectation Failed", 431: "Request Header Fields Too Large",
    500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway",
    504: "Gateway Timeout", 505: "HTTP Version Not Supported",
}

_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789"
                   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_HEX = frozenset("0123456789abcdefABCDEF")

_HEAD, _BODY_LENGTH, _BODY_CHUNKED = 0, 1, 2


class HTTPError(Exception):
    """A request the reader cannot accept; status is the answer to send.

    After one of these the byte stream cannot be trusted, so the server
    answers and closes the connection.
    """

    def __init__(self, status, message):
        Exception.__init__(self, message)
        self.status = status
        self.message = message


class Request(object):
    """One parsed request.  header_list keeps the received order and case."""

    __slots__ = ("method", "target", "path", "version", "header_list",
                 "body", "keep_alive")

    def __init__(self, method, target, version, header_list, keep_alive):
        self.method = method
        self.target = target
        self.path = target.split("?", 1)[0]
        self.version = version
        self.header_list = header_list
        self.body = b""
        self.keep_alive = keep_alive

    def header(self, name, default=None):
        """Returns the last value of a header (name is case-insensitive)."""
        name = name.lower()
        for k, v in reversed(self.header_list):
            if k.lower() == name:
                return v
        return default


def _is_token(s):
    return bool(s) and all(c in _TOKEN for c in s)


def _parse_head(text, max_body):
    """Parses a request head (without its blank line); returns the Request,
    its body framing ("length" or "chunked"), the length for "length", and
    whether the client waits for "100 Continue"."""
    lines = text.split("\n")
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    parts = lines[0].split(" ")
    if len(parts) != 3 or not _is_token(parts[0]) or not parts[1]:
        raise HTTPError(400, "malformed request line %r" % lines[0][:200])
    method, target, version = parts
    if not version.startswith("HTTP/") or len(version) != 8 or \
            not version[5].isdigit() or version[6] != "." or \
            not version[7].isdigit():
        raise HTTPError(400, "malformed HTTP version %r" % version[:20])
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        raise HTTPError(505, "unsupported HTTP version %r" % version)
    if not target.startswith("/"):
        raise HTTPError(400, "unsupported request target %r" % target[:200])

    header_list = []
    for ln in lines[1:]:
        if ln[:1] in (" ", "\t"):
            raise HTTPError(400, "folded header lines are not accepted")
        name, sep, value = ln.partition(":")
        if not sep or not _is_token(name):
            raise HTTPError(400, "malformed header line %r" % ln[:200])
        header_list.append((name, value.strip(" \t")))

    lengths = set()
    te = None
    connection = ""
    expect = None
    for name, value in header_list:
        low = name.lower()
        if low == "content-length":
            lengths.add(value)
        elif low == "transfer-encoding":
            te = value.lower() if te is None else te + "," + value.lower()
        elif low == "connection":
            connection += "," + value.lower()
        elif low == "expect":
            expect = value.lower()

    tokens = [t.strip() for t in connection.split(",")]
    if version == "HTTP/1.1":
        keep_alive = "close" not in tokens
    else:
        keep_alive = "keep-alive" in tokens
    req = Request(method, target, version, header_list, keep_alive)

    if expect is not None and expect != "100-continue":
        raise HTTPError(417, "unsupported expectation %r" % expect)
    if te is not None:
        if lengths:
            raise HTTPError(400, "both Content-Length and Transfer-Encoding")
        if te.replace(" ", "") != "chunked":
            raise HTTPError(501, "unsupported Transfer-Encoding %r" % te)
        return req, "chunked", 0, expect is not None
    if len(lengths) > 1:
        raise HTTPError(400, "conflicting Content-Length headers")
    n = 0
    if lengths:
        value = lengths.pop()
        if not (value.isascii() and value.isdigit()) or len(value) > 18:
            raise HTTPError(400, "invalid Content-Length %r" % value[:40])
        n = int(value)
        if n > max_body:
            raise HTTPError(413, "body of %d bytes is over the limit of %d"
                            % (n, max_body))
    return req, "length", n, expect is not None and n > 0


class RequestReader(object):
    """Turns the bytes of one connection into requests, incrementally.

    feed() appends received bytes; next_request() returns a complete Request,
    or None when more bytes are needed, and raises HTTPError for a request
    that must be refused.  wants_continue is set once when a client sent
    "Expect: 100-continue" and waits for the interim answer.
    """

    def __init__(self, max_head=MAX_HEAD, max_body=1 << 30):
        self.max_head = max_head
        self.max_body = max_body
        self.buf = bytearray()
        self.pos = 0
        self.state = _HEAD
        self.req = None
        self.need = 0
        self.parts = None
        self.size = 0
        self.chunk_left = -1
        self.in_trailer = False
        self.wants_continue = False

    def feed(self, data):
        self.buf += data

    def pending(self):
        """True when some bytes of an unfinished request are buffered."""
        return self.state != _HEAD or len(self.buf) > self.pos

    def _take_head(self):
        buf = self.buf
        # Tolerate blank lines before a request line (RFC 9112 2.2).
        while buf.startswith(b"\r\n", self.pos) or \
                buf.startswith(b"\n", self.pos):
            self.pos += 2 if buf[self.pos] == 13 else 1
        if self.pos:
            del buf[:self.pos]
            self.pos = 0
        a = buf.find(b"\r\n\r\n", 0, self.max_head + 4)
        b = buf.find(b"\n\n", 0, self.max_head + 2)
        if a < 0 and b < 0:
            if len(buf) > self.max_head:
                raise HTTPError(431, "request header block is larger than "
                                "%d bytes" % self.max_head)
            return None
        if a < 0 or (0 <= b < a):
            end, skip = b, 2
        else:
            end, skip = a, 4
        if end > self.max_head:
            raise HTTPError(431, "request header block is larger than %d "
                            "bytes" % self.max_head)
        text = bytes(buf[:end]).decode("latin-1")
        self.pos = end + skip
        return text

    def _take_chunked(self):
        buf = self.buf
        while True:
            if self.chunk_left > 0:
                have = len(buf) - self.pos
                if have <= 0:
                    return False
                take = min(have, self.chunk_left)
                self.parts.append(bytes(buf[self.pos:self.pos + take]))
                self.pos += take
                self.chunk_left -= take
                if self.chunk_left > 0:
                    return False
                self.chunk_left = -2
            if self.chunk_left == -2:
                if len(buf) - self.pos < 2:
                    if len(buf) - self.pos == 1 and buf[self.pos] == 10:
                        self.pos += 1
                        self.chunk_left = -1
                        continue
                    return False
                if buf[self.pos:self.pos + 2] == b"\r\n":
                    self.pos += 2
                elif buf[self.pos] == 10:
                    self.pos += 1
                else:
                    raise HTTPError(400, "chunk data is not followed by CRLF")
                self.chunk_left = -1
            nl = buf.find(b"\n", self.pos, self.pos + MAX_CHUNK_LINE)
            if nl < 0:
                if len(buf) - self.pos >= MAX_CHUNK_LINE:
                    raise HTTPError(400, "chunk size line is too long")
                return False
            line = bytes(buf[self.pos:nl]).rstrip(b"\r").decode("latin-1")
            self.pos = nl + 1
            if self.in_trailer:
                if line == "":
                    return True
                continue
            size = line.split(";", 1)[0].strip()
            if not size or not all(c in _HEX for c in size):
                raise HTTPError(400, "invalid chunk size %r" % line[:40])
            n = int(size, 16)
            if n == 0:
                self.in_trailer = True
                continue
            self.size += n
            if self.size > self.max_body:
                raise HTTPError(413, "chunked body is over the limit of %d "
                                "bytes" % self.max_body)
            self.chunk_left = n

    def next_request(self):
        if self.state == _HEAD:
            text = self._take_head()
            if text is None:
                return None
            req, framing, n, cont = _parse_head(text, self.max_body)
            self.req = req
            self.wants_continue = cont
            if framing == "chunked":
                self.state = _BODY_CHUNKED
                self.parts = []
                self.size = 0
                self.chunk_left = -1
                self.in_trailer = False
            else:
                self.state = _BODY_LENGTH
                self.need = n
        if self.state == _BODY_LENGTH:
            if len(self.buf) - self.pos < self.need:
                return None
            self.req.body = bytes(self.buf[self.pos:self.pos + self.need])
            self.pos += self.need
        else:
            if not self._take_chunked():
                return None
            self.req.body = b"".join(self.parts)
            self.parts = None
        del self.buf[:self.pos]
        self.pos = 0
        self.state = _HEAD
        self.wants_continue = False
        req, self.req = self.req, None
        return req


def _encode(value):
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        return value.encode("utf-8")


def format_head(status, headers, length, keep_alive):
    """Returns the status line and headers of a response as bytes.

    headers is a list of (name, value) string pairs; a name or value that
    could split the response (CR, LF or NUL) raises ValueError.
    """
    out = ["HTTP/1.1 %d %s\r\n" % (status, REASONS.get(status, "Unknown"))]
    for name, value in headers:
        name = str(name)
        value = str(value)
        if not _is_token(name):
            raise ValueError("invalid response header name %r" % name)
        if "\r" in value or "\n" in value or "\0" in value:
            raise ValueError("invalid value for response header %r" % name)
        out.append("%s: %s\r\n" % (name, value))
    out.append("Content-Length: %d\r\n" % length)
    if not keep_alive:
        out.append("Connection: close\r\n")
    out.append("\r\n")
    return b"".join(_encode(s) for s in out)
