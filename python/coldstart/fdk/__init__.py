"""An Fn FDK for Python that starts fast: fdk-python's API over coldstart's
http-stream server.  `coldstart-fdk func.py [handler]` or
`python -m coldstart.fdk func.py [handler]` runs a function; handle() serves
a function object from its own `if __name__ == "__main__"` block.

The package also holds what both halves of the server share: the exit
codes, the configuration errors, the listener set-up and clean-up and the
signal wakeup pipe.  coldstart.fdk.server (argument checks and everything
up to the lsnr.sock link) and coldstart.fdk.loop (the request loop, loaded
after the link) both build on it and not on each other.  It lives here
because this package is loaded before the socket is ready anyway: one
module fewer to read then.  It imports nothing that Python has not loaded
at start-up besides the C modules _signal and _socket; InvokeContext and
Response are loaded from coldstart.fdk.context and coldstart.fdk.response
on first use.
"""

import os
import sys

import coldstart

try:
    import _signal as _sig
except ImportError:  # pragma: no cover - every CPython has _signal
    import signal as _sig

__all__ = ["InvokeContext", "Response", "handle"]

VERSION = "0.1.0"

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2

MAX_SUN_PATH = 107
DEFAULT_MAX_BODY = 100 * 1024 * 1024
HTTPSTREAM = "http-stream"

_S_IFMT = 0o170000
_S_IFSOCK = 0o140000
_S_IFLNK = 0o120000

# True while a server runs in this process; handle() checks it.
active = False


class ConfigError(Exception):
    """Bad arguments or environment: the process exits with EXIT_USAGE."""


class Terminate(BaseException):
    """Raised by the SIGTERM/SIGINT handler to end the server (exit 0), or
    with an exit status to end it with that status."""

    def __init__(self, signum=0, status=EXIT_OK):
        BaseException.__init__(self, signum)
        self.signum = signum
        self.status = status


def log(msg):
    """One line of coldstart-fdk's own on stderr, never raising."""
    try:
        sys.stderr.write("coldstart-fdk: %s\n" % msg)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def listener_paths(value):
    """Checks an FN_LISTENER value; returns (socket path, phony path).

    Raises ConfigError when it is missing, lacks the unix: prefix, names no
    file, names a missing directory, or is longer than a unix socket path
    may be (107 bytes).
    """
    if value is None or value == "":
        raise ConfigError("FN_LISTENER is not set; expected "
                          "unix:/path/to/lsnr.sock")
    if not value.startswith("unix:"):
        raise ConfigError("FN_LISTENER %r does not start with 'unix:'"
                          % value)
    path = value[len("unix:"):]
    d, base = os.path.split(path)
    if not base:
        raise ConfigError("FN_LISTENER %r names no socket file" % value)
    phony = os.path.join(d, "phony" + base)
    for p in (path, phony):
        n = len(os.fsencode(p))
        if n > MAX_SUN_PATH:
            raise ConfigError("socket path %r is %d bytes, over the unix "
                              "socket limit of %d" % (p, n, MAX_SUN_PATH))
    if d and not os.path.isdir(d):
        raise ConfigError("FN_LISTENER directory %r does not exist" % d)
    return path, phony


def check_environ(env):
    """Returns (socket path, phony path) for FN_LISTENER; raises
    ConfigError for a bad FN_LISTENER or an FN_FORMAT other than
    http-stream (or empty)."""
    path, phony = listener_paths(env.get("FN_LISTENER"))
    fmt = env.get("FN_FORMAT", "")
    if fmt not in ("", HTTPSTREAM):
        raise ConfigError("FN_FORMAT %r is not supported; only %r" % (
            fmt, HTTPSTREAM))
    return path, phony


def claim_environ(env):
    """check_environ for a server about to listen: returns (socket path,
    phony path) and marks the FDK active, or None after logging why the
    environment cannot be served (the server then exits EXIT_USAGE)."""
    global active
    try:
        paths = check_environ(env)
    except ConfigError as e:
        log(str(e))
        return None
    active = True
    return paths


def listen_failure(e, path):
    """Logs why listen() or link() raised e (a ConfigError or an OSError)
    and returns the exit status for it."""
    if isinstance(e, ConfigError):
        log(str(e))
        return EXIT_USAGE
    log("cannot listen on %r: %s" % (path, e))
    return EXIT_FAILURE


def _file_type(path):
    try:
        return os.lstat(path).st_mode & _S_IFMT
    except FileNotFoundError:
        return None


def _remove_stale(path):
    # A socket or symlink left by an earlier server goes; anything else
    # (a regular file, a directory) is not ours to delete.
    kind = _file_type(path)
    if kind is None:
        return
    if kind not in (_S_IFSOCK, _S_IFLNK):
        raise ConfigError("%r exists and is neither a socket nor a symlink; "
                          "not removing it" % path)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


# Callers waiting for a connection slot queue in the kernel: a blocking
# connect() waits, a non-blocking one says EAGAIN, only past this many.
LISTEN_BACKLOG = 128


def listen(path, phony):
    """Removes stale sockets and links, binds the phony socket with mode
    0666 and listens (blocking); returns the socket.  Raises ConfigError
    when either path is something other than a socket or a symlink, OSError
    when binding fails.

    The mode comes from the umask in force during bind(), not from a
    chmod() afterwards, which would follow a symlink planted in its place.
    """
    import _socket
    for p in (path, phony):
        _remove_stale(p)
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        old = os.umask(0o111)
        try:
            s.bind(phony)
        finally:
            os.umask(old)
        s.listen(LISTEN_BACKLOG)
    except BaseException:
        s.close()
        raise
    return s


def close_listener(lsock, path, phony):
    """Closes the listening socket, removes lsnr.sock when it is our link
    to the phony socket, and the phony socket; safe to repeat, and safe
    whether or not the link was made (nothing records that, so a signal
    just after symlink() cannot leave the link behind)."""
    if lsock is not None:
        lsock.close()
    try:
        if os.readlink(path) == os.path.basename(phony):
            os.unlink(path)
    except OSError:
        pass
    if _file_type(phony) == _S_IFSOCK:
        try:
            os.unlink(phony)
        except OSError:
            pass


def link(path, phony):
    """Creates lsnr.sock as a relative symlink to the phony socket: Fn's
    "ready" signal."""
    os.symlink(os.path.basename(phony), path)


def wakeup_pipe():
    """Returns ((read fd, write fd), previous wakeup fd) after making the
    pipe's write end the signal wakeup fd: a signal then also writes a
    byte there, so a poll() that includes the read end cannot sleep
    through a signal that arrived just before it started."""
    r, w = os.pipe()
    try:
        os.set_blocking(r, False)
        os.set_blocking(w, False)
        return (r, w), _sig.set_wakeup_fd(w)
    except BaseException:
        os.close(r)
        os.close(w)
        raise


def close_wakeup_pipe(pipe, old):
    try:
        _sig.set_wakeup_fd(old)
    except (ValueError, OSError):
        pass
    os.close(pipe[0])
    os.close(pipe[1])


def drain(fd):
    try:
        while os.read(fd, 512):
            pass
    except OSError:
        pass


# The collector held during a planned first call (coldstart.hold_gc), here
# under the names coldstart-fdk has always used.
GC_HOLD_THRESHOLD = coldstart.GC_HOLD_THRESHOLD
hold_gc = coldstart.hold_gc
release_gc = coldstart.release_gc


def handle(handler, warm="lazy"):
    """Serves handler (a function, or an object with a handler() method
    returning one) on FN_LISTENER; exits the process when the server stops.

    When the module calling it is being loaded by coldstart-fdk, a server
    already runs in this process and the call does nothing.
    """
    if active:
        log("fdk.handle() ignored: coldstart-fdk already serves this process")
        return
    if callable(handler):
        fn = handler

        def resolve():
            return fn
    elif hasattr(handler, "handler"):
        resolve = handler.handler
    else:
        raise TypeError("fdk.handle() wants a function, not %s"
                        % type(handler).__name__)
    from coldstart.fdk import loop
    raise SystemExit(loop.serve(resolve, warm=warm,
                                what=getattr(handler, "__name__",
                                             "handler")))


def __getattr__(name):
    if name == "InvokeContext":
        from coldstart.fdk.context import InvokeContext
        return InvokeContext
    if name == "Response":
        from coldstart.fdk.response import Response
        return Response
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
