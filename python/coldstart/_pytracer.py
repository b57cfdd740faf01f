"""Pure-Python fallback of coldstart's import tracer (3.7+), used where the C
extension cannot be built.  It writes the same records (docs/trace-format.md)
with one os.write per record on an O_APPEND descriptor, so a killed process
keeps every record it wrote.  Differences from the C tracer: it costs more,
and a failing import's traceback carries one extra frame from this file.
"""
import os
import sys
import _thread

FORMAT_VERSION = 1
IMPL = "py"

_DETAIL_MAX = 400
_st = {"enabled": False, "fd": -1, "statm": -1, "dir": None, "busy": False}
_tnos = {}
_page_kb = 4
_clock = None


def _esc(s, limit=_DETAIL_MAX):
    if isinstance(s, bytes):
        s = s.decode("utf-8", "surrogateescape")
    s = s[:limit]
    if "\\" in s or "\t" in s or "\n" in s or "\r" in s:
        s = s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    if any(c < " " for c in s):
        s = "".join(c if c >= " " else "\\x%02x" % ord(c) for c in s)
    return s


def _tno():
    ident = _thread.get_ident()
    n = _tnos.get(ident)
    if n is None:
        n = _tnos[ident] = len(_tnos) + 1
    return n


def _rss():
    try:
        return int(os.pread(_st["statm"], 128, 0).split()[1]) * _page_kb
    except Exception:
        return -1


def _write(fields):
    if not _st["enabled"]:
        return
    try:
        os.write(_st["fd"], ("\t".join(fields) + "\n").encode("utf-8", "surrogateescape"))
    except Exception:
        _st["enabled"] = False


def _start_ns():
    now = _clock()
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        ticks = int(stat[stat.rindex(b")") + 2:].split()[19])
        boot = __import__("time").clock_gettime_ns(7)  # CLOCK_BOOTTIME
        start = ticks * (1000000000 // os.sysconf("SC_CLK_TCK"))
        return now - (boot - start) if start <= boot else now
    except Exception:
        return now


def _open():
    pid = os.getpid()
    for i in range(1000):
        path = os.path.join(_st["dir"], "%d-%d.trace" % (pid, i))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o644)
            break
        except FileExistsError:
            continue
    else:
        return False
    _st["fd"] = fd
    try:
        _st["statm"] = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        _st["statm"] = -1
    try:
        with open("/proc/self/cmdline", "rb") as f:
            argv = [a for a in f.read().split(b"\0")][:-1]
    except OSError:
        argv = []
    t = _clock()
    os.write(fd, b"#coldstart-trace 1\n")
    enabled, _st["enabled"] = _st["enabled"], True
    _write(["H", str(t), str(pid), str(os.getppid()), str(_start_ns()), "py",
            sys.version.split()[0], "audit" if hasattr(sys, "addaudithook") else "noaudit"])
    _write(["V", str(t)] + [_esc(a) for a in argv])
    _st["enabled"] = enabled
    return True


def _after_fork():
    if not _st["enabled"]:
        return
    for key in ("fd", "statm"):
        try:
            os.close(_st[key])
        except OSError:
            pass
    _tnos.clear()
    # Our own open of the new file must not be recorded (into the old one).
    _st["busy"] = True
    try:
        if not _open():
            _st["enabled"] = False
    finally:
        _st["busy"] = False


def _imp(kind, name, extra=None, t=None):
    f = [kind, str(_clock() if t is None else t), str(_tno())]
    if kind != "f":
        f.append(str(_rss()))
    f.append(_esc(name))
    if extra is not None:
        f.append(_esc(extra))
    _write(f)


_EVENTS = {
    "open": "open", "compile": "compile", "exec": "exec",
    "socket.connect": 1, "socket.bind": 1, "socket.getaddrinfo": "hostport",
    "socket.gethostbyname": 0, "subprocess.Popen": 1, "os.system": 0,
    "os.exec": 1, "os.posix_spawn": 1, "os.spawn": 2, "os.fork": None,
    "os.forkpty": None, "os.remove": 0, "os.rename": 1, "os.mkdir": 0,
    "time.sleep": 0, "ctypes.dlopen": 0, "urllib.Request": 0,
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _show(o):
    return o if isinstance(o, str) else repr(o)


def _audit(event, args):
    if event not in _EVENTS or not _st["enabled"] or _st["busy"]:
        return
    _st["busy"] = True
    try:
        how = _EVENTS[event]
        detail = ""
        if how == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            if not isinstance(path, (str, bytes)):
                return
            if isinstance(path, bytes):
                path = path.decode("utf-8", "surrogateescape")
            if isinstance(mode, str):
                writing = any(c in mode for c in "wax+")
            else:
                writing = isinstance(flags, int) and bool(flags & _WRITE_FLAGS)
            if not writing and not path.endswith((".py", ".pyc")):
                return
            detail = ("w:" if writing else "r:") + path
        elif how == "compile":
            fn = args[1] if len(args) > 1 else None
            if isinstance(fn, bytes):
                fn = fn.decode("utf-8", "surrogateescape")
            if not isinstance(fn, str) or not fn or fn.startswith("<"):
                return
            detail = fn
        elif how == "exec":
            fn = getattr(args[0], "co_filename", None) if args else None
            if not isinstance(fn, str) or not fn or fn.startswith("<"):
                return
            detail = fn
        elif how == "hostport":
            detail = "%s:%s" % (_show(args[0]), _show(args[1]))
        elif how is not None:
            detail = _show(args[how]) if how < len(args) else ""
        _write(["A", str(_clock()), str(_tno()), event, _esc(detail)])
    except Exception:
        pass
    finally:
        _st["busy"] = False


def start(trace_dir):
    global _clock, _page_kb
    if _st["enabled"]:
        return True
    try:
        import time
        _clock = time.monotonic_ns
        _page_kb = max(1, os.sysconf("SC_PAGESIZE") // 1024)
        _st["dir"] = trace_dir
        if not _open():
            return False
        _st["enabled"] = True
        boot = sys.modules["_frozen_importlib"]
        find_and_load = boot._find_and_load
        find_spec = boot._find_spec
    except Exception:
        _st["enabled"] = False
        return False

    def _find_and_load(name, import_):
        # The clock first: anything allocated before it (a GC pass) would
        # fall outside the import as the trace sees it.
        t = _clock()
        if not _st["enabled"] or not isinstance(name, str):
            return find_and_load(name, import_)
        _imp("S", name, t=t)
        try:
            mod = find_and_load(name, import_)
        except BaseException as exc:
            _imp("F", name, type(exc).__name__)
            raise
        _imp("E", name)
        if name == "time":
            _wrap_sleep()
        return mod

    def _find_spec(*args, **kw):
        spec = find_spec(*args, **kw)
        if _st["enabled"] and args and isinstance(args[0], str):
            origin = getattr(spec, "origin", None) if spec is not None else None
            _imp("f", args[0], origin if isinstance(origin, str) else "")
        return spec

    try:
        boot._find_and_load = _find_and_load
        boot._find_spec = _find_spec
        if hasattr(sys, "addaudithook"):
            sys.addaudithook(_audit)
        _wrap_sleep()
        os.register_at_fork(after_in_child=_after_fork)
        import atexit
        atexit.register(_at_exit)
    except Exception:
        _write(["R", str(_clock()), "cannot install the import wrappers"])
        _st["enabled"] = False
        return False
    return True


def _wrap_sleep():
    # Before 3.13 time.sleep raises no audit event: record the same event.
    if _st.get("sleep") or "time" not in sys.modules:
        return
    _st["sleep"] = True
    mod = sys.modules["time"]
    orig = mod.sleep
    if sys.version_info >= (3, 13):
        return  # it raises the event itself (3.12.1 and 3.11 do not)

    def sleep(secs):
        if _st["enabled"]:
            try:
                _write(["A", str(_clock()), str(_tno()), "time.sleep", _esc(_show(secs))])
            except Exception:
                pass
        return orig(secs)
    sleep.__doc__ = orig.__doc__
    mod.sleep = sleep


def _at_exit():
    _write(["Q", str(_clock())])


def note(tag, text):
    _write(["N", str(_clock()), str(_tno()), _esc(tag, 64), _esc(text, 4000)])


def stop():
    _st["enabled"] = False


def enabled():
    return _st["enabled"]
