"""coldstart-fdk's request loop: Fn's http-stream contract on a unix socket,
answering as fdk-python 0.1.117 answers.

coldstart.fdk.server makes the socket ready and hands it over here (in lazy
mode once the first connection is accepted); serve() does all of it itself,
for --warm eager and fdk.handle().  Both build on the coldstart.fdk package
(constants, exceptions, the listener), not on each other.

One thread serves every connection with poll(): reads never block, and
responses are sent without blocking, so a client that sends half a request
or reads nothing of a large response cannot hold up the others; idle
connections are closed after a while.  When all slots are taken the server
stops accepting (new callers wait in the listen backlog) until a slot
frees, or until a connection has been idle for EVICT_AFTER: that one makes
room, unless it has sent something meanwhile, which is then answered.  Calls run one at a time, the function loaded on
the first call (or in the background, or eagerly), under the call's
Fn-Deadline.  Once a function uses asyncio, one event loop lives across
calls and runs whenever the server is idle, so tasks a handler leaves
behind keep running.  This module imports only C modules (_socket,
_signal, select) besides coldstart's own: logging comes in on the first
call, asyncio only when a handler needs it.
"""

import os
import sys
import time

import select

try:
    import _socket as _sock
except ImportError:  # pragma: no cover - every CPython has _socket
    import socket as _sock
# The import system's own modules, always loaded.
_bootstrap = sys.modules["_frozen_importlib"]
_bootstrap_external = sys.modules["_frozen_importlib_external"]

try:
    import _signal as _sig
except ImportError:  # pragma: no cover
    import signal as _sig

from coldstart import fdk as _fdk
from coldstart.fdk import (DEFAULT_MAX_BODY, EXIT_FAILURE, EXIT_OK,
                           EXIT_USAGE, ConfigError, Terminate, log)
from coldstart.fdk import context as _ctx
from coldstart.fdk import httpwire
from coldstart.fdk import logs as _log
from coldstart.fdk import response as _response

MAX_CONNECTIONS = 64
RECV_SIZE = 256 * 1024


def _env_seconds(name, default):
    try:
        v = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return v if v > 0 else default


# A connection with nothing to do is closed after IDLE_TIMEOUT (what the
# Keep-Alive header announces); one that started a request and does not
# finish it within REQUEST_TIMEOUT, or leaves a response unread for
# SEND_TIMEOUT, is dropped.
IDLE_TIMEOUT = _env_seconds("COLDSTART_FDK_IDLE_TIMEOUT",
                            float(httpwire.KEEP_ALIVE_TIMEOUT))
REQUEST_TIMEOUT = _env_seconds("COLDSTART_FDK_REQUEST_TIMEOUT", 60.0)
SEND_TIMEOUT = _env_seconds("COLDSTART_FDK_SEND_TIMEOUT", 60.0)
# With every slot taken and a caller waiting, a connection idle this long
# is closed to make room.  Closing one that is busy between two requests
# would lose the request its client may be writing at that moment; one idle
# for a second is as safe to close as after IDLE_TIMEOUT.
EVICT_AFTER = _env_seconds("COLDSTART_FDK_EVICT_AFTER", 1.0)
# A handler that swallows the deadline (a bare except) is interrupted again
# every DEADLINE_REPEAT s; DEADLINE_GRACE s after the deadline the server
# answers 504 and exits, since it cannot get the thread back.  SIGTERM
# during a call lets it finish for up to TERM_GRACE s.
DEADLINE_REPEAT = 0.25
DEADLINE_GRACE = _env_seconds("COLDSTART_FDK_DEADLINE_GRACE", 1.0)
TERM_GRACE = _env_seconds("COLDSTART_FDK_TERM_GRACE", 10.0)
# A coroutine is timed out by asyncio.wait_for(); the alarm is only a
# backstop for one that blocks the loop, this much later.
COROUTINE_BACKSTOP = 1.0

_FRAMING = frozenset(("content-length", "transfer-encoding", "connection",
                      "keep-alive"))
_TEXT_TYPE = "text/plain; charset=utf-8"


class _Deadline(BaseException):
    # A BaseException so that a handler's `except Exception` cannot hide it.
    pass


def _describe(exc):
    name = type(exc).__name__
    text = str(exc)
    return "%s: %s" % (name, text) if text else name


def _exit_status(exc):
    # What `raise SystemExit(code)` would make the interpreter exit with.
    code = exc.code
    if code is None:
        return EXIT_OK
    if isinstance(code, int):
        return code & 0xff
    try:
        sys.stderr.write("%s\n" % code)
    except (OSError, ValueError):
        pass
    return EXIT_FAILURE


# --- the collector during the first call ------------------------------

# With a start-up plan applied, the cyclic collector's first threshold is
# raised during the first call (coldstart.fdk.hold_gc, docs/plan.md, "The
# collector during the first call"); the server puts it back once the first
# response is sent.
GC_HOLD_THRESHOLD = _fdk.GC_HOLD_THRESHOLD


def _plain_reply(status, message, extra=()):
    """One of coldstart-fdk's own answers (to requests it refuses)."""
    body = (message.rstrip("\n") + "\n").encode("utf-8", "replace")
    headers = [("content-type", _TEXT_TYPE)] + list(extra) + [
        ("fn-fdk-version", _ctx.FDK_VERSION),
        ("fn-fdk-runtime", _ctx.FDK_RUNTIME),
        ("content-length", str(len(body)))]
    return status, headers, body


def _app_error():
    # What fdk-python's server answers when building the call's context
    # or the response fails outside the function.
    body = b"An error occurred while handling an error"
    return 502, [("content-length", str(len(body))),
                 ("content-type", "text/plain")], body


def _wire(resp):
    """(status, header list, body) on the wire for a Response, as
    fdk-python sends it: 200, 502 and 504 as they are and any other status
    as 200, the context's response headers in their order under lower-case
    names, then Content-Length and a default Content-Type of text/plain.
    Unlike fdk-python, a list value goes out as one header per item, and
    framing headers the function set (Content-Length, Transfer-Encoding,
    Connection, Keep-Alive) are left out."""
    stored = resp.context().GetResponseHeaders()
    status = resp.status()
    if status not in (200, 502, 504):
        status = 200
    body = resp.body_bytes()
    merged = {}
    for k, v in stored.items():
        merged[k.lower() if isinstance(k, str) else k] = v
    headers = []
    for k, v in merged.items():
        name = str(k)
        if name in _FRAMING:
            continue
        for one in (v if isinstance(v, list) else (v,)):
            headers.append((name, str(one)))
    headers.append(("content-length", str(len(body))))
    if "content-type" not in merged:
        headers.append(("content-type", "text/plain"))
    return status, headers, body


def _import_module(name):
    # importlib.import_module(name) without importing importlib for it.
    if name.startswith("."):
        import importlib
        return importlib.import_module(name)
    return _bootstrap._gcd_import(name)


class _Function(object):
    """The function to call: attribute attr of a file or module, loaded
    once on first use from any thread.

    A file is loaded as module <base name>, registered in sys.modules under
    that name unless the name is already taken or names another module
    (time.py, json.py): such a file is loaded without being registered,
    so it and the modules it imports keep working.  Its directory is
    appended to sys.path, so it can import files beside it without hiding
    the standard library.  A failed load is retried by the next call.
    """

    def __init__(self, target, attr="handler"):
        self.target = target
        self.attr = attr
        self.is_path = target.endswith(".py") or os.sep in target
        self._module = None
        self._loading = False
        import _thread
        self._lock = _thread.RLock()

    def _load_file(self):
        path = self.target
        name = os.path.splitext(os.path.basename(path))[0]
        register = name not in sys.modules
        if register:
            # importlib.util.find_spec(name), without importing
            # importlib.util (contextlib, functools, collections, ...)
            # for it: the import system's own functions are loaded.
            if "." in name:
                import importlib.util
                spec = importlib.util.find_spec(name)
            else:
                spec = _bootstrap._find_spec(name, None)
            register = spec is None or (
                spec.origin is not None and
                os.path.abspath(spec.origin) == os.path.abspath(path))
        spec = _bootstrap_external.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError("cannot load %r: not a Python source file"
                              % path, name=name, path=path)
        plan = sys.modules.get("coldstart.plan")
        if plan is not None and \
                type(spec.loader) is _bootstrap_external.SourceFileLoader:
            # Under a plan that recorded this file, its code comes from the
            # plan's archive: compiling it would cost more than the rest of
            # the first call (the compiler's first use builds its AST types).
            loader = plan.archived_loader(name, spec.origin)
            if loader is not None:
                spec.loader = loader
        d = os.path.dirname(os.path.abspath(path))
        if d not in sys.path:
            sys.path.append(d)
        mod = _bootstrap.module_from_spec(spec)
        if register:
            sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            if register and sys.modules.get(name) is mod:
                del sys.modules[name]
            raise
        return sys.modules.get(name, mod) if register else mod

    def module(self):
        mod = self._module
        if mod is not None:
            return mod
        # Waiting in short slices keeps the main thread responsive to
        # signals (deadline alarms, SIGTERM) while another thread imports.
        while not self._lock.acquire(True, 0.05):
            pass
        try:
            if self._module is None:
                if self._loading:
                    raise ImportError("circular use of %r while it loads"
                                      % self.target)
                self._loading = True
                try:
                    if self.is_path:
                        self._module = self._load_file()
                    else:
                        self._module = _import_module(self.target)
                finally:
                    self._loading = False
            return self._module
        finally:
            self._lock.release()

    def handler(self):
        return getattr(self.module(), self.attr)


class _Call(object):
    __slots__ = ("conn", "deadline", "deadline_text", "fired", "backstop",
                 "ctx", "version", "returned")

    def __init__(self, conn, deadline, deadline_text, version):
        self.conn = conn
        self.deadline = deadline
        self.deadline_text = deadline_text
        self.fired = 0
        self.backstop = 0.0
        self.ctx = None
        self.version = version
        # Set once the handler has returned: its deadline no longer counts.
        self.returned = False


class _Conn(object):
    __slots__ = ("sock", "fd", "reader", "out", "since", "started",
                 "closing")

    def __init__(self, sock, max_body, now):
        self.sock = sock
        self.fd = sock.fileno()
        self.reader = httpwire.RequestReader(max_body=max_body)
        self.out = []
        self.since = now
        self.started = None
        self.closing = False

    def idle(self):
        return not self.out and not self.reader.pending()


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
        self.current = None
        self.term_at = None
        self.stop_status = None
        self.stop_signal = None
        self.aloop = None
        self.calls = 0
        self.conns = {}
        self.masks = {}
        self.poller = None
        self.lfd = None  # the listener's descriptor, in masks while accepting
        self.run_in_context = None
        self.gc_held = None
        self.first_out = False
        self.first_headers = None  # the first call's, for coldstart.otel

    # --- the listener -------------------------------------------------

    def open(self):
        """Binds and listens on the phony socket; raises OSError or
        ConfigError."""
        s = _fdk.listen(self.path, self.phony)
        s.setblocking(False)
        self.lsock = s

    def ready(self):
        """Links lsnr.sock to the phony socket: Fn's "ready" signal."""
        _fdk.link(self.path, self.phony)

    def close(self):
        _fdk.close_listener(self.lsock, self.path, self.phony)
        self.lsock = None

    # --- signals and the deadline timer -------------------------------

    def on_signal(self, signum, frame):
        c = self.current
        if c is None:
            if self.poller is None:
                # Not serving yet: only the start-up runs, stop it now.
                raise Terminate(signum)
            # Raised here, the exception could land in whatever Python code
            # the main thread runs: an asyncio callback (asyncio logs it and
            # runs on), a weakref callback or __del__ in a collection (Python
            # prints "Exception ignored" and the server runs on).  The loop
            # raises it instead, woken by the wakeup pipe.
            self.stop_signal = signum
            loop = self.aloop
            if loop is not None and loop.is_running():
                loop.stop()
            return
        if self.term_at is not None and not c.returned:
            # A second signal while the handler runs: stop now.
            self._abandon(c, 502, "the server was stopped during the call",
                          EXIT_OK)
        self.term_at = time.time() + TERM_GRACE
        self._arm()

    def _arm(self):
        """Sets the interval timer to the next event of the running call:
        its deadline, a repeat of a swallowed one, the end of the grace
        after it or after SIGTERM."""
        c = self.current
        if c is None or c.returned:
            _sig.setitimer(_sig.ITIMER_REAL, 0)
            return
        times = []
        if c.deadline is not None:
            if not c.fired:
                times.append(c.deadline + c.backstop)
            else:
                times.append(min(time.time() + DEADLINE_REPEAT,
                                 c.deadline + c.backstop + DEADLINE_GRACE))
        if self.term_at is not None:
            times.append(self.term_at)
        if not times:
            _sig.setitimer(_sig.ITIMER_REAL, 0)
            return
        # A zero interval would disarm the timer instead.
        _sig.setitimer(_sig.ITIMER_REAL, max(min(times) - time.time(), 0.001))

    def _on_alarm(self, signum, frame):
        c = self.current
        if c is None or c.returned:
            return
        now = time.time()
        if self.term_at is not None and now >= self.term_at:
            self._abandon(c, 502, "the server was stopped and the function "
                          "did not return within %g s" % TERM_GRACE, EXIT_OK)
        if c.deadline is not None and now >= c.deadline + c.backstop:
            if c.fired and now >= c.deadline + c.backstop + DEADLINE_GRACE:
                self._abandon(c, 504, "the function did not finish before "
                              "its deadline %s and did not stop"
                              % c.deadline_text, EXIT_FAILURE)
            c.fired += 1
            self._arm()
            raise _Deadline()
        self._arm()

    def _abandon(self, c, status, message, code):
        """Gives up on a call whose handler does not return: answers it,
        removes the listener and exits the process with code."""
        _sig.setitimer(_sig.ITIMER_REAL, 0)
        log("%s; exiting with status %d" % (message, code))
        try:
            if c.ctx is not None:
                reply = _wire(_response.dispatch_error(c.ctx, status,
                                                       message))
            else:
                reply = _plain_reply(status, message)
            head = httpwire.format_head(reply[0], reply[1], False, c.version)
            c.conn.sock.settimeout(1.0)
            c.conn.sock.sendall(b"".join(c.conn.out) + head + reply[2])
        except BaseException:
            pass
        try:
            self.close()
        except BaseException:
            pass
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except BaseException:
                pass
        os._exit(code)

    # --- connections --------------------------------------------------

    def _watch(self, conn):
        mask = select.POLLOUT if conn.out else select.POLLIN
        if self.masks.get(conn.fd) != mask:
            self.masks[conn.fd] = mask
            self.poller.register(conn.fd, mask)

    def _close_conn(self, conn):
        try:
            self.poller.unregister(conn.fd)
        except (KeyError, ValueError):
            pass
        self.masks.pop(conn.fd, None)
        self.conns.pop(conn.fd, None)
        try:
            conn.sock.close()
        except OSError:
            pass

    def _accept(self):
        while True:
            if len(self.conns) >= MAX_CONNECTIONS and not self._make_room():
                # Full: the caller waits in the backlog; poll() stops
                # reporting the listener until a slot frees or a
                # connection has been idle for EVICT_AFTER.
                self._pause_accept()
                return
            try:
                fd, _ = self.lsock._accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                log("accept failed: %s" % e)
                return
            self._add_conn(fd)

    def _has_input(self, conn):
        try:
            return bool(conn.sock.recv(1, _sock.MSG_PEEK | _sock.MSG_DONTWAIT))
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return True  # an error to read and report, not a quiet one

    def _evictable(self, now):
        """The connection idle for longest, if for EVICT_AFTER or more."""
        best = None
        for c in self.conns.values():
            if c.idle() and now - c.since >= EVICT_AFTER and \
                    (best is None or c.since < best.since):
                best = c
        return best

    def _make_room(self):
        """Closes a connection idle for EVICT_AFTER to make room; False
        when there is none.  One whose client has written meanwhile is
        served instead (its request would be lost with it)."""
        now = time.time()
        while True:
            victim = self._evictable(now)
            if victim is None:
                return False
            if not self._has_input(victim):
                self._close_conn(victim)
                return True
            try:
                ok = self._service(victim)
            except OSError as e:
                log("connection error: %s" % e)
                ok = False
            if not ok:
                self._close_conn(victim)
                return True

    def _pause_accept(self):
        if self.lfd is not None and self.lfd in self.masks:
            self.poller.unregister(self.lfd)
            del self.masks[self.lfd]

    def _resume_accept(self, now):
        """Listens again once a slot is free or can be made."""
        if self.lfd is None or self.lfd in self.masks:
            return
        if len(self.conns) < MAX_CONNECTIONS or self._evictable(now):
            self.poller.register(self.lfd, select.POLLIN)
            self.masks[self.lfd] = select.POLLIN

    def _add_conn(self, fd):
        s = _sock.socket(_sock.AF_UNIX, _sock.SOCK_STREAM, 0, fd)
        s.setblocking(False)
        conn = _Conn(s, self.max_body, time.time())
        self.conns[conn.fd] = conn
        self._watch(conn)

    def _flush(self, conn):
        """Sends what the connection has pending, without blocking; returns
        False when the connection is to be closed."""
        while conn.out:
            try:
                n = conn.sock.sendmsg(conn.out[:16])
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                return False
            conn.since = time.time()
            while n and conn.out:
                first = conn.out[0]
                if n >= len(first):
                    n -= len(first)
                    conn.out.pop(0)
                else:
                    conn.out[0] = first[n:]
                    n = 0
        if self.first_out and not conn.out:
            self._first_response_sent()
        self._watch(conn)
        return True

    def _first_response_sent(self):
        # The collector runs as it did, and a start-up plan's --warm
        # background begins (its thread would otherwise hold the GIL while
        # the response waits to be sent).
        self.first_out = False
        if self.gc_held is not None:
            _fdk.release_gc(self.gc_held, responded=True)
            self.gc_held = None
        if "coldstart.otel" in sys.modules:
            # Its trace is parented to the first call's B3/W3C context.
            sys.modules["coldstart.otel"].responded(self.first_headers)
            self.first_headers = None
        if "coldstart.plan" in sys.modules:
            sys.modules["coldstart.plan"].responded()

    def _discard_input(self, conn):
        # Closing a unix socket with unread bytes resets the peer, which
        # may then lose the error reply it has not read yet: end our side,
        # then read and drop what the client has already sent.
        try:
            conn.sock.shutdown(_sock.SHUT_WR)
            left = 16 * RECV_SIZE
            while left > 0:
                data = conn.sock.recv(RECV_SIZE)
                if not data:
                    return
                left -= len(data)
        except OSError:
            return

    def _queue(self, conn, status, headers, body, keep, version):
        head = httpwire.format_head(status, headers, keep, version,
                                    max(int(IDLE_TIMEOUT), 1))
        if len(body) < 65536:
            conn.out.append(memoryview(head + body))
        else:
            conn.out.append(memoryview(head))
            conn.out.append(memoryview(body))
        if not keep:
            conn.closing = True

    def _service(self, conn):
        """Reads from one connection and answers what is complete; returns
        False when the connection is to be closed."""
        was_idle = not conn.reader.pending()
        try:
            n = conn.reader.recv_from(conn.sock, RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            return False
        if not n:
            if conn.reader.pending():
                log("client closed the connection in the middle of a "
                    "request")
            return False
        conn.since = time.time()
        if was_idle:
            conn.started = conn.since
        return self._process(conn)

    def _process(self, conn):
        """Answers the complete requests buffered on a connection while its
        output does not back up; returns False when it is to be closed."""
        while True:
            if conn.out:
                if not self._flush(conn):
                    return False
                if conn.out:
                    return True
            if self.stop_signal is not None:
                # Stopped between calls: what was answered is sent first.
                raise Terminate(self.stop_signal)
            if conn.closing:
                self._discard_input(conn)
                return False
            try:
                req = conn.reader.next_request()
            except httpwire.HTTPError as e:
                log("refusing a request: %d %s" % (e.status, e.message))
                status, headers, body = _plain_reply(e.status, e.message)
                self._queue(conn, status, headers, body, False, "HTTP/1.1")
                continue
            if req is None:
                if conn.reader.wants_continue:
                    conn.reader.wants_continue = False
                    conn.out.append(memoryview(
                        b"HTTP/1.1 100 Continue\r\n\r\n"))
                    continue
                self._watch(conn)
                return True
            first = not self.calls
            if first and self.gc_held is None:
                self.gc_held = _fdk.hold_gc()
            self._respond(conn, req)
            if first and self.calls == 1:
                # What waits for the first response begins once it is sent.
                self.first_out = True
            conn.started = time.time() if conn.reader.pending() else None
            if self.stop_status is not None or self.term_at is not None:
                self._finish_then_stop(conn)

    def _finish_then_stop(self, conn):
        # The call that was running when SIGTERM came (or that called
        # sys.exit()) is answered before the server stops.
        conn.sock.settimeout(5.0)
        try:
            conn.sock.sendall(b"".join(conn.out))
        except OSError:
            pass
        conn.out = []
        status = EXIT_OK if self.stop_status is None else self.stop_status
        raise Terminate(0, status)

    def _respond(self, conn, req):
        keep = req.keep_alive
        if req.path != "/call":
            reply = _plain_reply(404, "no such path %r; Fn calls POST /call"
                                 % req.path)
        elif req.method != "POST":
            reply = _plain_reply(405, "method %s not allowed on /call; use "
                                 "POST" % req.method, [("allow", "POST")])
        else:
            reply = self.call(conn, req)
        try:
            self._queue(conn, reply[0], reply[1], reply[2], keep,
                        req.version)
        except ValueError as e:
            # A header the function set cannot be sent as it is.
            _log.get_request_log().error(
                "the function's response cannot be sent: %s" % e)
            reply = _plain_reply(502, "the function's response cannot be "
                                 "sent: %s" % e)
            self._queue(conn, reply[0], reply[1], reply[2], keep,
                        req.version)

    # --- calls --------------------------------------------------------

    def _logframe(self, headers):
        name = os.environ.get("FN_LOGFRAME_NAME")
        hdr = os.environ.get("FN_LOGFRAME_HDR")
        if name and hdr and hdr.lower() in headers:
            line = "\n{}={}\n".format(name, headers.get(hdr.lower()))
            for f in (sys.stderr, sys.stdout):
                try:
                    print(line, file=f, flush=True)
                except (OSError, ValueError):
                    pass

    def call(self, conn, req):
        """Runs the function for one POST /call; returns (status, headers,
        body) for the wire."""
        self.calls += 1
        _log.setup()
        if self.run_in_context is None:
            import contextvars
            self.run_in_context = contextvars.copy_context
        headers = req.headers_dict()
        if self.calls == 1:
            self.first_headers = headers
        self._logframe(headers)
        # Each call runs in a fresh copy of the server's context, like
        # fdk-python's per-request task: the call id set for logging stays
        # with it and the tasks it starts.
        return self.run_in_context().run(self._call, conn, req, headers)

    def _call(self, conn, req, headers):
        text = headers.get(_ctx.FN_DEADLINE)
        deadline = None
        if text:
            try:
                deadline = _ctx.parse_rfc3339(text)
            except ValueError as e:
                log("ignoring Fn-Deadline: %s" % e)
        c = _Call(conn, deadline, text, req.version)
        self.current = c
        try:
            try:
                _log.debug("in handle_request")
                ctx, data = _ctx.context_from_format(
                    _ctx.HTTPSTREAM, headers=headers, data=req.body_io)
                _log.set_request_id(ctx.CallID())
                _log.debug("context provisioned")
                c.ctx = ctx
            except Exception:
                return _app_error()
            resp = self._run(c, ctx, data)
            self._adopt_loop()
            _log.debug("request execution completed")
            try:
                return _wire(resp)
            except Exception:
                return _app_error()
        finally:
            self.current = None
            _sig.setitimer(_sig.ITIMER_REAL, 0)

    def _run(self, c, ctx, data):
        """Calls the function; returns its Response, or the error Response
        fdk-python would make of a failure."""
        if c.deadline is not None and c.deadline <= time.time():
            msg = "deadline %s passed before the call started" % \
                c.deadline_text
            _log.get_request_log().error(msg + ":")
            return _response.dispatch_error(ctx, 504, msg)
        failure = None
        try:
            try:
                self._arm()
                fn = self.resolve()
                self._current_loop()
                result = fn(ctx, data=data)
                if type(result).__name__ == "coroutine" and \
                        hasattr(result, "cr_frame"):
                    result = self._run_coroutine(c, result)
            finally:
                c.returned = True
                _sig.setitimer(_sig.ITIMER_REAL, 0)
            _log.debug("function result obtained")
            if c.fired:
                # The handler caught the deadline's exception and returned.
                raise _Deadline()
            return _response.to_response(ctx, result)
        except _Deadline as e:
            failure = e
            status = 504
            message = "the function did not finish before its deadline %s" \
                % c.deadline_text
        except TimeoutError as e:
            failure, status, message = e, 504, str(e)
        except SystemExit as e:
            failure, status, message = e, 502, str(e)
            self.stop_status = _exit_status(e)
        except KeyboardInterrupt as e:
            log("the function raised KeyboardInterrupt; stopping")
            self.stop_status = EXIT_OK
            return _response.dispatch_error(ctx, 502, str(e))
        except BaseException as e:
            failure, status, message = e, 502, str(e)
        _log.get_request_log().error(_log.error_line(failure, message))
        return _response.dispatch_error(ctx, status, message)

    def _current_loop(self):
        # A function that uses asyncio finds the server's event loop as the
        # current one (asyncio.get_event_loop()), also after asyncio.run()
        # in an earlier call reset it.
        if "asyncio" in sys.modules:
            self._event_loop()

    def _event_loop(self):
        import asyncio
        if self.aloop is None or self.aloop.is_closed():
            self.aloop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.aloop)
        return self.aloop

    def _adopt_loop(self):
        # A handler that imported asyncio itself and scheduled work on
        # asyncio.get_event_loop(): that loop becomes the server's, so its
        # tasks run while the server idles.
        if self.aloop is not None or "asyncio" not in sys.modules:
            return
        import asyncio
        import warnings
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:
            return
        if not loop.is_closed() and not loop.is_running():
            self.aloop = loop

    def _run_coroutine(self, c, coro):
        import asyncio
        loop = self._event_loop()
        aw = coro
        if c.deadline is not None:
            c.backstop = COROUTINE_BACKSTOP
            self._arm()
            aw = asyncio.wait_for(coro, max(c.deadline - time.time(), 0.001))
        try:
            return loop.run_until_complete(aw)
        except asyncio.TimeoutError:
            if c.deadline is not None and time.time() >= c.deadline:
                raise _Deadline()
            raise

    # --- the loop -----------------------------------------------------

    def _next_timeout(self, now):
        t = None
        for conn in self.conns.values():
            if conn.out:
                due = conn.since + SEND_TIMEOUT
            elif conn.reader.pending():
                due = (conn.started or conn.since) + REQUEST_TIMEOUT
            else:
                due = conn.since + IDLE_TIMEOUT
                if self.lfd is not None and self.lfd not in self.masks:
                    # Not accepting: this one may make room sooner.
                    due = min(due, conn.since + EVICT_AFTER)
            if t is None or due < t:
                t = due
        return None if t is None else max(t - now, 0.0)

    def _expire(self, now):
        for conn in list(self.conns.values()):
            if conn.out:
                if now - conn.since >= SEND_TIMEOUT:
                    log("dropping a client that read nothing of its "
                        "response for %g s" % SEND_TIMEOUT)
                    self._close_conn(conn)
            elif conn.reader.pending():
                if now - (conn.started or conn.since) >= REQUEST_TIMEOUT:
                    log("dropping a client that did not finish its request "
                        "within %g s" % REQUEST_TIMEOUT)
                    self._close_conn(conn)
            elif now - conn.since >= IDLE_TIMEOUT:
                self._close_conn(conn)

    def _wait(self, timeout):
        if self.aloop is None or self.aloop.is_closed():
            ms = None if timeout is None else int(timeout * 1000) + 1
            return self.poller.poll(ms)
        return self._wait_in_event_loop(timeout)

    def _wait_in_event_loop(self, timeout):
        """Runs the function's event loop until one of our descriptors is
        ready or timeout passes, so its tasks progress while we idle."""
        loop = self.aloop
        events = []

        def ready(fd, ev):
            events.append((fd, ev))
            loop.stop()

        readers, writers = [], []
        try:
            for fd, mask in self.masks.items():
                if mask & select.POLLOUT:
                    loop.add_writer(fd, ready, fd, select.POLLOUT)
                    writers.append(fd)
                else:
                    loop.add_reader(fd, ready, fd, select.POLLIN)
                    readers.append(fd)
            timer = None if timeout is None else \
                loop.call_later(timeout, loop.stop)
            try:
                loop.run_forever()
            finally:
                if timer is not None:
                    timer.cancel()
        finally:
            for fd in readers:
                loop.remove_reader(fd)
            for fd in writers:
                loop.remove_writer(fd)
        if self.stop_signal is not None:
            raise Terminate(self.stop_signal)
        return events

    def serve_forever(self, first=None):
        """Answers calls until an exception (Terminate) ends it; first is
        an already accepted connection's descriptor, or None."""
        self.poller = select.poll()
        lfd = self.lfd = self.lsock.fileno()
        self.poller.register(lfd, select.POLLIN)
        self.masks[lfd] = select.POLLIN
        # A signal that lands just before poll() enters the kernel would
        # only run its Python handler once poll() returns, perhaps never;
        # the wakeup pipe makes that poll() return at once.
        wake, old_wake = _fdk.wakeup_pipe()
        self.poller.register(wake[0], select.POLLIN)
        self.masks[wake[0]] = select.POLLIN
        try:
            if first is not None:
                self._add_conn(first)
            while True:
                if self.stop_signal is not None:
                    raise Terminate(self.stop_signal)
                events = self._wait(self._next_timeout(time.time()))
                for fd, ev in events:
                    if fd == lfd:
                        self._accept()
                        continue
                    if fd == wake[0]:
                        _fdk.drain(fd)
                        continue
                    conn = self.conns.get(fd)
                    if conn is None:
                        continue
                    try:
                        if conn.out:
                            ok = self._process(conn)
                        else:
                            ok = self._service(conn)
                    except OSError as e:
                        log("connection error: %s" % e)
                        ok = False
                    if not ok:
                        self._close_conn(conn)
                now = time.time()
                self._expire(now)
                self._resume_accept(now)
        finally:
            for conn in list(self.conns.values()):
                self._close_conn(conn)
            _fdk.close_wakeup_pipe(wake, old_wake)


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


def _install_signals(server):
    old = {}
    for signum in (_sig.SIGTERM, _sig.SIGINT):
        old[signum] = _sig.signal(signum, server.on_signal)
    old[_sig.SIGALRM] = _sig.signal(_sig.SIGALRM, server._on_alarm)
    return old


def _restore_signals(old):
    for signum, handler in old.items():
        try:
            _sig.signal(signum, handler)
        except (OSError, ValueError, TypeError):
            pass


def serve(resolve, warm="lazy", max_body=DEFAULT_MAX_BODY, what="function",
          environ=None, gc_held=None):
    """Runs the server until SIGTERM or SIGINT; returns an exit status.

    resolve() returns the function to call; what names it in messages.
    With warm="eager" resolve() runs before the socket is ready.  gc_held:
    what coldstart.fdk.hold_gc() returned when a plan was applied before
    this (put back after the first response).
    """
    env = os.environ if environ is None else environ
    paths = _fdk.claim_environ(env)
    if paths is None:
        return EXIT_USAGE
    path, phony = paths
    server = Server(resolve, path, phony, max_body=max_body)
    server.gc_held = gc_held
    old = {}
    try:
        old = _install_signals(server)
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
            if "coldstart.otel" in sys.modules:
                sys.modules["coldstart.otel"].ready()
        except (ConfigError, OSError) as e:
            return _fdk.listen_failure(e, path)
        if warm == "background":
            _warm_in_background(resolve, what)
        server.serve_forever()
    except Terminate as t:
        return t.status
    finally:
        server.close()
        _fdk.active = False
        _restore_signals(old)
    return EXIT_OK


def run(func, handler, warm, max_body, gc_held=None):
    """The coldstart-fdk command from its parsed arguments, everything
    imported before the socket is ready (used for --warm eager); gc_held
    as for adopt()."""
    fn = _Function(func, handler)
    return serve(fn.handler, warm=warm, max_body=max_body,
                 what="%s (%s)" % (func, handler), gc_held=gc_held)


def adopt(lsock, path, phony, first, func, handler, warm, max_body,
          gc_held=None):
    """Serves on a socket coldstart.fdk.server has made ready (bound,
    linked, blocking, SIGTERM and SIGINT raising Terminate): first is the
    descriptor of an accepted connection or None; gc_held what
    coldstart.fdk.hold_gc() returned when the first call began before this
    (the server puts the thresholds back after the first response).
    Returns only through an exception; the caller closes the socket and
    removes the links."""
    fn = _Function(func, handler)
    server = Server(fn.handler, path, phony, max_body=max_body)
    server.gc_held = gc_held
    lsock.setblocking(False)
    server.lsock = lsock
    _install_signals(server)
    if warm == "background":
        _warm_in_background(fn.handler, "%s (%s)" % (func, handler))
    server.serve_forever(first)
    return EXIT_OK
