"""coldstart-fdk's request loop: Fn's http-stream contract on a unix socket.

coldstart.fdk.server makes the socket ready and hands it over here (in lazy
mode once the first connection is accepted); serve() does all of it itself,
for --warm eager and fdk.handle().  Calls are answered one request at a time
and run the function (loaded lazily, in the background or eagerly) under the
call's Fn-Deadline.  This module imports only C modules (_socket, _signal,
select) besides coldstart's own: asyncio comes in only when a handler
returns a coroutine.
"""

import io
import os
import sys
import time

import select

try:
    import _socket as _sock
except ImportError:  # pragma: no cover - every CPython has _socket
    import socket as _sock
try:
    import _signal as _sig
except ImportError:  # pragma: no cover
    import signal as _sig

from coldstart.fdk import context as _ctx
from coldstart.fdk import httpwire
from coldstart.fdk import response as _response
from coldstart.fdk import server as _entry
from coldstart.fdk.server import (DEFAULT_MAX_BODY, EXIT_FAILURE, EXIT_OK,
                                  EXIT_USAGE, ConfigError, _Terminate, log)

SEND_TIMEOUT = 60.0
MAX_CONNECTIONS = 64
RECV_SIZE = 256 * 1024

_HOP_HEADERS = frozenset((
    "content-length", "transfer-encoding", "connection", "keep-alive",
    _ctx.FN_HTTP_STATUS, _ctx.FN_FDK_VERSION, _ctx.FN_FDK_RUNTIME))


class _Deadline(BaseException):
    # A BaseException so that a handler's `except Exception` cannot hide it.
    pass


def _canonical(name):
    return "-".join(p[:1].upper() + p[1:] for p in name.split("-"))


def _encode_body(data):
    """Returns (bytes, default content type) for what a handler returned."""
    if data is None:
        return b"", None
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data), "application/octet-stream"
    if isinstance(data, str):
        return data.encode("utf-8"), "text/plain; charset=utf-8"
    if isinstance(data, (dict, list, tuple, int, float, bool)):
        import json
        return json.dumps(data).encode("utf-8"), "application/json"
    if hasattr(data, "getvalue"):
        return _encode_body(data.getvalue())
    raise TypeError("the function returned a %s, which cannot be sent; "
                    "return str, bytes, a dict or list (sent as JSON), None "
                    "or a response.Response" % type(data).__name__)


def _fdk_headers(status):
    return [("Fn-Http-Status", str(status)),
            ("Fn-Fdk-Version", _ctx.FDK_VERSION),
            ("Fn-Fdk-Runtime", _ctx.FDK_RUNTIME)]


def _error_reply(status, message):
    body = (message.rstrip("\n") + "\n").encode("utf-8", "replace")
    headers = [("Content-Type", "text/plain; charset=utf-8")]
    return status, headers + _fdk_headers(status), body


def _describe(exc):
    name = type(exc).__name__
    text = str(exc)
    return "%s: %s" % (name, text) if text else name


class _Conn(object):
    __slots__ = ("sock", "fd", "reader")

    def __init__(self, sock, max_body):
        self.sock = sock
        self.fd = sock.fileno()
        self.reader = httpwire.RequestReader(max_body=max_body)


class Server(object):
    """One listener and its connections.

    resolve() returns the function to call and may raise (a failed import):
    the call is then answered 502 and the next call tries again.
    """

    def __init__(self, resolve, path, phony, max_body=DEFAULT_MAX_BODY):
        self.resolve = resolve
        self.path = path
        self.phony = phony
        self.max_body = max_body
        self.lsock = None
        self.linked = False
        self.busy = False
        self.term_pending = False
        self.loop = None
        self.calls = 0

    def open(self):
        """Binds and listens on the phony socket; raises OSError."""
        s = _entry.listen(self.path, self.phony)
        s.setblocking(False)
        self.lsock = s

    def ready(self):
        """Links lsnr.sock to the phony socket: Fn's "ready" signal."""
        os.symlink(os.path.basename(self.phony), self.path)
        self.linked = True

    def close(self):
        _entry.close_listener(self.lsock, self.path, self.phony, self.linked)
        self.lsock = None
        self.linked = False

    def on_signal(self, signum, frame):
        if self.busy:
            self.term_pending = True
        else:
            raise _Terminate(signum)

    def _on_alarm(self, signum, frame):
        raise _Deadline()

    def _send(self, conn, data):
        conn.sock.settimeout(SEND_TIMEOUT)
        try:
            conn.sock.sendall(data)
        finally:
            conn.sock.setblocking(False)

    def _reply(self, conn, status, headers, body, keep_alive):
        head = httpwire.format_head(status, headers, len(body), keep_alive)
        if len(body) > 65536:
            self._send(conn, head)
            self._send(conn, body)
        else:
            self._send(conn, head + body)

    def _run_coroutine(self, coro, deadline):
        import asyncio
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
        aw = coro
        if deadline is not None:
            remaining = deadline - time.time()
            # The alarm stays as a backstop for a coroutine that blocks.
            _sig.setitimer(_sig.ITIMER_REAL, max(remaining, 0.001) + 1.0)
            aw = asyncio.wait_for(coro, max(remaining, 0.001))
        try:
            return self.loop.run_until_complete(aw)
        except asyncio.TimeoutError:
            if deadline is not None and time.time() >= deadline:
                raise _Deadline()
            raise
        except _Deadline:
            # The alarm interrupted the loop itself: start a fresh one.
            self.loop = None
            raise

    def _build(self, ctx, result):
        if isinstance(result, _response.Response) or (
                hasattr(result, "status") and hasattr(result, "body") and
                hasattr(result, "context") and callable(result.body)):
            status = result.status()
            data = result.body()
            rctx = result.context() or ctx
        else:
            status = getattr(ctx, "_response_status", None) or 200
            data = result
            rctx = ctx
        if isinstance(status, bool) or not isinstance(status, int) or \
                not 100 <= status <= 599:
            raise ValueError("invalid status code %r" % (status,))
        body, default_type = _encode_body(data)
        gateway = getattr(rctx, "_gateway", False)
        headers = []
        has_type = False
        for k, v in (rctx.GetResponseHeaders() or {}).items():
            k = str(k).lower()
            if k in _HOP_HEADERS:
                continue
            if k == _ctx.CONTENT_TYPE:
                has_type = True
            elif gateway and not k.startswith("fn-"):
                k = _ctx.FN_HTTP_PREFIX + k
            for one in (v if isinstance(v, (list, tuple)) else [v]):
                headers.append((_canonical(k), str(one)))
        if not has_type and default_type:
            headers.append(("Content-Type", default_type))
        # Fn's agent kills the container on any status but 200, 502 and
        # 504, so the function's own status travels in Fn-Http-Status.
        return 200, headers + _fdk_headers(status), body

    def _logframe(self, ctx):
        name = os.environ.get("FN_LOGFRAME_NAME")
        hdr = os.environ.get("FN_LOGFRAME_HDR")
        if not name or not hdr:
            return
        value = ctx.Headers().get(hdr.lower())
        if value is not None:
            line = "\n%s=%s\n" % (name, value)
            for f in (sys.stdout, sys.stderr):
                try:
                    f.write(line)
                    f.flush()
                except (OSError, ValueError):
                    pass

    def call(self, req):
        """Runs the function for one POST /call; returns (status, headers,
        body) for the wire: 200, or 502 when the function failed, or 504
        when the deadline passed."""
        self.calls += 1
        ctx = _ctx.context_from_request(req)
        self._logframe(ctx)
        deadline = None
        text = req.header(_ctx.FN_DEADLINE)
        if text:
            try:
                deadline = _ctx.parse_rfc3339(text)
            except ValueError as e:
                log("ignoring Fn-Deadline: %s" % e)
        if deadline is not None and deadline <= time.time():
            return _error_reply(504, "deadline %s passed before the call "
                                "started" % text)
        try:
            try:
                if deadline is not None:
                    # A zero interval would disarm the timer instead.
                    _sig.setitimer(_sig.ITIMER_REAL,
                                   max(deadline - time.time(), 0.001))
                try:
                    fn = self.resolve()
                except Exception as e:
                    log("cannot load the function:")
                    _print_exception()
                    return _error_reply(502, "cannot load the function: %s"
                                        % _describe(e))
                try:
                    result = fn(ctx, data=io.BytesIO(req.body))
                    if hasattr(result, "__await__"):
                        result = self._run_coroutine(result, deadline)
                    return self._build(ctx, result)
                except Exception as e:
                    log("the function failed:")
                    _print_exception()
                    return _error_reply(502, "the function failed: %s"
                                        % _describe(e))
            finally:
                if deadline is not None:
                    _sig.setitimer(_sig.ITIMER_REAL, 0)
        except _Deadline:
            log("call %s passed its deadline %s" % (ctx.CallID(), text))
            return _error_reply(504, "the function did not finish before its "
                                "deadline %s" % text)

    def _respond(self, conn, req):
        keep = req.keep_alive
        if req.path != "/call":
            status, headers, body = _error_reply(
                404, "no such path %r; Fn calls POST /call" % req.path)
        elif req.method != "POST":
            status, headers, body = _error_reply(
                405, "method %s not allowed on /call; use POST" % req.method)
            headers.append(("Allow", "POST"))
        else:
            status, headers, body = self.call(req)
        try:
            self._reply(conn, status, headers, body, keep)
        except ValueError as e:
            # A header the function set cannot be sent as it is.
            status, headers, body = _error_reply(
                502, "the function's response cannot be sent: %s" % e)
            self._reply(conn, status, headers, body, keep)
        return keep

    def _close_conn(self, poller, conns, conn):
        try:
            poller.unregister(conn.fd)
        except (KeyError, ValueError):
            pass
        conns.pop(conn.fd, None)
        try:
            conn.sock.close()
        except OSError:
            pass

    def _accept(self, poller, conns):
        while True:
            try:
                fd, _ = self.lsock._accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                log("accept failed: %s" % e)
                return
            self._add_conn(poller, conns, fd)

    def _add_conn(self, poller, conns, fd):
        s = _sock.socket(_sock.AF_UNIX, _sock.SOCK_STREAM, 0, fd)
        if len(conns) >= MAX_CONNECTIONS:
            s.close()
            return
        s.setblocking(False)
        conn = _Conn(s, self.max_body)
        conns[conn.fd] = conn
        poller.register(conn.fd, select.POLLIN)

    def _discard_input(self, conn):
        # Closing a unix socket with unread bytes resets the peer, which
        # may then lose the error reply it has not read yet: end our side,
        # then read and drop what the client has already sent.
        conn.sock.shutdown(_sock.SHUT_WR)
        left = 16 * RECV_SIZE
        while left > 0:
            try:
                data = conn.sock.recv(RECV_SIZE)
            except (BlockingIOError, InterruptedError):
                return
            if not data:
                return
            left -= len(data)

    def _service(self, conn):
        """Reads from one connection and answers what is complete; returns
        False when the connection is to be closed."""
        try:
            data = conn.sock.recv(RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            return False
        if not data:
            if conn.reader.pending():
                log("client closed the connection in the middle of a "
                    "request")
            return False
        conn.reader.feed(data)
        while True:
            try:
                req = conn.reader.next_request()
            except httpwire.HTTPError as e:
                log("refusing a request: %d %s" % (e.status, e.message))
                status, headers, body = _error_reply(e.status, e.message)
                try:
                    self._reply(conn, status, headers, body, False)
                    self._discard_input(conn)
                except OSError:
                    pass
                return False
            if req is None:
                if conn.reader.wants_continue:
                    conn.reader.wants_continue = False
                    self._send(conn, b"HTTP/1.1 100 Continue\r\n\r\n")
                return True
            self.busy = True
            try:
                keep = self._respond(conn, req)
            finally:
                self.busy = False
            if self.calls == 1:
                _entry.first_response()
            if self.term_pending:
                raise _Terminate(0)
            if not keep:
                return False

    def serve_forever(self, first=None):
        """Answers calls until an exception (_Terminate) ends it; first is
        an already accepted connection's descriptor, or None."""
        poller = select.poll()
        lfd = self.lsock.fileno()
        poller.register(lfd, select.POLLIN)
        # A signal that lands just before poll() enters the kernel would
        # only run its Python handler once poll() returns, perhaps never;
        # the wakeup pipe makes that poll() return at once.
        wake, old_wake = _entry.wakeup_pipe()
        poller.register(wake[0], select.POLLIN)
        conns = {}
        try:
            if first is not None:
                self._add_conn(poller, conns, first)
            while True:
                for fd, ev in poller.poll():
                    if fd == lfd:
                        self._accept(poller, conns)
                        continue
                    if fd == wake[0]:
                        _entry.drain(fd)
                        continue
                    conn = conns.get(fd)
                    if conn is None:
                        continue
                    try:
                        ok = self._service(conn)
                    except OSError as e:
                        log("connection error: %s" % e)
                        ok = False
                    if not ok:
                        self._close_conn(poller, conns, conn)
        finally:
            for conn in list(conns.values()):
                self._close_conn(poller, conns, conn)
            _entry.close_wakeup_pipe(wake, old_wake)


def _print_exception():
    import traceback
    try:
        traceback.print_exc(file=sys.stderr)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _warm_in_background(resolve, what):
    def run():
        # Deadline alarms and SIGTERM belong to the main thread.
        try:
            _sig.pthread_sigmask(_sig.SIG_BLOCK, {_sig.SIGALRM, _sig.SIGTERM,
                                                  _sig.SIGINT})
        except (AttributeError, OSError):
            pass
        try:
            resolve()
        except BaseException as e:
            log("background import of %s failed (the next call retries): "
                "%s" % (what, _describe(e)))
    import _thread
    _thread.start_new_thread(run, ())


def serve(resolve, warm="lazy", max_body=DEFAULT_MAX_BODY, what="function",
          environ=None):
    """Runs the server until SIGTERM or SIGINT; returns an exit status.

    resolve() returns the function to call; what names it in messages.
    With warm="eager" resolve() runs before the socket is ready.
    """
    env = os.environ if environ is None else environ
    try:
        path, phony = _entry.check_environ(env)
    except ConfigError as e:
        log(str(e))
        return EXIT_USAGE

    _entry.active = True
    server = Server(resolve, path, phony, max_body=max_body)
    old = {}
    try:
        for signum in (_sig.SIGTERM, _sig.SIGINT):
            old[signum] = _sig.signal(signum, server.on_signal)
        _sig.signal(_sig.SIGALRM, server._on_alarm)
        if warm == "eager":
            try:
                resolve()
            except Exception as e:
                log("cannot import %s (calls will retry and answer 502): %s"
                    % (what, _describe(e)))
                _print_exception()
        try:
            server.open()
            server.ready()
        except OSError as e:
            log("cannot listen on %r: %s" % (path, e))
            return EXIT_FAILURE
        if warm == "background":
            _warm_in_background(resolve, what)
        server.serve_forever()
    except _Terminate:
        return EXIT_OK
    finally:
        server.close()
        _entry.active = False
        for signum, handler in old.items():
            try:
                _sig.signal(signum, handler)
            except (OSError, ValueError, TypeError):
                pass
    return EXIT_OK


def run(func, handler, warm, max_body):
    """The coldstart-fdk command from its parsed arguments, everything
    imported before the socket is ready (used for --warm eager)."""
    from coldstart import lazy
    target = lazy.LazyModule(func)
    if target.is_path and not os.path.isfile(target.path):
        log("no such function file: %r" % func)
        return EXIT_USAGE
    fn = lazy.LazyFunction(target, attr=handler)
    return serve(fn.resolve, warm=warm, max_body=max_body,
                 what="%s (%s)" % (func, handler))


def adopt(lsock, path, phony, first, func, handler, warm, max_body):
    """Serves on a socket coldstart.fdk.server has made ready (bound,
    linked, blocking, SIGTERM and SIGINT raising _Terminate): first is the
    descriptor of an accepted connection or None.  Returns only through an
    exception; the caller closes the socket and removes the links."""
    from coldstart import lazy
    fn = lazy.LazyFunction(lazy.LazyModule(func), attr=handler)
    server = Server(fn.resolve, path, phony, max_body=max_body)
    lsock.setblocking(False)
    server.lsock = lsock
    server.linked = True
    for signum in (_sig.SIGTERM, _sig.SIGINT):
        _sig.signal(signum, server.on_signal)
    _sig.signal(_sig.SIGALRM, server._on_alarm)
    if warm == "background":
        _warm_in_background(fn.resolve, "%s (%s)" % (func, handler))
    server.serve_forever(first)
    return EXIT_OK
