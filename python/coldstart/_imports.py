"""The import statements of modules' source files, for `coldstart why`.

Run by the profile's own interpreter, so that its `ast` module reads the
syntax of that Python version (docs/why.md):

    python -I _imports.py --list-fd N [--cache-dir DIR] [--jobs N] [--path DIR]...
                          [--main-code CODE]

The list (file descriptor N) holds one module a line, "NAME<TAB>FILE<TAB>
LOCATE": an empty FILE means the module is located by the name LOCATE
(default NAME) with importlib's PathFinder over --path and sys.path, which
runs no module code.  NAME "__main__" is a main script; located by name, it
is the module `-m LOCATE` runs (LOCATE.__main__ for a package).  stdout
gets one record a line, fields separated by TABs:

    F NAME STATUS FILE     what was read, one record per list line, in order,
                           then one for --main-code: parsed, cached, native,
                           builtin, nosource, notfound, error:MESSAGE, or pyx
                           for a native module read through the Cython source
                           beside it (FILE is that .pyx)
    I NAME LINE CTX VIA BASE NAMES
                           an import of the module of the F record before it:
                           CTX body | cond | func | typing | main (under
                           `if __name__ == "__main__":`), VIA stmt | call |
                           computed (a call whose name is computed: no BASE);
                           BASE is the absolute module the statement names,
                           NAMES the names of a "from BASE import ..." joined
                           by commas
    S FILES PARSED CACHED SECONDS CACHE
                           the last record: totals, the time spent, and the
                           cache's state (used, off, or why it was refused)

Only the standard library is used; the code runs on Python 3.7 and newer.
"""
import ast
import os
import stat
import sys
import time

CACHE_FORMAT = 3
BODY, COND, FUNC, TYPING, MAIN = "body", "cond", "func", "typing", "main"
NATIVE_SUFFIXES = (".so", ".pyd")


def _cond(ctx):
    return ctx if ctx in (FUNC, TYPING, MAIN) else COND


def _is_main_guard(test):
    """`if __name__ == "__main__":`, either way round."""
    if not isinstance(test, ast.Compare) or len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    a, b = test.left, test.comparators[0]
    if isinstance(b, ast.Name):
        a, b = b, a
    return isinstance(a, ast.Name) and a.id == "__name__" and _string(b) == "__main__"


def _is_type_checking(test):
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    if isinstance(test, ast.Attribute):
        return test.attr == "TYPE_CHECKING"
    return False


def _string(node):
    """The value of a string literal (ast.Str before 3.8), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    s = getattr(node, "s", None)
    return s if isinstance(s, str) and type(node).__name__ == "Str" else None


def _dynamic(call):
    """(level, name) of importlib.import_module("x") / __import__("x"), (0, "")
    for such a call with a computed name, or None for any other call."""
    f = call.func
    fname = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    if fname not in ("import_module", "__import__") or not call.args:
        return None
    name = _string(call.args[0])
    if not name:
        return (0, "")
    if not name.startswith("."):
        return (0, name)
    if fname == "__import__":
        return (0, "")
    # import_module(".x", package): relative to this module's package only
    # when the package argument says so.
    pkg = call.args[1] if len(call.args) > 1 else None
    for kw in call.keywords:
        if kw.arg == "package":
            pkg = kw.value
    if isinstance(pkg, ast.Name) and pkg.id in ("__name__", "__package__"):
        level = len(name) - len(name.lstrip("."))
        return (level if pkg.id == "__package__" else -level, name.lstrip("."))
    return (0, "")


class _Reader:
    """Collects (line, ctx, via, level, module, names) from one module."""

    BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")

    def __init__(self, dynamic):
        self.out = []
        self.dynamic = dynamic

    def calls(self, node, ctx):
        todo = [(node, ctx)]
        while todo:
            n, c = todo.pop()
            if isinstance(n, ast.Call):
                d = _dynamic(n)
                if d:
                    self.out.append((n.lineno, c, "call" if d[1] else "computed", d[0], d[1], ""))
            if isinstance(n, ast.Lambda):
                c = FUNC
            for child in ast.iter_child_nodes(n):
                if not isinstance(child, ast.stmt):
                    todo.append((child, c))

    def block(self, body, ctx):
        for st in body:
            self.stmt(st, ctx)

    def stmt(self, st, ctx):
        if isinstance(st, ast.Import):
            for a in st.names:
                self.out.append((st.lineno, ctx, "stmt", 0, a.name, ""))
            return
        if isinstance(st, ast.ImportFrom):
            self.out.append((st.lineno, ctx, "stmt", st.level or 0, st.module or "",
                             ",".join(a.name for a in st.names)))
            return
        if self.dynamic:
            # Expressions of the statement itself (a decorator, a test, a
            # value); the blocks below are visited with their own context.
            for field, value in ast.iter_fields(st):
                if field in self.BLOCKS:
                    continue
                for v in value if isinstance(value, list) else [value]:
                    if isinstance(v, ast.AST) and not isinstance(v, ast.stmt):
                        self.calls(v, ctx)
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.block(st.body, FUNC)
        elif isinstance(st, ast.ClassDef):
            self.block(st.body, ctx)
        elif isinstance(st, ast.If):
            if _is_type_checking(st.test):
                self.block(st.body, TYPING)
            elif _is_main_guard(st.test) and ctx in (BODY, COND):
                self.block(st.body, MAIN)
            else:
                self.block(st.body, _cond(ctx))
            self.block(st.orelse, _cond(ctx))
        elif isinstance(st, (ast.For, ast.AsyncFor, ast.While)):
            self.block(st.body, _cond(ctx))
            self.block(st.orelse, _cond(ctx))
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            self.block(st.body, ctx)
        elif hasattr(st, "handlers"):  # Try, and TryStar on 3.11+
            self.block(st.body, ctx)
            for h in st.handlers:
                self.block(h.body, _cond(ctx))
            self.block(st.orelse, _cond(ctx))
            self.block(st.finalbody, ctx)
        elif hasattr(st, "cases"):  # Match, 3.10+
            for case in st.cases:
                self.block(case.body, _cond(ctx))


def read_source(src, filename):
    """The imports of one module's source, as a list of tuples."""
    tree = compile(src, filename, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    r = _Reader(b"import_module" in src or b"__import__" in src)
    r.block(tree.body, BODY)
    return r.out


def _pyx_names(text):
    """The (module, names) of an `import ...` / `from ... import ...` line of
    Cython source, or None (cimport is compile-time: no import at run time)."""
    text = text.replace("(", " ").replace(")", " ").replace("\\", " ")
    words = text.split()
    if words[0] == "import" and "cimport" not in words:
        return [(0, w.strip(), "") for w in " ".join(words[1:]).split(",") for w in [w.split(" as ")[0]]
                if w.strip()]
    if words[0] == "from" and len(words) >= 4 and words[2] == "import":
        mod = words[1]
        level = len(mod) - len(mod.lstrip("."))
        names = ",".join(n.split(" as ")[0].strip() for n in " ".join(words[3:]).split(",")
                         if n.strip())
        return [(level, mod.lstrip("."), names)]
    return None


def read_pyx(src):
    """The run-time imports of Cython source, line by line: Cython is not
    Python, so no parser of the interpreter reads it.  Blocks are followed by
    indentation; triple-quoted strings are skipped; a line that continues in
    brackets is joined."""
    out, stack, quote = [], [], None
    lines = src.decode("utf-8", "replace").split("\n")
    i = 0
    while i < len(lines):
        raw, lineno = lines[i], i + 1
        i += 1
        if quote:
            if quote in raw:
                quote = None
            continue
        text = raw.split("#", 1)[0].rstrip() if "#" in raw and '"' not in raw and "'" not in raw \
            else raw.rstrip()
        stripped = text.strip()
        if not stripped:
            continue
        for q in ('"""', "'''"):
            if stripped.lstrip("rRbBuUfF").startswith(q) and stripped.count(q) == 1:
                quote = q
        if quote:
            continue
        depth = stripped.count("(") + stripped.count("[") - stripped.count(")") - stripped.count("]")
        while (depth > 0 or stripped.endswith("\\")) and i < len(lines):
            more = lines[i].split("#", 1)[0].strip()
            i += 1
            stripped = stripped.rstrip("\\") + " " + more
            depth += more.count("(") + more.count("[") - more.count(")") - more.count("]")
        indent = len(text) - len(text.lstrip())
        while stack and stack[-1][0] >= indent:
            stack.pop()
        ctx = stack[-1][1] if stack else BODY
        words = stripped.split()
        if not words:  # a lone backslash continued by a blank or comment line
            continue
        word = words[0].rstrip(":")
        if stripped.endswith(":"):
            if word in ("def", "cpdef", "async", "lambda") or (word == "cdef" and " class " not in
                                                                 stripped and "extern" not in stripped):
                inner = FUNC
            elif word in ("if", "elif", "else", "except", "for", "while", "IF", "ELIF", "ELSE", "match",
                          "case"):
                inner = _cond(ctx)
            else:  # class, cdef class, try, with, finally, cdef extern
                inner = ctx
            stack.append((indent, inner))
            continue
        if word in ("import", "from"):
            for level, module, names in _pyx_names(stripped) or ():
                out.append((lineno, ctx, "stmt", level, module, names))
    return out


def _pyx_of(path):
    """The Cython source beside an extension module, as Debian ships it."""
    d, base = os.path.split(path)
    pyx = os.path.join(d, base.split(".", 1)[0] + ".pyx")
    return pyx if os.path.isfile(pyx) else None


# A source file larger than this is not read (the largest module of the
# standard library is under 1 MiB; generated ones reach a few).
MAX_SOURCE = 32 << 20


def _read_bounded(path):
    """The bytes of the regular file at path, at most MAX_SOURCE of them.
    A FIFO, device or directory named by a profile is refused without
    blocking (O_NONBLOCK), a larger file without reading it."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(0, "not a regular file")
        if st.st_size > MAX_SOURCE:
            raise OSError(0, "larger than %d MiB" % (MAX_SOURCE >> 20))
        data = f.read(MAX_SOURCE + 1)
        if len(data) > MAX_SOURCE:
            raise OSError(0, "larger than %d MiB" % (MAX_SOURCE >> 20))
        return data


def _read_file(path):
    """(status, imports) for one file: a module's source, or a script of any
    name (a console script); a .pyc is read through its source beside it; an
    extension module through the Cython source beside it, when there is one
    (status "pyx:PATH")."""
    if path.endswith(NATIVE_SUFFIXES):
        pyx = _pyx_of(path)
        if not pyx:
            return "native", []
        try:
            return "pyx:" + pyx, read_pyx(_read_bounded(pyx))
        except (OSError, ValueError, IndexError):
            return "native", []
    if path.endswith(".pyc"):
        path = path[:-1]
        if not os.path.isfile(path):
            return "nosource", []
    try:
        src = _read_bounded(path)
    except OSError as e:
        return "error:cannot read %s: %s" % (path, e.strerror or e), []
    try:
        return "parsed", read_source(src, path)
    except SyntaxError as e:
        return "error:syntax error at line %s: %s" % (e.lineno, e.msg), []
    except (ValueError, RecursionError, MemoryError) as e:
        return "error:%s" % (e,), []


def _stat_key(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _private_dir(path):
    """Creates path (0700) and says whether it is ours alone; a cache anyone
    else could write could make the answers lie."""
    try:
        os.makedirs(path, 0o700)
    except OSError:
        pass
    try:
        st = os.lstat(path)
    except OSError as e:
        return "cannot create %s: %s" % (path, e.strerror or e)
    if not os.path.isdir(path) or os.path.islink(path):
        return "%s is not a directory" % path
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return "%s is not the user's alone" % path
    return None


def _cache_file(directory):
    import hashlib
    key = "%s\0%s\0%d" % (sys.executable, sys.version, CACHE_FORMAT)
    return os.path.join(directory, "imports-%s.json" % hashlib.sha1(key.encode()).hexdigest()[:16])


def _load_cache(path):
    """The cached entries {file: [[mtime_ns, size], status, imports]}."""
    import json
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return {}
        with os.fdopen(fd, "rb") as f:
            fd = -1
            data = json.loads(f.read().decode("utf-8"))
        if data.get("format") != CACHE_FORMAT or data.get("python") != sys.version:
            return {}
        files = data.get("files")
        return files if isinstance(files, dict) else {}
    except (OSError, ValueError, AttributeError, UnicodeDecodeError):
        return {}
    finally:
        if fd >= 0:
            os.close(fd)


def _save_cache(path, files):
    """Written to a temporary name and renamed, so readers never see half of
    it; temporary files that a killed writer left are removed."""
    import json
    import glob
    now = time.time()
    for old in glob.glob(path + ".*.tmp"):
        try:
            if now - os.lstat(old).st_mtime > 600:
                os.unlink(old)
        except OSError:
            pass
    tmp = "%s.%d.tmp" % (path, os.getpid())
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"format": CACHE_FORMAT, "python": sys.version, "files": files}, f,
                      separators=(",", ":"))
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _read_many(paths, jobs):
    """{path: (status, imports)}, on up to jobs processes (fork)."""
    if jobs <= 1 or len(paths) < 64 or not hasattr(os, "fork"):
        return dict((p, _read_file(p)) for p in paths)
    import json
    shares = [paths[i::jobs] for i in range(jobs)]
    kids = []
    for share in shares[1:]:
        r, w = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                got = {}
                for p in share:
                    if os.getppid() != parent:  # the reader is gone (killed with coldstart)
                        os._exit(1)
                    got[p] = _read_file(p)
                data = json.dumps(got).encode("utf-8")
                with os.fdopen(w, "wb") as f:
                    f.write(data)
            finally:
                os._exit(0)
        os.close(w)
        kids.append((pid, r, share))
    result = dict((p, _read_file(p)) for p in shares[0])
    for pid, r, share in kids:
        with os.fdopen(r, "rb") as f:
            raw = f.read()
        os.waitpid(pid, 0)
        try:
            got = json.loads(raw.decode("utf-8"))
        except ValueError:
            got = {}
        for p in share:
            st, imps = got.get(p) or _read_file(p)
            result[p] = (st, [tuple(x) for x in imps])
    return result


def _locate(name, path, main=False):
    """(file, None) of a module found by name without running any code, or
    (None, status)."""
    from importlib.machinery import PathFinder
    parts = name.split(".")
    if len(parts) == 1 and name in sys.builtin_module_names:
        return None, "builtin"
    search, spec = path, None
    for i in range(len(parts)):
        try:
            spec = PathFinder.find_spec(".".join(parts[:i + 1]), search)
        except (ImportError, ValueError, OSError):
            spec = None
        if spec is None:
            return None, "notfound"
        search = spec.submodule_search_locations
        if search is None and i + 1 < len(parts):
            return None, "notfound"
    if main and spec.submodule_search_locations is not None:
        return _locate(name + ".__main__", path)
    origin = spec.origin
    if not origin or not os.path.isabs(origin):
        return None, "nosource"
    return origin, None


def _package(name, path):
    """The package a module's relative imports are relative to."""
    if name == "__main__":
        return ""
    base = os.path.basename(path or "")
    if base.startswith("__init__."):
        return name
    return name.rpartition(".")[0]


def _resolve(name, package, level, module):
    if level == 0:
        return module
    if level < 0:  # import_module(".x", __name__): relative to the module itself
        base, level = name, -level - 1
    else:
        base, level = package, level - 1
    parts = base.split(".") if base else []
    if level >= len(parts):
        return None
    parts = parts[:len(parts) - level]
    return ".".join(parts + ([module] if module else []))


def _clean(s):
    return s.replace("\t", " ").replace("\n", " ").replace("\r", " ")


def main(argv):
    t0 = time.time()
    list_fd, cache_dir, jobs, extra, main_code = None, None, 1, [], None
    i = 0
    while i < len(argv):
        a, v = argv[i], argv[i + 1] if i + 1 < len(argv) else None
        if v is None or a not in ("--list-fd", "--cache-dir", "--jobs", "--path", "--main-code"):
            sys.stderr.write("_imports.py: bad argument %r\n" % a)
            return 2
        if a == "--list-fd":
            list_fd = int(v)
        elif a == "--cache-dir":
            cache_dir = v
        elif a == "--jobs":
            jobs = max(1, int(v))
        elif a == "--path":
            extra.append(v)
        else:
            main_code = v
        i += 2
    search = extra + [p for p in sys.path if p]
    listing = ""
    if list_fd is not None:
        with os.fdopen(list_fd, "rb") as f:
            listing = f.read().decode("utf-8", "surrogateescape")

    modules = []  # (name, file or None, status or None, package)
    for line in listing.split("\n"):
        if not line:
            continue
        fields = line.split("\t")
        name = fields[0]
        path = fields[1] if len(fields) > 1 else ""
        locate = fields[2] if len(fields) > 2 and fields[2] else name
        status = None
        if not path:
            path, status = _locate(locate, search, main=name == "__main__")
        if name != "__main__":
            pkg = _package(name, path)
        elif os.path.basename(path or "") == "__main__.py" and locate != "__main__":
            pkg = locate  # -m pkg runs pkg.__main__
        else:
            pkg = locate.rpartition(".")[0] if locate != "__main__" else ""
        modules.append((name, path, status, pkg))

    cache, cache_state = {}, "off"
    cache_path = None
    if cache_dir:
        cache_state = _private_dir(cache_dir) or "used"
        if cache_state == "used":
            cache_path = _cache_file(cache_dir)
            cache = _load_cache(cache_path)
    results, todo, cached = {}, [], 0
    for name, path, status, pkg in modules:
        if status or path in results:
            continue
        key = _stat_key(path)
        hit = cache.get(path)
        if key and isinstance(hit, list) and len(hit) == 3 and hit[0] == key:
            results[path] = ("cached" if hit[1] == "parsed" else hit[1],
                             [tuple(x) for x in hit[2]], key)
            cached += 1
        else:
            results[path] = None
            todo.append(path)
    for path, (status, imps) in _read_many(todo, jobs).items():
        results[path] = (status, imps, _stat_key(path))

    out = []

    def emit(name, pkg, imps):
        for line, ctx, via, level, module, names in imps:
            base = _resolve(name, pkg, level, module)
            if ctx == MAIN and name == "__main__":
                ctx = COND
            if base or via == "computed":
                out.append("I\t%s\t%d\t%s\t%s\t%s\t%s\n" % (name, line, ctx, via, base or "", names))

    for name, path, status, pkg in modules:
        if status:
            out.append("F\t%s\t%s\t\n" % (name, status))
            continue
        st, imps, _ = results[path]
        if st.startswith("pyx:"):
            st, path = "pyx", st[4:]
        out.append("F\t%s\t%s\t%s\n" % (name, _clean(st), _clean(path)))
        emit(name, pkg, imps)
    if main_code is not None:
        try:
            imps = read_source(main_code.encode("utf-8", "surrogateescape"), "<string>")
            out.append("F\t__main__\tparsed\t-c\n")
        except SyntaxError as e:
            imps = []
            out.append("F\t__main__\terror:syntax error at line %s: %s\t-c\n" % (e.lineno, _clean(e.msg)))
        emit("__main__", "", imps)

    if cache_path and todo:
        for path in todo:
            st, imps, key = results[path]
            if key and (st in ("parsed", "native", "nosource") or st.startswith("pyx:")):
                cache[path] = [key, st, imps]
        # Entries of other profiles stay for the next one, up to a bound past
        # which only this one's are kept.
        if len(cache) > 50000:
            cache = dict((p, cache[p]) for p in results if p in cache)
        _save_cache(cache_path, cache)
    out.append("S\t%d\t%d\t%d\t%.3f\t%s\n" % (len(results), len(todo), cached, time.time() - t0,
                                             _clean(cache_state)))
    sys.stdout.write("".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
