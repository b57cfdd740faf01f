"""Applies a start-up plan (written by `coldstart plan`, docs/plan.md).

A plan names the modules a process imported before its first response,
where each was found, and what to do with each at the next start:

  load   the request used it: import it as usual, from its recorded file
  eager  it must run at import (side effects, a native extension, --eager):
         import it as usual, from its recorded file
  defer  the request did not use it: when something imports it, create the
         module object (spec, __path__, __file__ and the rest set) without
         running its body; the body runs at the first real use

install() checks the whole plan first (who could have written it and its
archive and extension, every member's form, the interpreter, every
recorded file's size and mtime, shadowing on sys.path, the program it was
made for) and applies all of it or, when anything is wrong, none of it,
with one warning on stderr (docs/plan.md, "What a plan may change, and
what it never does").  Stdlib only,
Python 3.8+; importing this file imports nothing beyond what start-up has
loaded, and reading a plan uses the _json scanner without json and re.
"""

import builtins as _builtins_mod
import marshal
import os
import sys
import _imp
import _thread

# The import system's own modules, always there: importing the importlib
# package would import warnings (and types) as well.
_bootstrap = sys.modules["_frozen_importlib"]
_bootstrap_external = sys.modules["_frozen_importlib_external"]
_ModuleSpec = _bootstrap.ModuleSpec

__all__ = ["install", "installed", "warm", "responded", "deferred",
           "is_deferred", "load", "lazy_names", "archived_loader", "PlanError",
           "PLAN_FORMAT", "PLAN_VERSION"]

PLAN_FORMAT = "coldstart-plan"
PLAN_VERSION = 1

_ModuleType = type(sys)
_builtins_dict = _builtins_mod.__dict__
_module_getattr = _ModuleType.__getattribute__
_module_setattr = _ModuleType.__setattr__

# What the import system and module repr read on a module it did not just
# create: answering these must not run the body (docs/plan.md).
_EXEMPT = frozenset(("__spec__", "__name__", "__path__", "__loader__",
                     "__package__", "__file__", "__cached__", "__class__",
                     "__builtins__"))


_MISSING = object()
_FROMLIST_CODE = getattr(_bootstrap._handle_fromlist, "__code__", None)


class PlanError(Exception):
    """The plan file cannot be used (unreadable, wrong format, stale).
    trust is True when it is because of the trust rule (open_trusted): a
    file or a directory above it may be written by others."""

    trust = False


def _warn(msg):
    try:
        sys.stderr.write("coldstart plan: %s\n" % msg)
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass


# --- trust -------------------------------------------------------------------
#
# A plan decides which code runs in the process that applies it, so the plan
# file, its code archive and its extension are used only when nobody but the
# applying user (or root) could have written them: each file and every
# directory above it is owned by the effective user or root and writable by
# nobody else (no group or other write bit; a directory with the sticky bit,
# as /tmp, may be writable by all, since nobody else can rename or remove
# what is in it).  The walk goes through descriptors: each directory is
# opened relative to the one above with O_NOFOLLOW and checked with fstat,
# the file is opened in the last one and checked with fstat, and what is
# read is read through that descriptor, so nothing can be swapped between
# the check and the use (docs/plan.md, "Trust").

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIR = getattr(os, "O_DIRECTORY", 0)
_O_PATH = getattr(os, "O_PATH", 0) or os.O_RDONLY
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
# The most a plan file may be: a plan of thousands of modules is a few MiB.
PLAN_MAX_BYTES = 64 << 20


def _untrusted_error(msg):
    """A PlanError for the trust rule (a flag, not a class of its own: each
    class made at import is 50-80 thousand instructions at every start)."""
    e = PlanError(msg)
    e.trust = True
    return e


def _untrusted(st, euid, is_dir):
    """Why a file or directory with stat st may not be trusted, or None."""
    if st.st_uid != euid and st.st_uid != 0:
        return "owned by uid %d, neither this user (uid %d) nor root" % (
            st.st_uid, euid)
    if st.st_mode & 0o022 and not (is_dir and st.st_mode & 0o1000):
        return "writable by %s (mode %04o)" % (
            "group and others" if st.st_mode & 0o022 == 0o022 else
            "others" if st.st_mode & 0o002 else "its group",
            st.st_mode & 0o7777)
    return None


def _realpath(path):
    """os.path.realpath(path) of an existing path, from the kernel: the
    path of a descriptor opened on it (two system calls, where realpath
    lstats every component in Python).  realpath's answer where that cannot
    be had."""
    fd = -1
    try:
        fd = os.open(path, _O_PATH | _O_CLOEXEC)
        real = os.readlink("/proc/self/fd/%d" % fd)
        if real[:1] == "/" and not real.endswith(" (deleted)"):
            return real
    except (OSError, ValueError, TypeError):
        pass
    finally:
        if fd >= 0:
            os.close(fd)
    return os.path.realpath(path)


# The directories open_trusted() found, with every directory above them,
# to pass the trust rule in this process: owned by this user or root and
# writable by nobody else, nobody else can have changed what is in them
# since, so the plan's archive, beside the plan, is not walked again.
_trusted_dirs = set()


def open_trusted(path, what):
    """Opens path for reading when it is a regular file that it and every
    directory above it pass the trust rule; returns (descriptor, stat).
    Raises PlanError: with trust set, naming the file and the rule; else
    when it cannot be opened.  Never blocks (a FIFO is refused)."""
    euid = os.geteuid()
    try:
        real = _realpath(path)
    except (OSError, ValueError) as e:
        raise PlanError("cannot read %s %r: %s" % (what, path, e))
    parts = [p for p in real.split("/") if p]
    if not parts:
        raise PlanError("%s %r is not a file" % (what, path))
    d = -1
    fd = -1
    where = "/"
    above = "/" + "/".join(parts[:-1])
    try:
        try:
            if (above, euid) in _trusted_dirs:
                d = os.open(above, _O_PATH | _O_DIR | _O_CLOEXEC)
                parts = parts[-1:]
            else:
                d = os.open("/", _O_PATH | _O_DIR | _O_CLOEXEC)
            why = _untrusted(os.fstat(d), euid, True)
            for p in parts[:-1]:
                if why is not None:
                    break
                n = os.open(p, _O_PATH | _O_DIR | _O_NOFOLLOW | _O_CLOEXEC,
                            dir_fd=d)
                os.close(d)
                d = n
                where = where.rstrip("/") + "/" + p
                why = _untrusted(os.fstat(d), euid, True)
            if why is not None:
                raise _untrusted_error(
                    "refusing %s %r: the directory %r is %s" % (
                        what, path, where, why))
            _trusted_dirs.add((above, euid))
            fd = os.open(parts[-1], os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK |
                         _O_CLOEXEC, dir_fd=d)
            st = os.fstat(fd)
        except (OSError, ValueError, TypeError) as e:
            raise PlanError("cannot read %s %r: %s" % (
                what, path, getattr(e, "strerror", None) or e))
        if not (st.st_mode & 0o170000 == 0o100000):
            raise PlanError("%s %r is not a regular file" % (what, path))
        why = _untrusted(st, euid, False)
        if why is not None:
            raise _untrusted_error("refusing %s %r: it is %s" % (
                what, path, why))
        ok = fd
        fd = -1
        return ok, st
    finally:
        if d >= 0:
            os.close(d)
        if fd >= 0:
            os.close(fd)


def _read_fd(fd, size):
    """size bytes from the start of fd (fewer when it is shorter)."""
    chunks = []
    got = 0
    while got < size:
        b = os.pread(fd, size - got, got)
        if not b:
            break
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


# --- validation ------------------------------------------------------------
#
# Every member the applier uses is checked when the plan is read: a plan
# that is damaged (or hand-edited wrong) is ignored whole, with one warning,
# and never reaches the finder half-valid.

_ACTIONS = frozenset(("load", "eager", "defer"))
# The plan's extension when install() loaded it before the plan was checked
# (_early_ext): its C column checks (_plan_check.h) then stand in for the
# _good_* functions, which answer the same.  [module]
_checks = []


def _is_abs(s):
    return type(s) is str and s[:1] == "/" and "\0" not in s


def _is_int(x, lo=None):
    return type(x) is int and (lo is None or x >= lo)


def _check():
    """coldstart.plan_check, the plan's checks in Python, imported at its
    first use: a start whose plan is whole and whose extension is loaded
    never needs it."""
    from coldstart import plan_check
    return plan_check


_CHECK_NAMES = frozenset((
    "_bad_all", "_bad_lazy", "_bad_row", "_good_all", "_good_from",
    "_good_index", "_good_spans", "_index_from_modules", "_is_name",
    "_parse_at_py", "_shown_warnings", "_stale_file"))


def __getattr__(name):
    # The checks that moved to coldstart.plan_check, under their old names
    # (the recorder, tests).
    if name in _CHECK_NAMES:
        return getattr(_check(), name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def _bad_span(v, size, n):
    """Whether v is not a list of integers [offset, length, ...] (at least
    n of them) inside size."""
    if type(v) is not list or len(v) < n:
        return True
    for x in v:
        if type(x) is not int or x < 0:
            return True
    return v[0] + v[1] > size


def _parse_at(s):
    """plan_check._parse_at_py(s), by the plan's extension when it is
    loaded."""
    f = getattr(_checks[0], "parse_at", None) if _checks else None
    return f(s) if f is not None else _check()._parse_at_py(s)


def _bad_code(c, rows):
    """Why the plan's code member is malformed, or None."""
    if c is None:
        return None
    if type(c) is not dict:
        return "code is not an object"
    if type(c.get("path")) is not str or "\0" in c["path"] or \
            not c["path"] or not _is_int(c.get("size"), 0):
        return "code has no path and size"
    size = c["size"]
    at = c.get("at")
    if type(at) is str:
        # The compact form coldstart plan writes (plan_code.encode_at), read
        # once into the lists everything after this reads.
        at = _parse_at(at)
        if at is None:
            return "code.at is not a list of archive entries"
        c["at"] = at
    if type(at) is not list or len(at) != rows:
        return "code.at does not have one entry per index row"
    # With CRC-32Cs (code.sums), a module's entry has 7 members and a
    # table's 5; a plan before them has no sums (CRC-32s only, or none).
    sums = c.get("sums")
    if sums is not None and sums not in _SUMS:
        return "code.sums %r is not a list of checksums this coldstart " \
            "knows (%r)" % (sums, _SUMS[1])
    n, nt = (7, 5) if sums == _SUMS[1] else (2, 3)
    k = _checks[0] if _checks else None
    if not (k.check_spans(at, size, n) if k is not None else
            _check()._good_spans(at, size, n)):
        # Entry by entry, to say which.
        for v in at:
            if v is not None and (_bad_span(v, size, n) or v[1] == 0):
                return "code.at has an entry outside the archive: %r" % (v,)
    for k in ("regex", "strings"):
        v = c.get(k)
        if v is not None and _bad_span(v, size, nt):
            return "code.%s is outside the archive: %r" % (k, v)
    ext = c.get("ext")
    if ext is not None and (type(ext) is not dict or
                            not _is_abs(ext.get("path"))):
        return "code.ext has no absolute path"
    return None


def validate(plan):
    """Raises PlanError when a member the applier uses is malformed."""
    py = plan.get("python")
    if type(py) is not dict:
        raise PlanError("python is not an object")
    sp = plan.get("sys_path")
    if sp is not None:
        if type(sp) is not list or not all(
                type(e) is dict and type(e.get("entry")) is str and
                (e.get("mtime_ns") is None or _is_int(e["mtime_ns"]))
                for e in sp):
            raise PlanError("sys_path is malformed")
    index = plan["index"]
    k = _checks[0] if _checks else None
    if not (k.check_index(index, _KINDS, _ACTIONS) if k is not None else
            _check()._good_index(index)):
        # Row by row, to say what is wrong.
        for row in index:
            why = _check()._bad_row(row)
            if why is not None:
                raise PlanError("a malformed index row (%s)" % why)
    ops = plan.get("opcodes")
    if ops is not None and (type(ops) is not list or len(ops) != 3 or
                            not all(x is None or _is_int(x, 0) and x < 256
                                    for x in ops) or ops[0] is None or
                            ops[1] is None):
        raise PlanError("opcodes is malformed")
    prog = plan.get("program")
    if prog is not None and (type(prog) is not list or not prog or
                             not all(type(x) is str for x in prog)):
        raise PlanError("program is malformed")
    table = plan.get("from")
    if table is not None and type(table) is not dict:
        raise PlanError("from is not an object")
    # The from table is checked whole by the finder (_good_from), and when
    # that finds anything, each module's rows at its import (entry()).
    alls = plan.get("all")
    for why in (_bad_code(plan.get("code"), len(plan["index"])),
                None if (k.check_all(alls) if k is not None else
                         _check()._good_all(alls)) else
                _check()._bad_all(alls)):
        if why is not None:
            raise PlanError(why)


# --- reading the plan ------------------------------------------------------

def _json_constant(name):
    raise ValueError("%s is not allowed in a plan" % name)


def _json_context():
    # The attributes _json.make_scanner reads, on a module object: no class
    # of its own to create at every start.  The plain types keep the
    # scanner on its C fast paths.
    ctx = _ModuleType("_json_context")
    ctx.strict = True
    ctx.object_hook = None
    ctx.object_pairs_hook = None
    ctx.parse_float = float
    ctx.parse_int = int
    ctx.parse_constant = _json_constant
    ctx.memo = None
    return ctx


_WS = " \t\n\r"
# The members the applier needs, which the recorder writes first; the rest
# of a plan (the full module records) is for people and tools.
_HEAD = frozenset(("format", "version", "python", "sys_path", "index"))
# One row of the plan's "index": the applier's compact copy of a module.
INDEX_FIELDS = ("name", "kind", "path", "size", "mtime_ns", "action", "used",
                "dir", "search", "entry_index", "rebinds")


def _scanner():
    try:
        import _json
        return _json.make_scanner(_json_context()), _json.scanstring
    except (ImportError, AttributeError, TypeError):
        return None, None


def _head(text, fast=None):
    """Parses the top-level object's members in order until those in _HEAD
    are all in; returns them, or None when the text does not look like that
    (the caller then parses it whole).  Right after the code member, fast
    (when given) may answer for the rest: fast(members so far, the index
    after the code member's value) returns them all, or None."""
    scan, scanstring = _scanner()
    if scan is None:
        return None
    n = len(text)
    out = {}
    try:
        i = 0
        while text[i] in _WS:
            i += 1
        if text[i] != "{":
            return None
        i += 1
        while True:
            while text[i] in _WS:
                i += 1
            if text[i] != '"':
                return None
            key, i = scanstring(text, i + 1, True)
            while text[i] in _WS:
                i += 1
            if text[i] != ":":
                return None
            i += 1
            while text[i] in _WS:
                i += 1
            out[key], i = scan(text, i)
            if key == "code" and fast is not None:
                whole = fast(out, i)
                if whole is not None:
                    return whole
            if _HEAD.issubset(out):
                return out
            while i < n and text[i] in _WS:
                i += 1
            if text[i] != ",":
                return None
            i += 1
    except Exception:
        return None


def _loads(text):
    scan, _ = _scanner()
    if scan is not None:
        i = 0
        while i < len(text) and text[i] in _WS:
            i += 1
        try:
            obj, end = scan(text, i)
            while end < len(text) and text[end] in _WS:
                end += 1
            if end == len(text):
                return obj
        except Exception:
            pass
    # Not valid JSON: json says where, at a cost paid only for broken files.
    import json
    return json.loads(text)


# The members the head part may hold (src/plan/plan_head.c), with the
# archive entries (code.at) as lists and the text of code.at they were read
# from.
_HEAD_PART = frozenset(("python", "sys_path", "opcodes", "from", "all",
                        "program", "index", "at", "at_text"))


def _head_part(plan, path, data, text, i):
    """The members after the code member, from the code archive's head part
    (docs/plan.md, "The head part"), or None: they are used only when the
    plan's extension checks them (its CRC-32C), the plan file's JSON text
    of those members is, byte for byte, the text the part was written with
    (code.head: the text's CRC-32C and length; an edited plan is read as
    JSON, its edits apply), and the part itself is whole (its CRC-32C);
    the archive entries only while code.at is the text they were read from.
    Anything else (no head, another layout, no extension, an archive that
    cannot be opened or read) leaves the plan to the JSON parser, which
    says what is wrong where anything is."""
    c = plan.get("code")
    h = c.get("head") if type(c) is dict else None
    if type(h) is not list or len(h) != 5 or type(c.get("path")) is not str \
            or c.get("sums") != _SUMS[1] or \
            not all(type(x) is int and x >= 0 for x in h) or not h[1] or \
            type(c.get("size")) is not int or h[0] + h[1] > c["size"] or \
            "format" not in plan or "version" not in plan:
        return None
    if not _checks:
        _early_ext(plan, path)
        plan["_early"] = True
    crc = getattr(_checks[0], "crc32c", None) if _checks else None
    if crc is None or text[i:i + 1] != "," or len(data) != len(text):
        return None
    j, n = i + 1, h[4]
    if data[j + n:j + n + 1] not in (b",", b"}") or \
            crc(memoryview(data)[j:j + n]) != h[3]:
        return None
    plan["_file"] = os.path.abspath(path)
    fd = -1
    try:
        fd, st = _open_archive(plan, c)
        blob = os.pread(fd, h[1], h[0])
        if len(blob) != h[1] or crc(blob) != h[2]:
            return None
        members = marshal.loads(blob)
        if type(members) is not dict or \
                not members.keys() <= _HEAD_PART or \
                "index" not in members or "at" not in members:
            return None
        # The archive checked here is the one install() reads the modules
        # from (_open_archive takes it): one trust walk, not two.
        _head_fd[:], fd = [(fd, st)], -1
    except (PlanError, OSError, OverflowError, TypeError, ValueError,
            EOFError):
        return None
    finally:
        if fd >= 0:
            os.close(fd)
    at, text_at = members.pop("at"), members.pop("at_text", None)
    # code.at is the plan file's, not the part's: its entries are used
    # when it is still the text they were read from (else they are read
    # from it: validate()).
    if (text_at == c.get("at")) if text_at is not None else \
            (at == c.get("at")):
        c["at"] = at
    plan.update(members)
    return plan


def read(path, trust=True, checks=False, fast=True):
    """Returns the plan in path as a dict with at least format, version,
    python, sys_path and index (rows of INDEX_FIELDS); raises PlanError
    when it cannot be read, may be written by others (trust set), is
    malformed, or is not a plan of a version this module applies.  Only a
    regular file of at most PLAN_MAX_BYTES is read.  checks=True (install)
    loads the plan's extension first when it has one, whose C checks then
    check the plan (_early_ext); with fast too, the members the applier
    reads at every start come from the code archive's head part when they
    may (_head_part)."""
    fd = -1
    # The directories found trusted serve this plan's files only.
    _trusted_dirs.clear()
    _drop_head_fd()
    try:
        if trust:
            fd, st = open_trusted(path, "plan")
        else:
            try:
                fd = os.open(path, os.O_RDONLY | _O_NONBLOCK | _O_CLOEXEC)
                st = os.fstat(fd)
            except (OSError, ValueError, TypeError) as e:
                raise PlanError("cannot read %r: %s" % (
                    path, getattr(e, "strerror", None) or e))
            if not st.st_mode & 0o170000 == 0o100000:
                raise PlanError("%r is not a regular file" % (path,))
        if st.st_size > PLAN_MAX_BYTES:
            raise PlanError("%r is %d bytes, more than a plan may be (%d)"
                            % (path, st.st_size, PLAN_MAX_BYTES))
        try:
            data = _read_fd(fd, st.st_size)
        except OSError as e:
            raise PlanError("cannot read %r: %s" % (path, e.strerror or e))
    finally:
        if fd >= 0:
            os.close(fd)
    try:
        text = data.decode("utf-8")
        # With warning options (-W, PYTHONWARNINGS) the module records are
        # read too: their import-time warnings decide what runs at once
        # (PlanFinder.warned).  Without, the head is all the applier needs.
        part = None
        if checks and trust and fast:
            def part(plan, i):
                return _head_part(plan, path, data, text, i)
        plan = _head(text, part) if not sys.warnoptions else None
        if plan is None:
            plan = _loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise PlanError("%r is not JSON: %s" % (path, e))
    if not isinstance(plan, dict) or plan.get("format") != PLAN_FORMAT:
        raise PlanError("%r is not a coldstart plan" % path)
    if plan.get("version") != PLAN_VERSION:
        raise PlanError("%r is a plan of version %r; this coldstart applies "
                        "version %d" % (path, plan.get("version"),
                                        PLAN_VERSION))
    if not isinstance(plan.get("index"), list):
        if not isinstance(plan.get("modules"), list):
            raise PlanError("%r has no module list" % path)
        plan["index"] = _check()._index_from_modules(plan["modules"])
    if checks and trust and not plan.pop("_early", False):
        _early_ext(plan, path)
    try:
        validate(plan)
    except PlanError as e:
        raise PlanError("%r is malformed: %s" % (path, e))
    plan["_file"] = os.path.abspath(path)
    return plan


def interpreter_identity():
    """What a plan records of the interpreter that made it; a plan made by
    another interpreter (or build) is stale."""
    return {
        "version": sys.version,
        "cache_tag": sys.implementation.cache_tag,
        "platform": sys.platform,
        "prefix": sys.prefix,
    }


# --- staleness -------------------------------------------------------------

_SUFFIXES = []


def _suffixes():
    """The file suffixes the path-based finder imports, longest first."""
    if not _SUFFIXES:
        e = _bootstrap_external
        _SUFFIXES.extend(sorted(set(e.EXTENSION_SUFFIXES +
                                    e.SOURCE_SUFFIXES +
                                    e.BYTECODE_SUFFIXES),
                                key=len, reverse=True))
    return _SUFFIXES


def _listing(d):
    """The names in directory d (a set), or None when d cannot be listed.
    _holds() asks it for NAME.SUFFIX as the path-based finder does, so an
    extensionless script such as /usr/bin/lzma is no module, and a
    directory of many files costs one set, not a loop over its names."""
    try:
        return set(os.listdir(d or "."))
    except (OSError, ValueError, TypeError):
        return None


def _holds(d, name, listing):
    """Whether the path-based finder would find module name in directory
    d with its listing: a module file, or a regular package (a directory
    with an __init__ it imports; a namespace portion does not take the
    place of a module found later)."""
    if listing is None:
        return False
    sufs = _suffixes()
    for suf in sufs:
        if name + suf in listing:
            return True
    if name in listing:
        pkg = os.path.join(d or ".", name)
        for suf in sufs:
            if os.path.isfile(os.path.join(pkg, "__init__" + suf)):
                return True
    return False


def _shadowed(plan):
    """Returns why a module now in a sys.path directory would be found
    before a planned top-level module, or None.  Only directories whose
    mtime changed since planning are listed."""
    entries = plan.get("sys_path") or []
    for pos, e in enumerate(entries):
        d = e.get("entry") if isinstance(e, dict) else None
        if not isinstance(d, str):
            continue
        try:
            mt = os.stat(d or ".").st_mtime_ns
        except (OSError, ValueError):
            continue
        if mt == e.get("mtime_ns"):
            continue
        listing = _listing(d)
        for row in plan["index"]:
            ei = row[9]
            if "." in row[0] or not isinstance(ei, int) or ei <= pos:
                continue
            if _holds(d, row[0], listing):
                return ("%r on sys.path now holds %r, which would be found "
                        "before the planned %r" % (d, row[0], row[2]))
    return None


def _from_orig_argv(orig):
    """The program in the interpreter's command line (sys.orig_argv):
    ["module", name], ["command", code], ["stdin"] or ["script", path as
    typed]; None when there is none to tell."""
    i = 1
    while i < len(orig):
        a = orig[i]
        if a == "--":
            i += 1
            break
        if a == "-" or a[:1] != "-":
            break
        if a[:2] == "--":
            i += 2 if a == "--check-hash-based-pycs" else 1
            continue
        for j in range(1, len(a)):
            c = a[j]
            if c in "cmWX":
                v = a[j + 1:]
                if not v:
                    i += 1
                    v = orig[i] if i < len(orig) else ""
                if c == "c":
                    return ["command", v]
                if c == "m":
                    return ["module", v]
                break
        i += 1
    if i >= len(orig):
        return ["stdin"]
    return ["stdin"] if orig[i] == "-" else ["script", orig[i]]


def program_identity(argv=None):
    """What a plan records of the program it was made for (and install()
    compares, for a plan applied through the environment to every Python
    process): ["script", its real path], ["module", name], ["command",
    code] (name and code from sys.orig_argv, 3.10+), or ["stdin"].  argv
    is sys.argv as at start-up (before runpy replaces its first item)."""
    orig = getattr(sys, "orig_argv", None)
    if orig:
        p = _from_orig_argv(list(orig))
    else:
        a0 = (argv if argv is not None else sys.argv or [""])[0]
        p = ["command"] if a0 == "-c" else ["module"] if a0 == "-m" else \
            ["stdin"] if a0 in ("", "-") else ["script", a0]
    if p[0] == "script":
        try:
            p[1] = os.path.realpath(p[1])
        except (OSError, ValueError):
            pass
    return p


def check(plan, program=None):
    """Returns a list of reasons the plan does not fit this process (empty
    when it fits); program, when given, is this process's
    program_identity(), which must be the one the plan recorded."""
    why = []
    rec = plan.get("program")
    if program is not None and rec is not None and rec != program:
        why.append("-it was made for %s, not for this program (%s)" % (
            " ".join(rec), " ".join(program)))
        return why
    rec = plan.get("python") or {}
    cur = interpreter_identity()
    for k in ("version", "cache_tag", "platform", "prefix"):
        if rec.get(k) != cur[k]:
            why.append("the plan was made by another interpreter (%s %r, "
                       "this one has %r)" % (k, rec.get(k), cur[k]))
            return why
    stat = os.stat
    c = plan.get("code")
    at = c.get("at") if type(c) is dict else None
    if type(at) is not list or len(at) != len(plan["index"]):
        at = None
    # Files whose ctime or inode is not the recorded one (an edit keeping
    # size and mtime, a copy): their archived code is used only when their
    # bytes are the recorded ones (_file_same).
    suspect = plan["_suspect"] = set()
    index = plan["index"]
    ext = _checks[0] if _checks else None
    if ext is not None:
        # The loop below in C (_plan_check.h), without a stat result
        # object per file: the first stale row (-1: none).
        first, names = ext.stale(index, at)
        suspect.update(names)
    else:
        first = -1
        for i, row in enumerate(index):
            # plan_check._stale_file(row), inlined: this loop stats every
            # planned file.
            try:
                st = stat(row[2])
            except (OSError, TypeError, ValueError):
                st = None
            if st is None or st.st_size != row[3] or \
                    st.st_mtime_ns != row[4]:
                first = i
                break
            if at is not None:
                a = at[i]
                if a is not None and len(a) >= 6 and (
                        st.st_ctime_ns != a[3] or st.st_ino != a[4]):
                    suspect.add(row[0])
    if first >= 0:
        row = index[first]
        why.append(_check()._stale_file(row) or "%s changed" % row[0])
        return why
    r = _shadowed(plan)
    if r:
        why.append(r)
    return why


# --- deferred modules ------------------------------------------------------

class _State(object):
    __slots__ = ("spec", "loader", "owner", "error", "order", "rebinds",
                 "lazy", "all", "given")

    def __init__(self, spec, loader, order, rebinds, lazy, all_=None):
        self.spec = spec
        self.loader = loader
        self.owner = None
        self.error = None
        self.order = order
        # Submodule names the package's body binds to something else.
        self.rebinds = rebinds
        # The body's from-imports that may stay lazy (_run_body), or None.
        self.lazy = lazy
        # The plan's record of its __all__ (the plan's "all"), or None; and
        # the object a read of __all__ got before the body ran.
        self.all = all_
        self.given = None


def _recorded_all(st):
    """A deferred module's __all__ from the plan (the same object at every
    read until its body runs), or _MISSING when the plan has none."""
    if st.given is None:
        v = st.all
        if isinstance(v, dict) and isinstance(v.get("tuple"), list):
            v = tuple(v["tuple"])
        elif isinstance(v, list):
            v = list(v)
        else:
            return _MISSING
        if not all(type(x) is str for x in v):
            return _MISSING
        st.given = v
    return st.given


def _settle_all(st, d, name):
    """After a body ran whose __all__ was read from the plan: the object
    handed out becomes the module's __all__ (as if the body had run first
    and the reader used its list) when the body made the same names; when
    it made others, the plan is out of date and the body's stays."""
    got = d.get("__all__", _MISSING)
    want = st.all.get("tuple") if isinstance(st.all, dict) else st.all
    if type(got) is type(st.given) and list(got) == want:
        d["__all__"] = st.given
    else:
        _warn("%s's __all__ is not the one the plan recorded (read before "
              "its body ran); run `coldstart plan` again" % name)


# name -> _State for every module created deferred and not loaded yet.
_pending = {}
# Names whose deferred body failed: a later import statement loads them
# normally, so it raises (or succeeds) as a plain import would.
_failed = set()
_counter = [0]
# Modules created deferred whose bodies have run, in the order they ran.
_ran = []
# name -> what runs right after the deferred body of name (defer_then()).
_after_body = {}


def _load(mod):
    """Runs the body of a deferred module (once, whichever thread asks
    first; the others wait on the module's import lock)."""
    d = _raw_dict(mod)
    name = d.get("__name__")
    st = _pending.get(name)
    if st is None:
        return
    if st.owner == _thread.get_ident():
        return  # a use from inside its own body: a circular import
    with _bootstrap._ModuleLockManager(name):
        st = _pending.get(name)
        if st is None or type(mod) is not _Deferred:
            return
        if st.error is not None:
            raise st.error
        st.owner = _thread.get_ident()
        spec = st.spec
        spec._initializing = True
        try:
            _run_body(st.loader, mod, name, st.lazy)
            if st.given is not None:
                _settle_all(st, d, name)
            for after in _after_body.pop(name, ()):
                after()
        except BaseException as e:
            st.error = e
            st.owner = None
            _failed.add(name)
            _after_body.pop(name, None)
            if sys.modules.get(name) is mod:
                del sys.modules[name]
            raise
        finally:
            spec._initializing = False
        del _pending[name]
        _ran.append(name)
        st.owner = None
        # The body may have given itself a class of its own: keep it.
        if type(mod) is _Deferred:
            object.__setattr__(mod, "__class__", _ModuleType)
        _mark_lazy(mod, d)


class _Deferred(_ModuleType):
    """The class of a module whose body has not run yet.  Reading any
    attribute but the ones the import system reads (and submodules bound by
    imports) runs the body first; so do setting and deleting attributes.
    A planned body's `from x import y` that the plan lets stay lazy gets a
    placeholder instead (_lazy_site)."""

    def __getattribute__(self, attr):
        if attr in _EXEMPT:
            return _module_getattr(self, attr)
        d = _raw_dict(self)
        name = d.get("__name__")
        st = _pending.get(name)
        if attr == "__dict__" and name in _running:
            _bind_pending(d)
        if st is not None and st.owner != _thread.get_ident():
            # A submodule that an import bound here is answered as it is.
            v = d.get(attr, _MISSING)
            if attr in st.rebinds:
                _load(self)
            elif v is _MISSING and isinstance(
                    sys.modules.get("%s.%s" % (name, attr)), _ModuleType):
                # A submodule still being imported (bound on its package
                # when done): IMPORT_FROM falls back to it, as without the
                # plan, where the package's body would have run first.
                return sys.modules["%s.%s" % (name, attr)]
            elif v is _MISSING:
                f = sys._getframe(1)
                if f.f_code is _FROMLIST_CODE:
                    # `from pkg import name` asks hasattr(pkg, name) first
                    # and imports pkg.name when it is missing: let it, but
                    # for a name the plan binds lazily, which is no module.
                    # `from pkg import *` asks for __all__ to import the
                    # submodules it names.
                    if attr == "__all__":
                        if _lazy_site(f.f_back, name, attr, True) \
                                is _MISSING:
                            _load(self)
                            return getattr(self, attr)
                    elif _lazy_site(f.f_back, name, attr, True) \
                            is not _MISSING:
                        return None
                    raise AttributeError(attr)
                p = _lazy_site(f, name, attr)
                if p is not _MISSING:
                    return p
                if attr == "__all__" and st.all is not None:
                    # `__all__ += sub.__all__`, extend_all(sub): the
                    # names, as the body would make them (plan's "all").
                    p = _recorded_all(st)
                    if p is not _MISSING:
                        return p
                _load(self)
            elif not (isinstance(v, _ModuleType) and
                      sys.modules.get("%s.%s" % (name, attr)) is v):
                _load(self)
            else:
                return v
            # Loaded: the module may have lazy names of its own now.
            if type(self) is not _Deferred:
                return getattr(self, attr)
        return _module_getattr(self, attr)

    def __setattr__(self, attr, value):
        d = _raw_dict(self)
        st = _pending.get(d.get("__name__"))
        # `import a.b` binds a.b on a: that must not run a's body.
        if st is not None and st.owner != _thread.get_ident() and not (
                isinstance(value, _ModuleType) and
                sys.modules.get("%s.%s" % (d["__name__"], attr)) is value):
            _load(self)
            if type(self) is not _Deferred:
                return setattr(self, attr, value)
        _module_setattr(self, attr, value)

    def __delattr__(self, attr):
        _load(self)
        if type(self) is not _Deferred:
            return delattr(self, attr)
        _ModuleType.__delattr__(self, attr)

    def __dir__(self):
        _load(self)
        if type(self) is not _Deferred:
            return dir(self)
        return _ModuleType.__dir__(self)


class _StandInLoader(object):
    """Stands in spec.loader while the import system creates the module;
    the module is created by the real loader, which exec_module puts back
    (_restore) before it does what the subclass says."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def _restore(self, module):
        spec = _module_getattr(module, "__spec__")
        spec.loader = self.loader
        d = _raw_dict(module)
        d["__loader__"] = self.loader
        return spec, d


class _DeferringLoader(_StandInLoader):
    """exec_module puts the real loader back and leaves the body for later."""

    def __init__(self, loader, rebinds=frozenset(), lazy=None, all_=None):
        _StandInLoader.__init__(self, loader)
        self.rebinds = rebinds
        self.lazy = lazy
        self.all = all_

    def exec_module(self, module):
        spec, d = self._restore(module)
        _counter[0] += 1
        _pending[spec.name] = _State(spec, self.loader, _counter[0],
                                     self.rebinds, self.lazy, self.all)
        object.__setattr__(module, "__class__", _Deferred)


# --- lazy from-imports ------------------------------------------------------
#
# `from x import y` in a body that runs reads x.y, which runs x's body when
# x is deferred.  When the plan says the importing body itself never reads
# y (plan_record.py: its code, the functions it calls, other modules reading
# it, annotations), the import binds a placeholder that the body's end takes
# out again: y is then a lazy name of the module, absent from its __dict__,
# and bound to the real object at its first use:
#   - by the module's own functions: a global it lacks is looked up in its
#     __builtins__, which is a copy of the builtins whose __missing__ binds
#     the lazy name (_Builtins);
#   - from outside: the module's class gets a __getattr__ (_LazyNames);
#     reading __dict__ (vars(), a star import) binds all of them first.
# So the module's own objects are the real ones, as without the plan.

# IMPORT_FROM's opcode, and the opcode (and argument, 3.12+) of a star
# import, from the plan ("opcodes"); empty when the plan has none.
_OPS = []
# name -> (module dict, {x: (attrs that may stay lazy, star names, the star
# names that bind at once or None)}) for
# the bodies running now with lazy from-imports.
_running = {}
# name -> [module dict, {bound name: (x, attr)}, module] for the modules
# with lazy names.
_tables = {}
_raw_dict = _ModuleType.__dict__["__dict__"].__get__
_facade = []
_warned = set()


# The lazy names' classes, made when the first body with lazy from-imports
# runs (_run_body): creating a class costs about 50 K instructions, and a
# start whose plan leaves no from-import lazy needs none of them.  Every
# use of them comes after that body began.
_Pending = _Builtins = _BodyRunning = _LazyBase = _LazyNames = \
    _LazyNamesGetattr = None
_lazy_types = []
_lazy_types_lock = _thread.allocate_lock()


def _make_lazy_types():
    global _Pending, _Builtins, _BodyRunning, _LazyBase, _LazyNames, \
        _LazyNamesGetattr
    with _lazy_types_lock:
        if _lazy_types:
            return

        class _Pending(object):
            """What a lazy from-import binds while the importing body runs;
            the body's end replaces it with a lazy name.  The plan says the
            body never uses it: if it does after all, it is resolved then
            and used as the real object (with a warning that the plan is out
            of date)."""
            __slots__ = ("home", "module", "attr")

            def __init__(self, home, module, attr):
                self.home = home
                self.module = module
                self.attr = attr

            def _target(self):
                home = object.__getattribute__(self, "home")
                mod = object.__getattribute__(self, "module")
                attr = object.__getattribute__(self, "attr")
                key = (home.get("__name__"), mod, attr)
                if key not in _warned:
                    _warned.add(key)
                    _warn("%s used %s.%s while its body ran, which the plan "
                          "says it does not: bound now; run `coldstart plan` "
                          "again" % (key[0], mod, attr))
                v = _import_from(mod, attr)
                for k, x in list(home.items()):
                    if x is self:
                        home[k] = v
                return v

            def __getattr__(self, attr):
                return getattr(_Pending._target(self), attr)

            def __call__(self, *args, **kwargs):
                return _Pending._target(self)(*args, **kwargs)

            def __mro_entries__(self, bases):
                return (_Pending._target(self),)

            def __getitem__(self, key):
                return _Pending._target(self)[key]

            def __instancecheck__(self, obj):
                return isinstance(obj, _Pending._target(self))

            def __subclasscheck__(self, cls):
                return issubclass(cls, _Pending._target(self))

            def __or__(self, other):
                return _Pending._target(self) | other

            def __ror__(self, other):
                return other | _Pending._target(self)

        class _Builtins(dict):
            """The __builtins__ of a module whose body may leave names lazy:
            a copy of the builtins (so that C code finding __import__ and the
            rest in it works) whose __missing__ binds the lazy name the code
            looked up, or falls back to the real builtins (for names added
            since).  Shared by all such modules: the frame that missed says
            whose name it was."""
            __slots__ = ()

            def __missing__(self, key):
                f = sys._getframe(0).f_back
                g = f.f_globals if f is not None else None
                t = _tables.get(g.get("__name__")) if g is not None else None
                if t is not None and t[0] is g and key in t[1]:
                    return _resolve(t, key)
                return _builtins_dict[key]

        class _BodyRunning(_ModuleType):
            """The class of a planned module while its body runs with lazy
            from-imports: reading its __dict__ from outside binds them."""

            @property
            def __dict__(self):
                d = _raw_dict(self)
                if d.get("__name__") in _running:
                    _bind_pending(d)
                return d

        class _LazyBase(_ModuleType):
            """What both classes of a loaded module with lazy names do: dir()
            lists them; __dict__ (vars(), a star import without __all__)
            binds them all first; setting or deleting one forgets it."""

            @property
            def __dict__(self):
                t = _table_of(self)
                if t is not None:
                    _resolve_all(t)
                return _raw_dict(self)

            def __dir__(self):
                d = _raw_dict(self)
                if "__dir__" in d:
                    return d["__dir__"]()
                t = _table_of(self)
                return list(d) + [k for k in (t[1] if t else ()) if k not in d]

            def __setattr__(self, attr, value):
                _module_setattr(self, attr, value)
                t = _table_of(self)
                if t is not None and t[1].pop(attr, None) is not None and \
                        not t[1]:
                    _unmark(t)

            def __delattr__(self, attr):
                t = _table_of(self)
                if t is not None and attr in t[1] and \
                        attr not in _raw_dict(self):
                    t[1].pop(attr, None)
                    if not t[1]:
                        _unmark(t)
                    return
                _ModuleType.__delattr__(self, attr)

        class _LazyNames(_LazyBase):
            """A loaded module with lazy names and no __getattr__ of its own:
            reading a lazy name (a miss in its __dict__) binds it."""

            def __getattr__(self, attr):
                t = _table_of(self)
                f = sys._getframe(1)
                if t is not None and attr in t[1]:
                    return _lazy_attr(self, attr, f)
                if attr == "__all__":
                    p = _lazy_site(f, _raw_dict(self).get("__name__"), attr)
                    if p is not _MISSING:
                        return p
                raise _no_attr(self, attr)

        class _LazyNamesGetattr(_LazyBase):
            """A loaded module with lazy names and a __getattr__ of its own
            (PEP 562), which must not see them: they are answered first."""

            def __getattribute__(self, attr):
                d = _raw_dict(self)
                t = _tables.get(d.get("__name__"))
                if t is not None and t[0] is d and attr in t[1] and \
                        attr not in d:
                    return _lazy_attr(self, attr, sys._getframe(1))
                return _module_getattr(self, attr)

        for cls in (_Pending, _Builtins, _BodyRunning, _LazyBase, _LazyNames,
                    _LazyNamesGetattr):
            cls.__qualname__ = cls.__name__
        _lazy_types.append(True)


def _import_from(mod, attr):
    """What `from mod import attr` binds, now."""
    m = sys.modules.get(mod)
    if m is None:
        __import__(mod)
        m = sys.modules[mod]
    try:
        return getattr(m, attr)
    except AttributeError:
        sub = sys.modules.get("%s.%s" % (mod, attr))
        if sub is not None:
            return sub
        where = _raw_dict(m).get("__file__") or "unknown location"
        raise ImportError("cannot import name %r from %r (%s)"
                          % (attr, mod, where), name=mod, path=where)


def _lazy_site(f, mod, attr, fromlist=False):
    """When frame f is a planned body at a from-import of mod.attr (or a
    star import of mod) that the plan lets stay lazy: what the instruction
    is to get (a placeholder, or a star import's names); else _MISSING.
    fromlist: f runs the import statement itself (_handle_fromlist asks)."""
    if f is None or not _OPS or f.f_code.co_name != "<module>":
        return _MISSING
    g = f.f_globals
    r = _running.get(g.get("__name__"))
    if r is None or r[0] is not g:
        return _MISSING
    spec = r[1].get(mod)
    if spec is None:
        return _MISSING
    if fromlist:
        if attr == "__all__":
            return True if spec[1] is not None else _MISSING
        return True if attr in spec[0] else _MISSING
    code = f.f_code.co_code
    i = f.f_lasti
    op = code[i]
    if op == _OPS[0]:
        if attr in spec[0]:
            return _Pending(g, mod, attr)
    elif spec[1] is not None and op == _OPS[1] and \
            (_OPS[2] is None or code[i + 1] == _OPS[2]):
        if attr == "__all__":
            return list(spec[1])
        if attr in spec[1] and (spec[2] is None or attr not in spec[2]):
            return _Pending(g, mod, attr)
    return _MISSING


def _builtins_facade():
    if not _facade:
        _facade.append(_Builtins(_builtins_dict))
    return _facade[0]


def _run_body(loader, module, name, lazy):
    """Runs a planned module's body; with lazy (its from-imports that may
    stay lazy), the placeholders they bind become lazy names afterwards."""
    if lazy is None:
        loader.exec_module(module)
        return
    if not _lazy_types:
        _make_lazy_types()
    d = _raw_dict(module)
    d["__builtins__"] = _builtins_facade()
    prev = _running.get(name)
    _running[name] = (d, lazy)
    plain = type(module) is _ModuleType
    if plain:
        object.__setattr__(module, "__class__", _BodyRunning)
    try:
        loader.exec_module(module)
    finally:
        if prev is None:
            _running.pop(name, None)
        else:
            _running[name] = prev
        if plain and type(module) is _BodyRunning:
            object.__setattr__(module, "__class__", _ModuleType)
        _collect(module, d, name)


def _bind_pending(d):
    """Someone reads the namespace of a body that runs as a whole (enum's
    _convert_, attrs copying it for generated code): the placeholders in
    it become the real objects first."""
    for k, v in list(d.items()):
        if type(v) is _Pending:
            d[k] = _import_from(object.__getattribute__(v, "module"),
                                object.__getattribute__(v, "attr"))


def _collect(module, d, name):
    names = {}
    for k, v in list(d.items()):
        if type(v) is _Pending:
            del d[k]
            names[k] = (object.__getattribute__(v, "module"),
                        object.__getattribute__(v, "attr"))
    if not names:
        return
    t = _tables.get(name)
    if t is None or t[0] is not d:
        t = _tables[name] = [d, {}, module]
    t[1].update(names)
    fac = _builtins_facade()
    for k in names:
        # A lazy name that shadows a builtin must reach __missing__.
        if k in fac:
            del fac[k]


def _mark_lazy(module, d):
    """Gives a module with lazy names the class that binds them when read
    from outside (or binds them all now when it has a class of its own)."""
    t = _tables.get(d.get("__name__"))
    if t is None or t[0] is not d or not t[1]:
        return
    if type(module) is _ModuleType:
        object.__setattr__(module, "__class__", _LazyNamesGetattr if
                           "__getattr__" in d else _LazyNames)
    elif not isinstance(module, _LazyBase):
        _resolve_all(t)


def _resolve(t, key):
    """Binds lazy name key of table t (resolving its from-import now) and
    returns the object."""
    d, names = t[0], t[1]
    src = names.get(key)
    if src is None:  # bound meanwhile (another thread)
        v = d.get(key, _MISSING)
        if v is _MISSING:
            raise NameError("name %r is not defined" % key)
        return v
    v = _import_from(src[0], src[1])
    d.setdefault(key, v)
    names.pop(key, None)
    if not names:
        _unmark(t)
    return d[key]


def _resolve_all(t):
    for k in list(t[1]):
        if k in t[1]:
            _resolve(t, k)


def _unmark(t):
    d, module = t[0], t[2]
    name = d.get("__name__")
    if _tables.get(name) is t:
        del _tables[name]
    if type(module) in (_LazyNames, _LazyNamesGetattr):
        object.__setattr__(module, "__class__", _ModuleType)


def _table_of(module):
    d = _raw_dict(module)
    t = _tables.get(d.get("__name__"))
    return t if t is not None and t[0] is d else None


def _lazy_attr(module, attr, f):
    """module.attr for a lazy name attr (table t), asked from frame f."""
    t = _table_of(module)
    if f.f_code is _FROMLIST_CODE:
        return None  # hasattr(): it exists, no need to bind it for that
    p = _lazy_site(f, t[0].get("__name__"), attr)
    if p is not _MISSING:
        return p  # re-exported lazily by another planned body
    return _resolve(t, attr)


def _no_attr(module, attr):
    name = _raw_dict(module).get("__name__")
    msg = "module %r has no attribute %r" % (name, attr)
    try:
        return AttributeError(msg, name=attr, obj=module)
    except TypeError:  # before 3.10
        return AttributeError(msg)


def lazy_names(module):
    """The names of module that a plan left lazy and nothing has used yet."""
    t = _table_of(module)
    return sorted(t[1]) if t is not None else []


class _BodyLoader(_StandInLoader):
    """For a planned module that loads but whose body's from-imports may
    stay lazy: exec_module puts the real loader back and runs the body with
    them."""

    def __init__(self, loader, lazy):
        _StandInLoader.__init__(self, loader)
        self.lazy = lazy

    def exec_module(self, module):
        spec, d = self._restore(module)
        _run_body(self.loader, module, spec.name, self.lazy)
        _mark_lazy(module, d)


class _ParentFirstLoader(object):
    """Stands in spec.loader for a native extension whose package is still
    deferred: creating it runs its init, which without the plan would run
    after the package's body, so the package's body runs first.  When that
    body imports the extension itself, the module it made is the answer."""

    def __init__(self, loader, parent):
        self.loader = loader
        self.parent = parent
        self.done = None

    def create_module(self, spec):
        mod = sys.modules.get(self.parent)
        if type(mod) is _Deferred:
            _load(mod)
        done = sys.modules.get(spec.name)
        if done is not None:
            self.done = (done, _module_getattr(done, "__spec__"))
            return done
        return self.loader.create_module(spec)

    def exec_module(self, module):
        if self.done is not None and self.done[0] is module:
            # The package's body imported it: keep its own spec.
            module.__spec__ = self.done[1]
            return
        spec = _module_getattr(module, "__spec__")
        spec.loader = self.loader
        _raw_dict(module)["__loader__"] = self.loader
        self.loader.exec_module(module)


def _pending_parent(name):
    """The package of name when it is a module created deferred whose body
    has not run, else None."""
    parent = name.rpartition(".")[0]
    if parent and parent in _pending and \
            type(sys.modules.get(parent)) is _Deferred:
        return parent
    return None


# Loaders whose modules can be deferred: their bodies are Python code.
DEFERRABLE_LOADERS = (_bootstrap_external.SourceFileLoader,
                      _bootstrap_external.SourcelessFileLoader)


def deferring_loader(loader):
    """Wraps loader so that the module it is about to create is left
    deferred (for coldstart.lazy.defer_import)."""
    return _DeferringLoader(loader)


# --- the finder ------------------------------------------------------------

_LOADERS = {
    "source": _bootstrap_external.SourceFileLoader,
    "bytecode": _bootstrap_external.SourcelessFileLoader,
    "extension": _bootstrap_external.ExtensionFileLoader,
}
# The index's kinds, as the C check (check_index) takes them.
_KINDS = frozenset(_LOADERS)


# --- the code archive ------------------------------------------------------

# The plan's code archive (plan_code.py), opened by install(): [descriptor].
_code_fd = []
_CODE_MAGIC = b"coldstart-code\n"
# The archive _head_part opened and checked, until install() takes it
# (_open_archive) or closes it: [(descriptor, stat result)].
_head_fd = []


def _drop_head_fd():
    while _head_fd:
        os.close(_head_fd.pop()[0])


def _archive_paths(plan, path):
    """Where the archive may be: its recorded path, taken relative to the
    plan's directory when it is relative; then, when that is not there, the
    file of its name beside the plan (a plan and its archive copied
    together elsewhere)."""
    here = os.path.dirname(plan.get("_file") or "")
    first = path if path[:1] == "/" else os.path.join(here, path)
    out = [first]
    beside = os.path.join(here, os.path.basename(path))
    if here and beside != first:
        out.append(beside)
    return out


def _open_code(plan, rows):
    """The descriptor of the plan's code archive and each index row's
    entry ([offset, length, crc, ...]), or None (with a warning when the
    archive is there but unusable: the modules then load from their
    files).  The archive passes the trust rule (open_trusted) and is read
    only through the descriptor checked then; each part's bytes are read
    into private memory and their CRC-32 checked before they are used."""
    c = plan.get("code")
    if not isinstance(c, dict):
        return None
    at, path = c.get("at"), c.get("path")
    if not isinstance(at, list) or len(at) != rows or \
            not isinstance(path, str):
        return None
    if c.get("optimize") != sys.flags.optimize:
        return None  # compiled for another -O level: the files are right
    crcs = False
    for v in at:
        if v is not None:
            crcs = len(v) > 2
            break
    try:
        fd, _ = _open_archive(plan, c, crcs)
    except (PlanError, OSError) as e:
        if getattr(e, "trust", False):
            _warn("%s; running without the plan" % e)
            return _REFUSED
        _warn("not using the code archive: %s; modules load from their "
              "files" % (getattr(e, "strerror", None) or e))
        return None
    return fd, at


def _open_archive(plan, c, crcs=True):
    """(descriptor, stat result) of the plan's code archive (c its code
    member, with a str path): the first of _archive_paths() that passes the
    trust rule, has the recorded size (and mtime, for a plan without
    checksums: not crcs) and this interpreter's header.  Raises PlanError
    (trust set) when one fails the trust rule, else OSError or PlanError
    for the first that could not be used."""
    if _head_fd:
        # Opened and checked by _head_part for this plan's head part.
        got = _head_fd.pop()
        if crcs:
            return got
        os.close(got[0])
    head = _CODE_MAGIC + _bootstrap_external.MAGIC_NUMBER
    err = None
    for p in _archive_paths(plan, c["path"]):
        fd = -1
        try:
            fd, st = open_trusted(p, "code archive")
            if st.st_size != c.get("size") or (
                    not crcs and st.st_mtime_ns != c.get("mtime_ns")):
                # (A plan without checksums relies on the mtime too.)
                raise OSError("%r changed since the plan was made" % p)
            if os.pread(fd, len(head), 0) != head:
                raise OSError("%r is not an archive of this interpreter" % p)
        except (PlanError, OSError) as e:
            if getattr(e, "trust", False):
                raise
            if fd >= 0:
                os.close(fd)
            if err is None:
                err = e
            continue
        return fd, st
    raise err if err is not None else OSError("no code archive")


_crc32 = []


def _crc(data):
    """zlib.crc32(data).  zlib is imported for it without staying in
    sys.modules, so the program sees the modules it would see without the
    plan (a later `import zlib` gets a module of its own)."""
    if not _crc32:
        had = sys.modules.get("zlib")
        import zlib
        if had is None:
            sys.modules.pop("zlib", None)
        _crc32.append(zlib.crc32)
        if _sum[0] is _crc:
            _sum[0] = zlib.crc32
    return _crc32[0](data)


# The checksum the archive's parts are checked with: [function, its place
# in a module's entry, its place in the regex and string tables' entries].
# zlib's CRC-32 unless the plan also recorded CRC-32Cs (code.sums) and the
# extension computes them on the CPU's crc32 instruction (_use_crc32c).
_sum = [_crc, 2, 3]
# What code.sums may say: CRC-32s only, or CRC-32s and CRC-32Cs (a
# module's entry then has 7 members, the tables' 5; a plan before code.sums
# has CRC-32s, or no checksums at all).
_SUMS = (["crc32"], ["crc32", "crc32c"])


def _use_crc32c(code, mod):
    """Checks the archive's parts with mod.crc32c when the plan recorded
    their CRC-32Cs and the CPU has the crc32 instruction (on tables, zlib's
    crc32 is as fast: the plan has both)."""
    hw = getattr(mod, "crc32c_hw", None)
    if code.get("sums") == _SUMS[1] and hw is not None and hw() and \
            os.environ.get("COLDSTART_PLAN_CRC32C") != "0":
        _sum[:] = [mod.crc32c, 6, 4]


_bad_parts = set()
# _open_code's answer for an archive that fails the trust rule.
_REFUSED = object()
# The plan file install() applies (absolute): [path].
_plan_file = []
# The modules whose files' ctime or inode changed since planning (check()).
_suspect = set()


def _checked(data, want, what, table=False):
    """data when its checksum (_sum) is want (or the entry has none); None,
    with one warning per part, when it is not."""
    if want is None:
        return data
    if _sum[0](data) == want:
        return data
    if what not in _bad_parts:
        _bad_parts.add(what)
        _warn("the code archive's bytes for %s are not the ones the plan "
              "recorded; %s" % (what, "it is not used" if table else
                                "it loads from its file"))
    return None


def _read_part(at, what, table=False):
    """The bytes of the regex or string table, whose entry at is [offset,
    length, count, crc32, crc32c] ([offset, length, count] in a plan
    without checksums), read into private memory and checked; None when
    they cannot be used."""
    try:
        data = os.pread(_code_fd[0], at[1], at[0])
    except (OSError, OverflowError, IndexError):
        return None
    if len(data) != at[1]:
        return None
    i = _sum[2]
    return _checked(data, at[i] if len(at) > i else None, what, table)


def _file_same(at, path):
    """Whether the module's file, whose ctime or inode is not the one the
    archive's entry recorded (check(): an edit keeping size and mtime, or a
    copy), still has the bytes its archived code was compiled from."""
    if len(at) < 6:
        return True
    try:
        with open(path, "rb") as f:
            data = f.read()
    except (OSError, ValueError):
        return False
    return _crc(data) == at[5]


def _archive_code(loader, fullname):
    at = loader.__dict__.get("_coldstart_at")
    if at is None or fullname != loader.name or not _code_fd:
        return None
    if fullname in _suspect and not _file_same(at, loader.path):
        if fullname not in _bad_parts:
            _bad_parts.add(fullname)
            _warn("%s: %r changed since the plan was made (its size and "
                  "mtime did not); it loads from its file"
                  % (fullname, loader.path))
        return None
    # _read_part(at[:3], fullname), inlined: once per archived module.
    try:
        data = os.pread(_code_fd[0], at[1], at[0])
    except (OSError, OverflowError):
        return None
    if len(data) != at[1]:
        return None
    s = _sum
    if len(at) > 2 and s[0](data) != at[s[1]] and \
            _checked(data, at[s[1]], fullname) is None:
        return None
    try:
        code = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return None
    if type(code) is not _CodeType:
        return None
    _imp._fix_co_filename(code, loader.path)
    return code


_CodeType = type(_archive_code.__code__)


# --- the regex table ---------------------------------------------------------
#
# The code archive ends with what the regular expression compiler handed
# _sre.compile for each pattern compiled while planning (plan_code.py).
# With the plan, the compiler's compile() answers those patterns with one
# _sre.compile call: no parsing, no code generation, the same pattern.

# The module whose compile(pattern, flags) re._compile calls.
RE_COMPILER = "re._compiler" if sys.version_info >= (3, 11) else \
    "sre_compile"
# [offset, length] of the table in the archive, once install() found one.
_regex_at = []


def _regex_table():
    data = _read_part(_regex_at, "the regex table", True)
    try:
        rows = marshal.loads(data) if data is not None else ()
        if type(rows) is not list:
            rows = ()
    except (ValueError, EOFError, TypeError):
        rows = ()
    table = {}
    for r in rows:
        if type(r) is tuple and len(r) == 8:
            table[(r[0], r[1])] = r[2:]
    return table


def _hook_regex(module):
    """Gives the compiler module a compile() that answers the planned
    patterns from the table (read at its first call)."""
    d = _raw_dict(module)
    orig, sre = d.get("compile"), d.get("_sre")
    if orig is None or sre is None or getattr(orig, "_coldstart", False):
        return
    state = []

    def compile(p, flags=0):
        if not state:
            state.append(_regex_table())
        if type(p) is str or type(p) is bytes:
            args = state[0].get((p, flags))
            if args is not None:
                return sre.compile(*args)
        return orig(p, flags)
    compile._coldstart = True
    compile.__wrapped__ = orig
    d["compile"] = compile


# --- the string table ------------------------------------------------------
#
# After the regex table comes the code of each compile(), exec() and eval()
# call on a str made while planning (plan_code.py).  The C extension
# _plancode answers those calls: it patches the builtin functions in place,
# so no frame is added and the objects stay the same (docs/plan.md, "The
# string table").  coldstart plan builds it for the target's interpreter
# and the plan's code member names the file ("ext").

def load_plancode(path, size=None, mtime_ns=None):
    """The _plancode extension in path: a regular file that passes the
    trust rule (open_trusted), with the size and mtime the plan recorded
    when given.  It is loaded through the descriptor that was checked
    (/proc/self/fd), so the file checked is the file loaded.  Raises
    PlanError (with trust set, or not: the file is not there or not for
    this user), OSError or ImportError."""
    fd, st = open_trusted(path, "extension")
    try:
        if size is not None and (st.st_size != size or
                                 st.st_mtime_ns != mtime_ns):
            raise OSError("%r changed since the plan was made" % path)
        name = "coldstart._plancode"
        had = sys.modules.get(name)
        via = "/proc/self/fd/%d" % fd
        if not os.path.exists(via):
            raise OSError("cannot load %r through its descriptor (no /proc)"
                          % path)
        mod = _imp.create_dynamic(_ModuleSpec(name, None, origin=via))
        if had is None:
            sys.modules.pop(name, None)
        try:
            mod.__file__ = path
        except (AttributeError, TypeError):
            pass
        return mod
    finally:
        os.close(fd)


# The extension once install() gave it the plan's table: [module].
_plancode = []
# The plan's extension once install() loaded it, table or not: [module].
_ext = []


def debug_ranges():
    """Whether this interpreter compiles column positions into code
    (3.11+; off with -X no_debug_ranges or PYTHONNODEBUGRANGES): part of
    what the string table's code depends on, like the -O level."""
    if sys.version_info < (3, 11):
        return True
    if "no_debug_ranges" in sys._xoptions:
        return False
    return sys.flags.ignore_environment or \
        not os.environ.get("PYTHONNODEBUGRANGES")


def _apply_ext(fd, code):
    """Loads the plan's extension (code.ext) when it has one: it answers the
    string table, and keeps the interpreter's frame stack chunks (both can
    be turned off for comparisons)."""
    at, ext = code.get("strings"), code.get("ext")
    strings = isinstance(at, list) and len(at) >= 3 and \
        os.environ.get("COLDSTART_PLAN_STRINGS") != "0"
    if strings and code.get("debug_ranges", True) != debug_ranges():
        strings = False  # compiled with other position information
    if not (isinstance(ext, dict) and isinstance(ext.get("path"), str)):
        if strings:
            _warn("the plan has a string table but no extension to answer "
                  "it; code compiled from strings is compiled as usual")
        return
    try:
        # Loaded already to check the plan (_early_ext), or now.
        mod = _checks[0] if _checks else _load_ext(
            ext, os.path.dirname(_plan_file[0]) if _plan_file else "")
        if mod is None:
            return
        _use_crc32c(code, mod)
        if strings:
            data = _read_part(at, "the string table", True)
            if data is None:
                strings = False
            elif len(at) > _sum[2] and hasattr(mod, "apply_checked"):
                # Checked against the plan's checksum (_read_part).
                mod.apply_checked(data)
            else:
                mod.apply(data)
    except (OSError, ImportError, ValueError, RuntimeError, TypeError,
            PlanError) as e:
        if getattr(e, "trust", False):
            raise
        why = "%r: %s" % (e.filename, e.strerror) if \
            isinstance(e, OSError) and e.filename and e.strerror else e
        _warn("not answering code compiled from strings: %s; it is "
              "compiled as usual" % (why,))
        return
    _ext[:] = [mod]
    if strings:
        _plancode[:] = [mod]
    # An extension built before keep_chunks() or prefault() existed has
    # none; the rest of the plan applies.
    keep = getattr(mod, "keep_chunks", None)
    if keep is not None and os.environ.get("COLDSTART_PLAN_CHUNKS") != "0":
        keep()
        prefault = getattr(mod, "prefault", None)
        if prefault is not None and \
                os.environ.get("COLDSTART_PLAN_PREFAULT") != "0":
            # Until the first response (responded()).
            prefault(True)


def _load_ext(ext, here):
    """The extension code.ext names, from its recorded path or, when that is
    not there, the file of its name in here (the plan's directory); None
    when neither is there or for this user (a plan of root's, applied by a
    service user that cannot read root's cache: the plan applies without
    the extension, quietly).  Raises PlanError with trust set (install()
    then refuses the whole plan), OSError or ImportError."""
    paths = [ext["path"]]
    if here:
        beside = os.path.join(here, os.path.basename(ext["path"]))
        if beside != paths[0]:
            paths.append(beside)
    for p in paths:
        try:
            return load_plancode(p, ext.get("size"), ext.get("mtime_ns"))
        except PlanError as e:
            if e.trust:
                raise
            continue
    return None


def _early_ext(plan, path):
    """Loads the plan's extension before the plan is checked, so that its C
    column checks check it (_checks): at every start they cost a few
    hundred thousand instructions less than the _good_* functions for a
    plan of a few hundred modules.  Anything unusual (no extension, not
    loadable, not trusted, one without the checks) leaves the checks to
    Python; install() then loads it, or refuses, as it always did
    (_apply_ext)."""
    c = plan.get("code")
    ext = c.get("ext") if type(c) is dict else None
    if type(ext) is not dict or not _is_abs(ext.get("path")) or \
            os.environ.get("COLDSTART_PLAN_CHECKS") == "0":
        return
    try:
        mod = _load_ext(ext, os.path.dirname(os.path.abspath(path)))
    except (PlanError, OSError, ImportError, ValueError, TypeError):
        return
    if mod is not None and hasattr(mod, "stale"):
        _checks[:] = [mod]


class _AfterExecLoader(_StandInLoader):
    """Stands in spec.loader to call after(module) once the module's body
    has run: at once, or after the deferred body when the loader it wraps
    leaves it deferred."""

    def __init__(self, loader, after):
        _StandInLoader.__init__(self, loader)
        self.after = after

    def exec_module(self, module):
        spec, d = self._restore(module)
        self.loader.exec_module(module)
        if type(module) is _Deferred and spec.name in _pending:
            _after_body.setdefault(spec.name, []).append(
                lambda: self.after(module))
        else:
            self.after(module)


class _ArchiveSourceLoader(_bootstrap_external.SourceFileLoader):
    """A source loader whose code comes from the plan's code archive (the
    source's size and mtime were checked with the plan)."""

    def get_code(self, fullname):
        code = _archive_code(self, fullname)
        return code if code is not None else \
            _bootstrap_external.SourceFileLoader.get_code(self, fullname)


class _ArchiveSourcelessLoader(_bootstrap_external.SourcelessFileLoader):
    """A .pyc loader whose code comes from the plan's code archive."""

    def get_code(self, fullname):
        code = _archive_code(self, fullname)
        return code if code is not None else \
            _bootstrap_external.SourcelessFileLoader.get_code(self,
                                                                fullname)


_ARCHIVE_LOADERS = {"source": _ArchiveSourceLoader,
                    "bytecode": _ArchiveSourcelessLoader}

# The loaders of the specs PlanFinder makes whose modules the extension's
# import (fast_imports) creates itself: their create_module() leaves that
# to the import system.
_FAST_LOADERS = (_ArchiveSourceLoader, _ArchiveSourcelessLoader,
                 _bootstrap_external.SourceFileLoader,
                 _bootstrap_external.SourcelessFileLoader, _DeferringLoader,
                 _BodyLoader, _AfterExecLoader)


def _fast_imports(finder):
    """Has the plan's extension import the modules finder answers, in
    place of importlib's _find_and_load (docs/plan.md, "The import of a
    planned module"), where importlib's is its own (not wrapped by a
    profiler) and of a version this was tested with (3.8-3.13)."""
    fast = getattr(_ext[0], "fast_imports", None) if _ext else None
    fl = getattr(_bootstrap, "_find_and_load", None)
    code = getattr(fl, "__code__", None)
    if fast is None or code is None or code.co_name != "_find_and_load" or \
            getattr(fl, "__module__", None) not in ("importlib._bootstrap",
                                                    "_frozen_importlib") or \
            not (3, 8) <= sys.version_info[:2] <= (3, 13) or \
            os.environ.get("COLDSTART_PLAN_FAST") == "0":
        return False
    return fast(finder, _bootstrap, _imp, _FAST_LOADERS)


def _dirname(path):
    # posixpath.dirname(), for the paths a plan records (one per planned
    # module), without its str/bytes and separator look-ups.
    head = path[:path.rfind("/") + 1]
    if head and head != "/" * len(head):
        head = head.rstrip("/")
    return head


class PlanFinder(object):
    """A meta-path finder answering the plan's modules from their recorded
    files: no sys.path scan.  It answers only when the recorded file is
    where the normal finders would look (its sys.path entry is on sys.path,
    or its directory in the parent's __path__); anything else goes to the
    normal finders.  A module's entry is made from its index row when it is
    first asked for (entry())."""

    def __init__(self, plan, defer, strict=False, keep=(), code=None,
                 lazy_from=True):
        self.rows = {}
        for i, row in enumerate(plan["index"]):
            self.rows[row[0]] = i
        self.index = plan["index"]
        self.defer = defer
        self.strict = strict
        self.keep = frozenset(keep)
        self.code = code
        table = plan.get("from")
        ops = plan.get("opcodes")
        self.table = table if defer and lazy_from and isinstance(
            table, dict) and isinstance(ops, list) and len(ops) == 3 \
            else {}
        if self.table:
            _OPS[:] = ops
        # The whole table checked at once; when that finds anything, each
        # module's rows are checked at its import (entry()).
        k = _checks[0] if _checks else None
        self._from_ok = k.check_from(self.table) if k is not None else \
            _check()._good_from(self.table)
        alls = plan.get("all")
        # The recorded __all__ of modules that may be deferred.
        self.alls = alls if defer and isinstance(alls, dict) and \
            os.environ.get("COLDSTART_PLAN_ALL") != "0" else {}
        self._entries = {}
        self._path_key = None
        self._path_state_v = None
        self._listings = {}
        # The plan's sys.path entries: absolute path -> first position.
        self._known = {}
        for i, e in enumerate(plan.get("sys_path") or ()):
            self._known.setdefault(e["entry"], i)
        self.answered = 0
        # Deferred modules whose body warned at import while planning, in
        # a way the warning filters of this run show (-W default,
        # PYTHONWARNINGS) where the planning run's hid it: they run at
        # once, so their warnings are shown as without the plan.
        self.warned = _check()._shown_warnings(plan) \
            if defer and sys.warnoptions else frozenset()

    @property
    def entries(self):
        """Every module's entry (made now for those not asked for yet)."""
        for name in self.rows:
            self.entry(name)
        return self._entries

    def action(self, name):
        """What the plan does with module name here: load, eager, defer
        (strict mode applied), or None for a module not in the plan."""
        i = self.rows.get(name)
        if i is None:
            return None
        row = self.index[i]
        action = row[5]
        if self.strict and row[1] != "extension" and not row[6] and \
                action in ("eager", "defer") and row[0] not in self.keep:
            action = "defer"
        if action == "defer" and name in self.warned:
            action = "eager"
        return action

    def entry(self, name):
        e = self._entries.get(name)
        if e is not None or name not in self.rows:
            return e
        i = self.rows[name]
        row = self.index[i]
        kind, path = row[1], row[2]
        e = {"kind": kind, "path": path, "action": self.action(name),
             "rebinds": frozenset(row[10] or ()), "entry_index": row[9]}
        if row[8] is not None:
            # What the path-based finder gives a regular package: its own
            # directory (the recorded list may hold what its body appended,
            # and a damaged plan anything).
            pkg = _dirname(path)
            e["search"] = [pkg]
            if not path[len(pkg):].startswith("/__init__."):
                e["elsewhere"] = True
            e["dir"] = row[7] or _dirname(pkg)
        else:
            e["dir"] = row[7] or _dirname(path)
        if row[7]:
            # The file must be the one the path-based finder would find in
            # that directory: DIR/NAME.SUFFIX, or DIR/NAME/__init__.SUFFIX
            # for a package; a row saying otherwise is not answered.
            prefix = row[7].rstrip("/") + "/" + name.rpartition(".")[2]
            rest = path[len(prefix):] if path.startswith(prefix) else ""
            if not (rest[:1] == "." and "/" not in rest or
                    row[8] is not None and rest[:10] == "/__init__." and
                    rest.count("/") == 1):
                e["elsewhere"] = True
        if self.code is not None and kind in _ARCHIVE_LOADERS and \
                isinstance(self.code[i], list):
            e["code"] = self.code[i]
        rows = self.table.get(name)
        if rows:
            why = None if self._from_ok else \
                _check()._bad_lazy({name: rows})
            if why is None:
                e["lazy"] = self._lazy(rows)
            elif "from" not in _bad_parts:
                # Checked here, for the modules imported only: its
                # from-imports bind at once, as without the plan (one
                # warning for the whole table).
                _bad_parts.add("from")
                _warn("the plan's %s is malformed; the from-imports of "
                      "the modules it names bind at once" % why)
        self._entries[name] = e
        return e

    def _lazy(self, rows):
        """A body's from-imports that may stay lazy here (the plan's
        "from"): those of a module that is deferred here, or that has lazy
        names of its own to pass on."""
        lazy = {}
        for row in rows:
            mod = row[0]
            if not (self.action(mod) == "defer" or mod in self.table):
                continue
            attrs, star, eager = lazy.get(mod, (frozenset(), None, None))
            if row[1] == "*":
                star = tuple(row[2].split())
                # The names the body reads bind at once (a 4th field).
                eager = frozenset(row[3].split()) if len(row) > 3 and \
                    isinstance(row[3], str) else None
            else:
                attrs = attrs.union(row[1].split())
            lazy[mod] = (attrs, star, eager)
        return lazy or None

    def _path_state(self):
        """For the current sys.path: {absolute entry: first position}, and
        per position the most any entry up to it had in the plan's sys_path
        (an entry the plan did not have counts as infinite)."""
        key = tuple(sys.path)
        if key != self._path_key:
            pos = {}
            worst = []
            w = -1
            for p in key:
                a = os.path.abspath(p or ".") if isinstance(p, str) else None
                worst.append(w)
                if a is not None and a not in pos:
                    pos[a] = len(worst) - 1
                k = self._known.get(a)
                w = max(w, k if k is not None else 1 << 30)
            self._path_state_v = (pos, worst, key)
            self._path_key = key
        return self._path_state_v

    def _listing_of(self, d, mt):
        """_listing(d), kept while the directory's mtime is mt."""
        got = self._listings.get(d)
        if got is None or got[0] != mt:
            got = (mt, _listing(d))
            self._listings[d] = got
        return got[1]

    def _found_before(self, name, entries, stop, known_below):
        """Whether an entry of entries[:stop] that the plan did not list
        before the module's own (known_below) holds module name: then the
        path-based finder would find that one, and the plan does not
        answer."""
        base = name.rpartition(".")[2]
        for p in entries[:stop]:
            if not isinstance(p, str):
                continue
            a = os.path.abspath(p or ".")
            k = self._known.get(a) if known_below is not None else None
            if k is not None and k < known_below:
                continue
            try:
                st = os.stat(a)
            except (OSError, ValueError):
                continue  # nothing there for the path-based finder
            if st.st_mode & 0o170000 == 0o040000:
                if _holds(a, base, self._listing_of(a, st.st_mtime_ns)):
                    return True
            else:
                return True  # a zip archive the plan does not know
        return False

    def _on_sys_path(self, name, where, ei):
        """Whether the path-based finder would find top-level module name
        in the plan's directory where: where is on sys.path, and no entry
        before it holds name (checked in the entries the plan did not have
        before the module's own: PYTHONPATH, a .pth, an insert at run time)."""
        pos, worst, key = self._path_state()
        c = pos.get(where)
        if c is None:
            return False
        if not isinstance(ei, int) or ei < 0:
            ei = None
        if ei is not None and worst[c] < ei:
            return True
        return not self._found_before(name, key, c, ei)

    def find_spec(self, name, path=None, target=None):
        if name not in self.rows or name in _failed:
            if path is not None and _pending:
                return self._native_unplanned(name, path, target)
            return None
        m = self.entry(name)
        where = m["dir"]
        if "elsewhere" in m:
            return None
        if path is None:
            if not self._on_sys_path(name, where, m["entry_index"]):
                return None
        else:
            try:
                i = path.index(where) if type(path) is list else \
                    list(path).index(where)
            except (ValueError, TypeError):
                return None
            if i and self._found_before(name, list(path), i, None):
                return None
        at = m.get("code")
        if at is not None:
            loader = _ARCHIVE_LOADERS[m["kind"]](name, m["path"])
            loader._coldstart_at = at
        else:
            loader = _LOADERS[m["kind"]](name, m["path"])
        # spec_from_file_location(name, path, loader=loader,
        # submodule_search_locations=search) for the recorded absolute
        # path, without its checks and conversions.
        spec = _ModuleSpec(name, loader, origin=m["path"])
        spec._set_fileattr = True
        search = m.get("search")
        if search is not None:
            spec.submodule_search_locations = list(search)
        if m["kind"] == "source":
            # What _init_module_attrs would work out for __cached__.
            c = _cached(m["path"])
            if c is not None:
                spec.cached = c
        lazy = m.get("lazy")
        if self.defer and m["action"] == "defer":
            spec.loader = _DeferringLoader(loader, m["rebinds"], lazy,
                                           self.alls.get(name))
        elif lazy is not None:
            spec.loader = _BodyLoader(loader, lazy)
        elif m["kind"] == "extension" and _pending:
            parent = _pending_parent(name)
            if parent is not None:
                spec.loader = _ParentFirstLoader(loader, parent)
        if name == RE_COMPILER and _regex_at:
            spec.loader = _AfterExecLoader(spec.loader, _hook_regex)
        self.answered += 1
        return spec

    def _native_unplanned(self, name, path, target):
        """The spec of a native extension the plan does not know, inside a
        package still deferred, from the finders after this one, with the
        package's body to run first (_ParentFirstLoader); None for
        anything else (the normal finders answer it as usual)."""
        parent = _pending_parent(name)
        if parent is None:
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is None:
                continue
            if isinstance(spec.loader,
                          _bootstrap_external.ExtensionFileLoader):
                spec.loader = _ParentFirstLoader(spec.loader, parent)
            return spec
        return None

    def invalidate_caches(self):
        self._path_key = None
        self._listings = {}


# cache_from_source()'s answer without its checks: __pycache__/NAME.TAG.pyc
# beside the source, when no pycache_prefix moves it.
_CACHE_SUFFIX = []


def _cached(path):
    if getattr(sys, "pycache_prefix", None) is not None:
        return None
    if not _CACHE_SUFFIX:
        tag = sys.implementation.cache_tag
        if tag is None:
            return None
        opt = sys.flags.optimize
        _CACHE_SUFFIX.append("." + tag + (".opt-%d" % opt if opt else "") +
                             _bootstrap_external.BYTECODE_SUFFIXES[0])
    head, _, tail = path.rpartition("/")
    base, dot, _ = tail.rpartition(".")
    if not head or not base:
        return None
    return head + "/__pycache__/" + base + _CACHE_SUFFIX[0]


# --- public API ------------------------------------------------------------

_installed = [None]
_warm_lock = _thread.allocate_lock()
_warm_state = {"mode": "off", "started": False, "delay": None}


def installed():
    """The PlanFinder in use, or None."""
    return _installed[0]


def archived_loader(name, path):
    """A source loader for module name from the file path whose
    code comes from the installed plan's code archive, as PlanFinder's
    loaders do, or None when no plan is installed or it archived no code for
    that module from that file.  For a program loading a file the plan
    recorded without the import system's finders (coldstart-fdk's FUNC):
    the file is not compiled again.  Only the code's source changes, not how
    the module's body runs."""
    finder = _installed[0]
    if finder is None or finder.code is None or not _code_fd:
        return None
    i = finder.rows.get(name)
    if i is None:
        return None
    row = finder.index[i]
    at = finder.code[i]
    if row[1] != "source" or not isinstance(at, list) or \
            row[2] != os.path.abspath(path):
        return None
    loader = _ArchiveSourceLoader(name, path)
    loader._coldstart_at = at
    return loader


def deferred():
    """Names of the modules created deferred whose bodies have not run, in
    the order they were imported."""
    return [n for n, _ in sorted(_pending.items(), key=lambda kv: kv[1].order)]


def is_deferred(module):
    """True while module's body has not run."""
    return type(module) is _Deferred


def defer_then(name, after):
    """Creates top-level module name deferred, as the plan defers a module
    (its body runs at its first real use), and calls after() right after
    that body, before any other thread can use the module: after() is part
    of the module's import then.  True when it did (or name is deferred
    already); False, doing nothing, when name is imported already or is no
    pure-Python module.  coldstart-fdk sets logging up this way under a
    plan."""
    if "." in name:
        raise ValueError("defer_then() takes top-level modules: %r" % name)
    with _bootstrap._ModuleLockManager(name):
        mod = sys.modules.get(name)
        if mod is not None:
            if type(mod) is _Deferred and name in _pending:
                _after_body.setdefault(name, []).append(after)
                return True
            return False
        spec = _bootstrap._find_spec(name, None)
        loader = spec.loader if spec is not None else None
        if isinstance(loader, _BodyLoader):
            loader = _DeferringLoader(loader.loader, frozenset(), loader.lazy)
        elif isinstance(loader, DEFERRABLE_LOADERS):
            loader = _DeferringLoader(loader)
        elif not isinstance(loader, _DeferringLoader):
            return False
        spec.loader = loader
        mod = _bootstrap.module_from_spec(spec)
        sys.modules[name] = mod
        try:
            loader.exec_module(mod)
        except BaseException:
            del sys.modules[name]
            raise
        _after_body.setdefault(name, []).append(after)
        return True


def load(module):
    """Runs a deferred module's body now (nothing for a loaded module);
    raises what the body raised."""
    if type(module) is _Deferred:
        _load(module)
    return module


def _applicable(path, program, use_code):
    """install()'s plan read and checked, or None with a warning saying why
    it is not applied."""
    try:
        plan = read(path, checks=True, fast=use_code)
        why = check(plan, program)
    except PlanError as e:
        _warn("%s; running without it" % e)
        return None
    except Exception as e:  # never the target's: it runs without the plan
        _warn("cannot apply %r (%s: %s); running without it"
              % (path, type(e).__name__, e))
        return None
    if why:
        if why[0][:1] == "-":
            _warn("ignoring plan %r: %s" % (path, why[0][1:]))
        else:
            _warn("ignoring stale plan %r: %s; run `coldstart plan` again"
                  % (path, why[0]))
        return None
    return plan


def install(path, warm="off", strict=False, defer=True, native_lazy=False,
            lazy_from=None, use_code=None, keep=(), program=None):
    """Reads the plan in path and applies it to this process; returns the
    finder, or None when the plan cannot be used (a warning says why and
    nothing was changed).

    warm: "off" (deferred bodies run at first use only) or "background"
    (a thread runs them, in import order, once responded() is called).
    strict: defer every planned pure-Python module the request did not use,
    ignoring the plan's eager list but the modules in keep (the
    benchmark's floor; unsafe).
    defer=False uses the plan as a module index only.
    lazy_from=False binds every from-import of a deferred module at once
    (loading it), as plans before lazy from-imports did; use_code=False
    loads modules from their files, not the code archive.  Both default
    to on, or to what COLDSTART_PLAN_LAZY_FROM=0 and COLDSTART_PLAN_ARCHIVE=0
    say (for comparisons, whichever program calls install()).
    native_lazy: on an interpreter with PEP 810 (3.15+), defer through
    sys.set_lazy_imports_filter instead of coldstart's deferred modules
    (COLDSTART_PLAN_NATIVE=1; not exercised by the tests here, which have
    no 3.15).
    """
    if _installed[0] is not None:
        return _installed[0]
    if lazy_from is None:
        lazy_from = os.environ.get("COLDSTART_PLAN_LAZY_FROM") != "0"
    if use_code is None:
        use_code = os.environ.get("COLDSTART_PLAN_ARCHIVE") != "0"
    if warm not in ("off", "background"):
        raise ValueError("warm mode %r is not off or background" % (warm,))
    del _checks[:]
    try:
        plan = _applicable(path, program, use_code)
        if plan is None:
            return None
        _plan_file[:] = [plan["_file"]]
        _suspect.update(plan.get("_suspect", ()))
        # zlib's CRC-32 until the extension says otherwise (_use_crc32c).
        _sum[:] = [_crc32[0] if _crc32 else _crc, 2, 3]
        code = _open_code(plan, len(plan["index"])) if use_code else None
    finally:
        # The archive the head part was read from, when _open_code did not
        # take it (the plan refused, or its archive not used).
        _drop_head_fd()
    if code is _REFUSED:
        return None
    if code is not None:
        _code_fd[:] = [code[0]]
        r = plan["code"].get("regex")
        if isinstance(r, list) and len(r) >= 3 and \
                os.environ.get("COLDSTART_PLAN_REGEX") != "0":
            _regex_at[:] = r
        try:
            _apply_ext(code[0], plan["code"])
        except PlanError as e:  # the trust rule: the only one it lets out
            _warn("%s; running without the plan" % e)
            del _code_fd[:], _regex_at[:]
            os.close(code[0])
            return None
    native = defer and native_lazy and \
        hasattr(sys, "set_lazy_imports_filter")
    finder = PlanFinder(plan, defer and not native, strict=strict, keep=keep,
                        code=code[1] if code is not None else None,
                        lazy_from=lazy_from)
    if native:
        # PEP 810 (3.15+): the interpreter defers, the finder only indexes.
        sys.set_lazy_imports_filter(lazy_imports_filter(plan, strict))
        sys.set_lazy_imports("all")
    sys.meta_path.insert(0, finder)
    _installed[0] = finder
    if not native:
        _fast_imports(finder)
    out = os.environ.get("COLDSTART_PLAN_FORCED_OUT")
    if out:
        _forced_out.append(out)
        import atexit
        atexit.register(_write_forced)
    if _regex_at and RE_COMPILER in sys.modules:
        _hook_regex(sys.modules[RE_COMPILER])
    _warm_state["mode"] = warm
    return finder


def lazy_imports_filter(plan, strict=False):
    """The plan as a PEP 810 filter (Python 3.15+): a function
    f(importing_module, imported_module, fromlist) that is True for the
    imports the plan defers.  With sys.set_lazy_imports("all") and
    sys.set_lazy_imports_filter(f), the interpreter's own lazy imports take
    the place of coldstart's deferred modules (docs/plan.md)."""
    defer = set()
    for row in plan["index"]:
        a = row[5]
        if strict and row[1] in ("source", "bytecode") and not row[6] and \
                a == "eager":
            a = "defer"
        if a == "defer":
            defer.add(row[0])
    frozen = frozenset(defer)

    def lazy_filter(importing_module, imported_module, fromlist):
        return imported_module in frozen
    return lazy_filter


def _warm_all():
    # Deadline alarms and termination signals stay with the main thread.
    try:
        import signal
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM,
                                                  signal.SIGTERM,
                                                  signal.SIGINT})
    except (ImportError, AttributeError, OSError, ValueError):
        pass
    done = set()
    while True:
        names = [n for n in deferred() if n not in done]
        if not names:
            # Then the lazy names, so the modules get their own class back.
            for t in list(_tables.values()):
                try:
                    _resolve_all(t)
                except BaseException as e:  # again at first use
                    _warn("background binding of %s's lazy names failed: "
                          "%s: %s" % (t[0].get("__name__"),
                                      type(e).__name__, e))
            return
        for n in names:
            done.add(n)
            mod = sys.modules.get(n)
            if mod is None or type(mod) is not _Deferred:
                continue
            try:
                _load(mod)
            except BaseException as e:  # it surfaces again at first use
                _warn("background load of %s failed: %s: %s"
                      % (n, type(e).__name__, e))


def warm(block=False):
    """Runs every deferred body now: in this thread when block, else in a
    new thread (once)."""
    with _warm_lock:
        if _warm_state["started"]:
            return
        _warm_state["started"] = True
    if block:
        _warm_all()
    else:
        _thread.start_new_thread(_warm_all, ())


def gc_merge():
    """At the first response, the collector held until then
    (coldstart.release_gc): moves the objects the collector tracks into
    its oldest generation without walking them (the extension's gc_merge,
    docs/plan.md, "The collector during the first call"); False when that
    was not done (no extension, or the program froze objects itself)."""
    merge = getattr(_ext[0], "gc_merge", None) if _ext else None
    if merge is None:
        return False
    import gc
    return merge(gc)


def responded():
    """Tells the plan the first response went out: with warm="background"
    the deferred bodies start loading in a thread now, and new object
    arenas are no longer faulted in whole.  A cold-start trace
    (coldstart.otel) is sent then too."""
    _write_forced()
    otel = sys.modules.get("coldstart.otel")
    if otel is not None:
        otel.responded()
    prefault = getattr(_ext[0], "prefault", None) if _ext else None
    if prefault is not None:
        prefault(False)
    if _warm_state["mode"] == "background":
        warm()


def forced():
    """Names of the modules created deferred whose bodies have run (used,
    or read by a body that ran), in the order they ran."""
    return list(_ran)


_forced_out = []


def _write_forced():
    """For `coldstart plan --verify` (COLDSTART_PLAN_FORCED_OUT=FILE): the
    deferred modules whose bodies ran before the first response (or, for a
    program that does not say when it responded, before its exit), once, as
    a JSON list; those would be cheaper loaded at once."""
    if not _forced_out:
        return
    path = _forced_out.pop()
    # Every process applying the plan writes here (a pre-fork server's
    # master and workers, a child it starts): the list is their union,
    # each process adding its own under a lock, the file replaced whole.
    lock = -1
    try:
        import fcntl
        import json
        import tempfile
        # The lock is shared by the processes, so it cannot be O_EXCL; it
        # and the list are never opened through a link someone planted,
        # and the new list is written under a fresh name.
        nofollow = getattr(os, "O_NOFOLLOW", 0)
        lock = os.open(path + ".lock", os.O_WRONLY | os.O_CREAT | nofollow |
                       getattr(os, "O_CLOEXEC", 0), 0o600)
        fcntl.lockf(lock, fcntl.LOCK_EX)
        names = []
        try:
            fd = os.open(path, os.O_RDONLY | nofollow | _O_NONBLOCK)
            with os.fdopen(fd) as f:
                names = [n for n in json.load(f) if isinstance(n, str)]
        except (OSError, ValueError, TypeError):
            pass
        seen = set(names)
        names += [n for n in forced() if n not in seen]
        fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp",
                                   dir=os.path.dirname(os.path.abspath(path)))
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(names, f)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except (OSError, ValueError, ImportError) as e:
        _warn("cannot write %r: %s" % (path, e))
    finally:
        if lock >= 0:
            os.close(lock)


def install_from_environ(environ=None):
    """The bootstrap's entry: COLDSTART_PLAN names the plan,
    COLDSTART_PLAN_WARM is off or background, COLDSTART_PLAN_STRICT=1
    selects strict mode, COLDSTART_PLAN_LAZY_FROM=0 turns lazy
    from-imports off, COLDSTART_PLAN_ARCHIVE=0 the code archive,
    COLDSTART_PLAN_REGEX=0 and COLDSTART_PLAN_STRINGS=0 its regex and
    string tables, COLDSTART_PLAN_PROGRAM=any applies the plan to every
    program (not only the one it was made for).  Returns the finder or
    None."""
    env = os.environ if environ is None else environ
    path = env.get("COLDSTART_PLAN")
    if not path:
        return None
    warm_mode = env.get("COLDSTART_PLAN_WARM") or "off"
    if warm_mode not in ("off", "background"):
        _warn("COLDSTART_PLAN_WARM=%r is not off or background; using off"
              % warm_mode)
        warm_mode = "off"
    # A plan is made for one program: through the environment it reaches
    # every Python process, and applies only to that program's
    # (COLDSTART_PLAN_PROGRAM=any: to each of them).
    program = None if env.get("COLDSTART_PLAN_PROGRAM") == "any" else \
        program_identity()
    return install(path, warm=warm_mode, program=program,
                   strict=env.get("COLDSTART_PLAN_STRICT") == "1",
                   native_lazy=env.get("COLDSTART_PLAN_NATIVE") == "1",
                   lazy_from=env.get("COLDSTART_PLAN_LAZY_FROM") != "0",
                   use_code=env.get("COLDSTART_PLAN_ARCHIVE") != "0")
