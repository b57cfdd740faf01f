"""A small HTTP/1.1 request reader and response writer for coldstart-fdk.

It turns bytes into requests and responses into bytes, and nothing else: no
printing and no imports beyond io, so the FDK starts without http.server
or email and tests can feed it any bytes they like.  A request body is
stored once: straight into the io.BytesIO the function gets (a body of
known length is received into it in place, see recv_from()).
"""

import io

MAX_HEAD = 64 * 1024
MAX_CHUNK_LINE = 4096
# What fdk-python's server announces; coldstart-fdk closes an idle
# connection after as long.
KEEP_ALIVE_TIMEOUT = 75

REASONS = {
    100: "Continue", 200: "OK", 400: "Bad Request", 404: "Not Found",
    405: "Method Not Allowed", 413: "Payload Too Large",
    417: "Expectation Failed", 431: "Request Header Fields Too Large",
    500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway",
    504: "Gateway Timeout", 505: "HTTP Version Not Supported",
}

_TOKEN = frozenset(b"!#$%&'*+-.^_`|~0123456789"
                   b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_HEX = frozenset(b"0123456789abcdefABCDEF")

_HEAD, _BODY_LENGTH, _BODY_CHUNKED = 0, 1, 2
# Chunked body sub-states: a size line, chunk data, the CRLF after it,
# trailer lines.
_C_SIZE, _C_DATA, _C_CRLF, _C_TRAILER = 0, 1, 2, 3


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
    """One parsed request.  header_list keeps the received order and case
    of the names, with the values decoded as UTF-8 (Latin-1 when that
    fails); body_io holds the body."""

    __slots__ = ("method", "target", "path", "version", "header_list",
                 "body_io", "keep_alive")

    def __init__(self, method, target, version, header_list, keep_alive):
        self.method = method
        self.target = target
        self.path = target.split("?", 1)[0]
        self.version = version
        self.header_list = header_list
        self.body_io = None
        self.keep_alive = keep_alive

    @property
    def body(self):
        """The body as bytes (a copy)."""
        return self.body_io.getvalue() if self.body_io is not None else b""

    def header(self, name, default=None):
        """Returns the last value of a header (name is case-insensitive)."""
        name = name.lower()
        for k, v in reversed(self.header_list):
            if k.lower() == name:
                return v
        return default

    def headers_dict(self):
        """The headers as fdk-python hands them over: keys lower-cased, the
        last value of a repeated header."""
        return dict((k.lower(), v) for k, v in self.header_list)


def _is_token(s):
    return bool(s) and all(c in _TOKEN for c in s)


def _text(raw):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _parse_head(head, max_body):
    """Parses a request head (bytes, without its blank line); returns the
    Request, its body framing ("length" or "chunked"), the length for
    "length", and whether the client waits for "100 Continue"."""
    lines = head.split(b"\n")
    lines = [ln[:-1] if ln.endswith(b"\r") else ln for ln in lines]
    first = lines[0].decode("latin-1")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not _is_token(parts[0]) or not parts[1]:
        raise HTTPError(400, "malformed request line %r" % first[:200])
    method, target, version = (p.decode("latin-1") for p in parts)
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
        if ln[:1] in (b" ", b"\t"):
            raise HTTPError(400, "folded header lines are not accepted")
        name, sep, value = ln.partition(b":")
        if not sep or not _is_token(name):
            raise HTTPError(400, "malformed header line %r"
                            % ln[:200].decode("latin-1"))
        header_list.append((name.decode("latin-1"),
                            _text(value.strip(b" \t"))))

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


def _sized_buffer(n):
    # An io.BytesIO of exactly n bytes, filled in place later: one copy of
    # the body in memory, and the object the function gets as data.
    b = io.BytesIO()
    if n:
        b.seek(n - 1)
        b.write(b"\0")
        b.seek(0)
    return b


class RequestReader(object):
    """Turns the bytes of one connection into requests, incrementally.

    feed() appends received bytes, recv_from() receives from a socket
    (into the body in place when it can); next_request() returns a
    complete Request, or None when more bytes are needed, and raises
    HTTPError for a request that must be refused.  wants_continue is set
    once when a client sent "Expect: 100-continue" and waits for the
    interim answer.  Buffered bytes never exceed about max_head plus one
    receive: a head, chunk framing and trailers are bounded by max_head.
    """

    def __init__(self, max_head=MAX_HEAD, max_body=1 << 30):
        self.max_head = max_head
        self.max_body = max_body
        self.buf = bytearray()
        self.state = _HEAD
        self.req = None
        self.body = None
        self.need = 0
        self.cstate = _C_SIZE
        self.size = 0
        self.trailer_bytes = 0
        self.wants_continue = False

    def feed(self, data):
        self.buf += data

    def pending(self):
        """True when some bytes of an unfinished request are buffered."""
        return self.state != _HEAD or len(self.buf) > 0

    def recv_from(self, sock, size):
        """Receives up to size bytes from sock; returns how many (0 at the
        end of the stream).  A body of known length goes straight into its
        buffer.  Raises what sock.recv() raises."""
        if self.state == _BODY_LENGTH and self.need > 0 and not self.buf:
            pos = self.body.tell()
            with self.body.getbuffer() as m:
                n = sock.recv_into(m[pos:pos + min(self.need, size)])
            self.body.seek(pos + n)
            self.need -= n
            return n
        data = sock.recv(size)
        self.buf += data
        return len(data)

    def _take_head(self):
        buf = self.buf
        # Tolerate blank lines before a request line (RFC 9112 2.2).
        skip = 0
        while buf.startswith(b"\r\n", skip) or buf.startswith(b"\n", skip):
            skip += 2 if buf[skip] == 13 else 1
        if skip:
            del buf[:skip]
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
        head = bytes(buf[:end])
        del buf[:end + skip]
        return head

    def _line(self, limit, what):
        # One line of chunk framing, consumed from the buffer, or None.
        buf = self.buf
        nl = buf.find(b"\n", 0, limit)
        if nl < 0:
            if len(buf) >= limit:
                raise HTTPError(400 if what == "size" else 431,
                                "chunk %s line is too long" % what)
            return None
        line = bytes(buf[:nl]).rstrip(b"\r")
        del buf[:nl + 1]
        return line

    def _take_chunked(self):
        buf = self.buf
        while True:
            if self.cstate == _C_DATA:
                if not buf:
                    return False
                take = min(len(buf), self.need)
                with memoryview(buf) as m:
                    self.body.write(m[:take])
                del buf[:take]
                self.need -= take
                if self.need:
                    return False
                self.cstate = _C_CRLF
            if self.cstate == _C_CRLF:
                if buf.startswith(b"\r\n"):
                    del buf[:2]
                elif buf.startswith(b"\n"):
                    del buf[:1]
                elif buf == b"\r" or not buf:
                    return False
                else:
                    raise HTTPError(400, "chunk data is not followed by CRLF")
                self.cstate = _C_SIZE
            if self.cstate == _C_SIZE:
                line = self._line(MAX_CHUNK_LINE, "size")
                if line is None:
                    return False
                size = line.split(b";", 1)[0].strip()
                if not size or not all(c in _HEX for c in size):
                    raise HTTPError(400, "invalid chunk size %r"
                                    % line[:40].decode("latin-1"))
                if len(size) > 15:
                    raise HTTPError(413, "chunk size %r is too large"
                                    % size.decode("latin-1"))
                n = int(size, 16)
                if n == 0:
                    self.cstate = _C_TRAILER
                    continue
                self.size += n
                if self.size > self.max_body:
                    raise HTTPError(413, "chunked body is over the limit "
                                    "of %d bytes" % self.max_body)
                self.need = n
                self.cstate = _C_DATA
                continue
            # Trailer lines are read and dropped, all of them together
            # bounded like a request head.
            left = self.max_head - self.trailer_bytes
            line = self._line(left + 1, "trailer")
            if line is None:
                if len(buf) > left:
                    raise HTTPError(431, "chunked trailers are larger than "
                                    "%d bytes" % self.max_head)
                return False
            self.trailer_bytes += len(line) + 1
            if self.trailer_bytes > self.max_head:
                raise HTTPError(431, "chunked trailers are larger than %d "
                                "bytes" % self.max_head)
            if line == b"":
                return True

    def next_request(self):
        if self.state == _HEAD:
            head = self._take_head()
            if head is None:
                return None
            req, framing, n, cont = _parse_head(head, self.max_body)
            self.req = req
            self.wants_continue = cont
            if framing == "chunked":
                self.state = _BODY_CHUNKED
                self.body = io.BytesIO()
                self.cstate = _C_SIZE
                self.size = 0
                self.trailer_bytes = 0
            else:
                self.state = _BODY_LENGTH
                self.body = _sized_buffer(n)
                self.need = n
        if self.state == _BODY_LENGTH:
            if self.need and self.buf:
                take = min(len(self.buf), self.need)
                with memoryview(self.buf) as m:
                    self.body.write(m[:take])
                del self.buf[:take]
                self.need -= take
            if self.need:
                return None
        elif not self._take_chunked():
            return None
        self.body.seek(0)
        req, self.req = self.req, None
        req.body_io, self.body = self.body, None
        self.state = _HEAD
        self.wants_continue = False
        return req


def _check(s, what):
    if "\r" in s or "\n" in s or "\0" in s:
        raise ValueError("%s %r would split the response" % (what, s[:80]))
    return s


def format_head(status, headers, keep_alive, version="HTTP/1.1",
                keep_alive_timeout=KEEP_ALIVE_TIMEOUT):
    """Returns the status line and headers of a response as bytes, laid
    out as fdk-python's server does: Connection (and Keep-Alive) first,
    then headers, a list of (name, value) pairs sent in their order and
    case, encoded as UTF-8.  A name or value with CR, LF or NUL raises
    ValueError instead of splitting the response."""
    out = ["%s %d %s\r\n" % (version, status, REASONS.get(status, "Unknown"))]
    if keep_alive:
        out.append("Connection: keep-alive\r\nKeep-Alive: %d\r\n"
                   % keep_alive_timeout)
    else:
        out.append("Connection: close\r\n")
    for name, value in headers:
        out.append("%s: %s\r\n" % (_check(str(name), "header name"),
                                   _check(str(value), "header value")))
    out.append("\r\n")
    return "".join(out).encode("utf-8")
