"""The code archive of a start-up plan (docs/plan.md, "The code archive");
planning only, used by plan_record.py.

One file holds the compiled code of every planned Python module, as
marshal writes it, one after the other.  Applying the plan, a module's
code is one pread() and marshal.loads() away, where the import system
would stat the source, open, read and check the .pyc (or compile the
source when there is none).  The plan's "code" member says where the
archive is, its size and mtime (a changed archive is not used), the
optimisation level it was compiled for, and each index row's offset and
length.  After the code comes the regex table: for each pattern compiled
while planning, what the regular expression compiler handed _sre.compile
("regex": offset, length, count); applying the plan, re compiles those
patterns with one _sre.compile call, without the parser and compiler.
Then the string table: the code of each compile(), exec() and eval() call
on a str made while planning ("strings": offset, length, count), which the
C extension _plancode answers applying the plan (docs/plan.md, "The
string table").
"""

import marshal
import os
import sys
import zlib

_bootstrap_external = sys.modules["_frozen_importlib_external"]

# The archive's first bytes: this magic and the interpreter's bytecode
# magic (importlib.util.MAGIC_NUMBER).
MAGIC = b"coldstart-code\n"


def header():
    return MAGIC + _bootstrap_external.MAGIC_NUMBER


def _code_of(kind, name, path):
    if kind == "source":
        loader = _bootstrap_external.SourceFileLoader(name, path)
    elif kind == "bytecode":
        loader = _bootstrap_external.SourcelessFileLoader(name, path)
    else:
        return None
    try:
        return loader.get_code(name)
    except (ImportError, OSError, SyntaxError, ValueError, EOFError):
        return None


def string_table(calls):
    """The string table of the calls recorded while planning (tuples
    (source, filename, mode, flags, optimize), flags the compiler flags in
    effect): {source: ((filename, mode, flags, optimize, marshalled code),
    ...)} and the number of rows.  Each is compiled again, without
    inheriting flags (they are the ones in effect); a source that does not
    compile, or whose compiling warns (a SyntaxWarning for an invalid escape
    sequence: applying the plan, the warning must show again), is left out."""
    import warnings
    table = {}
    n = 0
    for src, filename, mode, flags, optimize in calls:
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            try:
                code = compile(src, filename, mode, flags, True, optimize)
            except Exception:
                continue
        if warned:
            continue
        table.setdefault(src, []).append(
            (filename, mode, flags, optimize, marshal.dumps(code)))
        n += 1
    return {k: tuple(v) for k, v in table.items()}, n


def _identity(path):
    """[ctime_ns, inode, crc32 of the bytes] of the file at path, or None:
    applying the plan, a file whose ctime or inode differ (an edit keeping
    size and mtime, or a copy) has its code taken from the archive only
    when its bytes are still the ones the code was compiled from."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            data = f.read()
    except OSError:
        return None
    return [st.st_ctime_ns, st.st_ino, zlib.crc32(data)]


def _write_parts(f, index, regexes, strings, at, crc32c):
    """Writes the archive's parts to f, each module's entry to at; then
    appends (the regex table's entry, the string table's entry) to at.
    With crc32c (a function), each entry ends with the part's CRC-32C."""
    f.write(header())
    off = len(header())
    for row in index:
        code = _code_of(row[1], row[0], row[2])
        if code is None:
            at.append(None)
            continue
        blob = marshal.dumps(code)
        f.write(blob)
        entry = [off, len(blob), zlib.crc32(blob)]
        ident = _identity(row[2])
        if ident is not None:
            entry += ident
        if crc32c is not None:
            # At its place (6).  A file that could not be read here gets an
            # identity of zeros, which no file has: applying the plan, its
            # archived code is then used only if the file's CRC-32 is 0.
            entry = (entry + [0, 0, 0])[:6] + [crc32c(blob)]
        at.append(entry)
        off += len(blob)
    regex = None
    if regexes:
        blob = marshal.dumps(list(regexes))
        f.write(blob)
        regex = [off, len(blob), len(regexes), zlib.crc32(blob)]
        if crc32c is not None:
            regex.append(crc32c(blob))
        off += len(blob)
    table, n = string_table(strings)
    strs = None
    if n:
        blob = marshal.dumps(table)
        f.write(blob)
        strs = [off, len(blob), n, zlib.crc32(blob)]
        if crc32c is not None:
            strs.append(crc32c(blob))
    at.append((regex, strs))


def _entry_ok(a):
    return a is not None and all(0 <= v < 1 << 64 for v in a)


def encode_at(at):
    """The archive's entries as the plan's code.at holds them (docs/plan.md,
    "The code archive"): one string, an entry per index row separated by
    single spaces, "-" for a module without archived code, an entry's
    integers in lowercase hexadecimal separated by commas.  Read as JSON
    arrays, the entries' 19-digit ctimes and checksums cost the applier 0.8
    M instructions at every start for a plan of 157 modules; this form,
    read by the plan's extension, about a third of that.  An entry with an
    integer outside 0 .. 2**64-1 (none is) is written as "-": the module
    loads from its file."""
    return " ".join([",".join(["%x" % v for v in a]) if _entry_ok(a)
                     else "-" for a in at])


def write(path, index, regexes=(), strings=(), crc32c=None):
    """Writes the archive of the index rows' modules to path (through a
    temporary file), then the regex table (regexes: tuples (pattern, flags,
    and the 6 arguments of _sre.compile)) and the string table (strings:
    the calls string_table() takes); returns the plan's "code" member.
    Each part's entry has the CRC-32 of its bytes (zlib's), which the
    applier checks before it unmarshals them; a module's entry is
    [offset, length, crc32, ctime_ns, inode, crc32 of its file].  With
    crc32c (the _plancode extension's, which the plan's applier loads), each
    entry also ends with the part's CRC-32C, which the applier checks
    instead when the extension runs it on the CPU's crc32 instruction
    (code.sums says so).  coldstart plan appends the head part when the
    plan is done (src/plan/plan_head.c)."""
    at = []
    # A fresh name made with O_EXCL: never a file (or symlink) planted there.
    import tempfile
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        os.fchmod(fd, 0o644)
        f = os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    try:
        _write_parts(f, index, regexes, strings, at, crc32c)
        regex, strs = at.pop()
    except BaseException:
        f.close()
        os.unlink(tmp)
        raise
    f.close()
    os.replace(tmp, path)
    st = os.stat(path)
    out = {"path": os.path.abspath(path), "size": st.st_size,
           "mtime_ns": st.st_mtime_ns, "optimize": sys.flags.optimize,
           "at": encode_at(at)}
    if crc32c is not None:
        out["sums"] = ["crc32", "crc32c"]
    if regex is not None:
        out["regex"] = regex
    if strs is not None:
        out["strings"] = strs
    return out
