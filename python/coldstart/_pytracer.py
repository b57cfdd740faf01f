"""Pure-Python fallback of coldstart's import tracer (3.7+), used where the C
extension cannot be built.  It writes the same records (docs/trace-format.md)
the same way: stored into a MAP_SHARED mapping of the file, so a killed
process keeps every record it wrote, and an import's end record costs a slice
assignment after its clock is read (one os.pwrite per record where the mmap
module is missing or a mapping fails).  As the C tracer, it writes the file
with zeros ahead of its records (os.pwrite: the mapping only ever covers
bytes the file system holds) and keeps _RESERVE written bytes free behind
them: when the file system is full, the zeros cannot be written, and the R
record that says so goes into those bytes before the trace stops.
Differences from the C tracer: it costs more, a failing import's
traceback carries one extra frame from this file, and it records no garbage
collections (G records: a Python callback would allocate inside the
collector's own callbacks and cost about what it measures).
"""
import errno
import os
import sys
import _thread

FORMAT_VERSION = 2
IMPL = "py"

_DETAIL_MAX = 400
_FILL = 256 * 1024  # zeros written ahead of the records at a time, as _fill.h's FILL_BYTES
_RESERVE = 128  # written bytes kept free behind the records for the R record, as STOP_RESERVE
_END_FIELDS = 128  # an E or F record's bytes besides its name and exception: its kind, 4 numbers, tabs
_ZEROS = bytes(65536)
# used: bytes of records; filled: bytes of the file written (records, then zeros); fill_err: why filling failed;
# map: the mapping of the first filled bytes, None where records go with os.pwrite; mapping: whether to map.
# fd: the file's descriptor, checked before each use (_fd()) against its id (st_dev, st_ino) and
# path: the target may close any descriptor and get the number back for a file of its own.
_st = {"enabled": False, "fd": -1, "id": None, "path": None, "dir": None, "busy": False, "pid": 0,
       "fork_ns": 0, "fork_depth": 0, "used": 0, "filled": 0, "fill_err": 0, "lock": _thread.RLock(),
       "map": None, "map_fd": -1, "mapping": False}
_mmap = None
_depth = {}  # thread ident -> imports open on it
_tnos = {}
_clock = None
_cpu = None
_getrusage = None
_RUSAGE_THREAD = None


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
    # The peak resident set in KiB, as the C tracer records it.
    try:
        return _getrusage(_RUSAGE_THREAD).ru_maxrss
    except Exception:
        return -1


# Mappings whose descriptor (mmap keeps a duplicate of its own before 3.13) the target closed:
# closing or resizing one would close or cut the target's file that has the number now, so they
# are kept, unused, for the life of the process.
_dropped_maps = []


def _unmap():
    m = _st["map"]
    if m is None:
        return
    ours = _map_ours()
    _st["map"] = None
    if not ours:
        _dropped_maps.append(m)
        return
    try:
        m.close()
    except Exception:
        pass


def _map_ours():
    # Whether the mapping's own descriptor still is the file's (mmap has no fileno(): the number
    # is the one _new_map saw it take).
    return _is_ours(_st["map_fd"])


def _new_map(fd, size):
    # A mapping of the file, whose duplicate descriptor takes the lowest free number: the one a
    # dup() just before it got.  When another thread took that number meanwhile, the mapping's
    # descriptor is unknown and, still valid now, is closed with it: records go with os.pwrite.
    probe = os.dup(fd)
    os.close(probe)
    m = _mmap.mmap(fd, size)
    if not _is_ours(probe):
        m.close()
        raise OSError(errno.EBADF, "the mapping's descriptor is unknown")
    _st["map_fd"] = probe
    return m


def _is_ours(fd):
    try:
        st = os.fstat(fd)
    except (OSError, ValueError):
        return False
    return (st.st_dev, st.st_ino) == _st["id"]


def _fd():
    # The trace file's descriptor, or -1.  One the target closed (os.closerange when it
    # daemonizes), whose number may now be a file of its own, is forgotten, never written, cut
    # or closed: the file is opened again by its name.
    fd = _st["fd"]
    if fd >= 0 and _is_ours(fd):
        return fd
    _st["fd"] = -1
    path, _st["path"] = _st["path"], None
    if path is None:
        return -1
    # The open's audit event is the tracer's own: not recorded (it would need the room this
    # descriptor is for).
    busy, _st["busy"] = _st["busy"], True
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return -1
    finally:
        _st["busy"] = busy
    if not _is_ours(fd):
        os.close(fd)  # another file has the name now
        return -1
    _st.update(fd=fd, path=path)
    return fd


def _close_fd():
    # Closes the descriptor while it still is the file's (a fork child's inherited one too).
    fd, _st["fd"], _st["path"] = _st["fd"], -1, None
    if fd >= 0 and _is_ours(fd):
        try:
            os.close(fd)
        except OSError:
            pass


def _fill_to(end):
    # Zeros up to end and _FILL beyond it, and the mapping over them; False when the file
    # system cannot take them.  A mapping that cannot be made leaves os.pwrite for the records.
    want = end + _FILL
    fd = _fd()
    if fd < 0 and not _st["fill_err"]:
        _st["fill_err"] = errno.EBADF
    while _st["filled"] < want and not _st["fill_err"]:
        try:
            n = os.pwrite(fd, _ZEROS[:min(len(_ZEROS), want - _st["filled"])], _st["filled"])
        except InterruptedError:
            continue
        except OSError as e:
            _st["fill_err"] = e.errno or errno.EIO
            break
        if n <= 0:
            _st["fill_err"] = errno.ENOSPC
            break
        _st["filled"] += n
    if _st["filled"] < end:
        return False
    if _st["mapping"]:
        # The file is filled bytes long: the mapping, made at the file's first record, grows
        # over them (mremap; no audit event a hook of the target would see during an import).
        # Never a store past the end of the file (SIGBUS).
        try:
            if _st["map"] is not None and not _map_ours():
                _unmap()
            if _st["map"] is None:
                _st["map"] = _new_map(fd, _st["filled"])
            else:
                _st["map"].resize(_st["filled"])
        except Exception:
            _unmap()
            _st["mapping"] = False
    return True


def _room(n):
    # Under the lock: the bytes of a record of n bytes at the end of the records, and the
    # reserve behind them, written and mapped; their pages touched, so that the store into
    # them, after an end's clock, takes no page fault either (a minor one, the zeros being in
    # the page cache: a few microseconds at most here).  False when the file system is full:
    # the trace has stopped.
    need = _st["used"] + n + _RESERVE
    if need > _st["filled"] and not _fill_to(need):
        _stop_full()
        return False
    m = _st["map"]
    if m is not None:
        for off in range(_st["used"], _st["used"] + n, 4096):
            m[off] = 0
        m[_st["used"] + n - 1] = 0
    return True


def _put(data):
    # Under the lock, after _room(len(data)) or more: the record after the others.  (Records a
    # signal handler wrote since can have taken the room: it is made again.)
    off = _st["used"]
    end = off + len(data)
    if end + _RESERVE > _st["filled"] and not _room(len(data)):
        return
    m = _st["map"]
    if m is not None:
        m[off:end] = data
    else:
        try:
            os.pwrite(_fd(), data, off)
        except OSError as e:
            _st["fill_err"] = e.errno or errno.EIO
            _stop_full()
            return
    _st["used"] = end


def _stop_full():
    # As the C tracer's trace_stop_full: the R record into the reserve (none when not even the
    # first records were written: the file stays empty), the file cut to its records, tracing off.
    err = _st["fill_err"]
    msg = ("no space left on the device" if err == errno.ENOSPC else
           "disk quota exceeded" if err == errno.EDQUOT else "cannot write the trace file")
    rec = ("R\t%d\t%s\n" % (_clock(), msg)).encode()
    _st["enabled"] = False
    _unmap()
    fd, used = _fd(), _st["used"]
    if fd < 0:
        _close_fd()
        return
    try:
        if used and len(rec) <= _RESERVE and used + len(rec) <= _st["filled"]:
            os.pwrite(fd, rec, used)
            used += len(rec)
        os.ftruncate(fd, used)
    except OSError:
        pass
    _st["used"] = used
    _close_fd()


def _emit(data):
    # Under the lock (threads; an import in a signal handler takes it again): the record's
    # place, and the store, so that no other thread unmaps or closes the file under it.
    with _st["lock"]:
        if _st["enabled"] and _room(len(data)):
            _put(data)


def _write(fields):
    if not _st["enabled"]:
        return
    try:
        _emit(("\t".join(fields) + "\n").encode("utf-8", "surrogateescape"))
    except Exception:
        _st["enabled"] = False


def _start_ns():
    now = _clock()
    # The moment coldstart exec'd this very process (see _tracer.c's process_start_ns).
    try:
        pid, at = os.environ.get("COLDSTART_EXEC", "").split(":")
        if int(pid) == os.getpid() and 0 < int(at) <= now:
            return int(at)
    except ValueError:
        pass
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        ticks = int(stat[stat.rindex(b")") + 2:].split()[19])
        boot = __import__("time").clock_gettime_ns(7)  # CLOCK_BOOTTIME
        start = ticks * (1000000000 // os.sysconf("SC_CLK_TCK"))
        return now - (boot - start) if start <= boot else now
    except Exception:
        return now


def _open(from_fork=False):
    # The traced process this one descends from (see _tracer.c's trace_open).
    if from_fork:
        spawner = _st.get("pid", 0)
    else:
        spawner = os.environ.get("COLDSTART_TRACE_PARENT", "")
        spawner = int(spawner) if spawner.isdigit() else 0
    pid = os.getpid()
    os.putenv("COLDSTART_TRACE_PARENT", str(pid))
    for i in range(1000):
        path = os.path.join(_st["dir"], "%d-%d.trace" % (pid, i))
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)  # RDWR: mmap
            break
        except FileExistsError:
            continue
    else:
        return False
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return False
    _st.update(fd=fd, id=(st.st_dev, st.st_ino), path=path, pid=pid, used=0, filled=0, fill_err=0,
               map=None, mapping=_mmap is not None)
    try:
        with open("/proc/self/cmdline", "rb") as f:
            argv = [a for a in f.read().split(b"\0")][:-1]
    except OSError:
        argv = []
    t = _clock()
    enabled, _st["enabled"] = _st["enabled"], True
    _emit(b"#coldstart-trace 2\n")
    start = _st["fork_ns"] if from_fork else _start_ns()
    _write(["H", str(t), str(pid), str(os.getppid()), str(start), "py",
            sys.version.split()[0], "audit" if hasattr(sys, "addaudithook") else "noaudit",
            "fork" if from_fork else "exec", str(_cpu()), str(_st["fork_depth"] if from_fork else 0),
            str(spawner)])
    _write(["V", str(t)] + [_esc(a) for a in argv])
    if not _st["enabled"]:
        return False  # the file system is full: the file is left empty
    _st["enabled"] = enabled
    return True


def _after_fork():
    if not _st["enabled"]:
        return
    # Another thread may have held the lock at the fork: the child's is new.
    _st["lock"] = _thread.RLock()
    _st["fork_ns"] = _clock()
    _st["fork_depth"] = _depth.get(_thread.get_ident(), 0)
    _depth.clear()
    _depth[_thread.get_ident()] = _st["fork_depth"]
    _unmap()  # the child's view of the parent's file, nothing written
    _close_fd()  # the parent's file: not cut, not written
    _tnos.clear()
    # Our own open of the new file must not be recorded (into the old one).
    _st["busy"] = True
    try:
        if not _open(from_fork=True):
            _st["enabled"] = False
    finally:
        _st["busy"] = False


def _imp(kind, t, cpu, rss, name):
    _write([kind, str(t), str(_tno()), str(cpu), str(rss), _esc(name)])


def _end(head, name, extra=b""):
    # An import's E or F record (head: b"E\t%d" or b"F\t%d").  importtime reads its clock
    # right after the wrapper returns, so everything but the store is done before the end
    # is read here, as the C tracer does: the record's bytes but the time, the room for them
    # in the file (zeros written ahead, the mapping grown, its pages touched), the lock
    # taken, then the thread's memory and CPU time.  After the clock only the time's digits,
    # bytes concatenations and the slice assignment into the mapping are left before the
    # wrapper returns.  Nothing the garbage collector counts is allocated after the CPU
    # time's call (bytes only, no tuple for the formatting): a collection that an allocation
    # asks for runs at once before 3.12, and from 3.12 at the next check of the eval loop,
    # which the call of the clock makes right after reading it.
    if not _st["enabled"]:
        return
    try:
        tno = _tno()
        tail = b"\t" + _esc(name).encode("utf-8", "surrogateescape") + extra + b"\n"
    except Exception:
        _st["enabled"] = False
        return
    try:
        with _st["lock"]:
            if not _st["enabled"] or not _room(len(tail) + _END_FIELDS):
                return
            rss = _rss()
            cpu = _cpu()
            mid = b"\t%d" % tno + b"\t%d" % cpu + b"\t%d" % rss
            t = _clock()
            _put(head % t + mid + tail)
    except Exception:
        _st["enabled"] = False  # the import goes on untraced, never fails for the tracer


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


def _keep_boot_path(env):
    # As the C tracer's keep_boot_path: a child given an environment built
    # from os.environ (where sitecustomize hid coldstart's PYTHONPATH entry)
    # gets the entry back first on its PYTHONPATH, as inheriting would.
    # os.environ's mapping is the one sitecustomize rewrote: the process's
    # own environment is read where the kernel keeps it.
    mine = os.environ.get("COLDSTART_TRACE_DIR")
    if not mine or type(env) is not dict or env.get("COLDSTART_TRACE_DIR") != mine:
        return
    with open("/proc/self/environ", "rb") as f:
        real = [kv[11:] for kv in f.read().split(b"\0") if kv.startswith(b"PYTHONPATH=")]
    if not real:
        return
    boot = os.fsdecode(real[0]).split(os.pathsep)[0]
    if not boot or not os.path.isfile(os.path.join(boot, "sitecustomize.py")):
        return
    cur = env.get("PYTHONPATH")
    if cur is not None and not isinstance(cur, str):
        return
    if cur and cur.split(os.pathsep)[0] == boot:
        return
    env["PYTHONPATH"] = boot + os.pathsep + cur if cur else boot


def _audit(event, args):
    if event == "subprocess.Popen" and _st["enabled"] and not _st["busy"] and len(args) >= 4:
        try:
            _keep_boot_path(args[3])
        except Exception:
            pass
    # Only what happens while an import runs on this thread: that is what start-up pays.
    if event not in _EVENTS or not _st["enabled"] or _st["busy"] or not _depth.get(_thread.get_ident()):
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
            if not writing:
                return  # reads (the .py and .pyc files above all) are import mechanics
            detail = "w:" + path
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
    global _clock, _cpu, _getrusage, _RUSAGE_THREAD, _mmap
    if _st["enabled"]:
        return True
    try:
        import time
        import atexit  # before the wrappers: the tracer's own imports are not the target's
        import resource
        try:
            import mmap as _mmap
        except ImportError:
            _mmap = None  # records with os.pwrite
        _getrusage = resource.getrusage
        _RUSAGE_THREAD = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)
        _clock = time.monotonic_ns
        _cpu = time.thread_time_ns
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
        _imp("S", t, _cpu(), _rss(), name)
        ident = _thread.get_ident()
        _depth[ident] = _depth.get(ident, 0) + 1
        try:
            mod = find_and_load(name, import_)
        except BaseException as exc:
            _depth[ident] -= 1
            try:
                exc_name = b"\t" + _esc(type(exc).__name__).encode("utf-8", "surrogateescape")
            except Exception:
                exc_name = b"\t?"
            _end(b"F\t%d", name, exc_name)
            raise
        _depth[ident] -= 1
        if name == "time":
            _wrap_sleep()  # before the end is read: its cost is the import's in both clocks
        _end(b"E\t%d", name)
        return mod

    def _find_spec(*args, **kw):
        spec = find_spec(*args, **kw)
        if _st["enabled"] and args and isinstance(args[0], str):
            origin = getattr(spec, "origin", None) if spec is not None else None
            _write(["f", str(_clock()), str(_tno()), _esc(args[0]), _esc(origin if isinstance(origin, str) else "")])
        return spec

    try:
        boot._find_and_load = _find_and_load
        boot._find_spec = _find_spec
        if hasattr(sys, "addaudithook"):
            sys.addaudithook(_audit)
        _wrap_sleep()
        os.register_at_fork(after_in_child=_after_fork)
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
        if _st["enabled"] and _depth.get(_thread.get_ident()):
            try:
                _write(["A", str(_clock()), str(_tno()), "time.sleep", _esc(_show(secs))])
            except Exception:
                pass
        return orig(secs)
    sleep.__doc__ = orig.__doc__
    mod.sleep = sleep


def _at_exit():
    if _st["pid"] == os.getpid():
        _write(["Q", str(_clock()), str(__import__("time").process_time_ns())])
        # Cut the zeros ahead of the records (readers stop at the first NUL anyway); what the
        # interpreter imports while finalising is filled for again.
        # Records after it go with os.pwrite: no mapping is left past the cut end of the file.
        with _st["lock"]:
            if _st["enabled"]:
                _unmap()
                _st["mapping"] = False
                try:
                    os.ftruncate(_fd(), _st["used"])
                    _st["filled"] = _st["used"]
                except OSError:
                    pass


def note(tag, text):
    _write(["N", str(_clock()), str(_tno()), _esc(tag, 64), _esc(text, 4000)])


def stop():
    _st["enabled"] = False


def enabled():
    return _st["enabled"]
