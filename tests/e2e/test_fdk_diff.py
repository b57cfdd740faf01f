"""The differential test: coldstart-fdk against fdk-python 0.1.117 itself.

Every function (fdk-python's echo sample, the handlers of its test
functions, and the handlers in tests/e2e/fdk_diff/) is served once by the
real fdk-python (PYTHONPATH=the peer's source tree, started the way its
`fdk` script starts) and once by coldstart-fdk, and both get the same
requests over the unix socket: Fn agent headers, gateway mode, empty,
chunked and large bodies, repeated headers, tracing headers, UTF-8 and
Latin-1 header values, Expect: 100-continue, HTTP/1.0, all on one
keep-alive connection where the function allows it, with FN_LOGFRAME_*
set.  Status line, headers (names, values and order) and body are
compared, and so is what the function and the FDK write to stderr during
each call, and stdout at the end.

A difference is allowed only when one of the rules in ALLOWED explains it
(the list docs/fdk.md gives, with the reasons); anything else fails.  The
counts are printed: identical, allowed (by rule), other.
"""
import ast
import concurrent.futures
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from conftest import DEBIAN_PYTHON, ROOT

def _find_peer():
    # shared/ lies beside the checkout (CI) or beside its parent (a
    # worktree); FDK_PYTHON names another copy.
    tail = os.path.join("shared", "peers", "fdk-python-0.1.117")
    for cand in (os.environ.get("FDK_PYTHON"),
                 os.path.join(os.path.dirname(ROOT), tail),
                 os.path.join(os.path.dirname(os.path.dirname(ROOT)), tail),
                 os.path.join("/work", tail)):
        if cand and os.path.isdir(cand):
            return os.path.realpath(cand)
    return os.path.join("/work", tail)


PEER = _find_peer()
PYDIR = os.path.join(ROOT, "python")
FDK = os.path.join(PYDIR, "coldstart-fdk")
HERE = os.path.dirname(os.path.abspath(__file__))
FUNCS = os.path.join(HERE, "fdk_diff")
PY = DEBIAN_PYTHON
DEADLINE = "2099-01-01T00:00:00.000Z"
PYCACHE = os.path.join(tempfile.gettempdir(), "coldstart-test-pycache")


def _skip_reason():
    if not os.path.isfile(os.path.join(PEER, "fdk", "runner.py")):
        return "fdk-python 0.1.117 is not at %s" % PEER
    p = subprocess.run([PY, "-c", "import httptools, iso8601"],
                       capture_output=True, text=True)
    if p.returncode:
        return ("fdk-python's runtime needs Debian's python3-httptools and "
                "python3-iso8601: %s" % p.stderr.strip().splitlines()[-1])
    return None


SKIP = _skip_reason()


def _handlers(path):
    tree = ast.parse(open(path).read())
    return [n.name for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and not n.name.startswith("_")]


# Handlers of fdk-python's fdk/tests/funcs.py that echo the request's
# headers back: fdk-python then sends the request's Content-Length, so each
# of their calls gets a connection of its own, read to its end.
ECHO_HEADERS = {"encaped_header", "verify_request_headers", "ctx_headers"}
NOT_HANDLERS = {"timed_sleepr", "setup_context_capture",
                "get_captured_context"}


def _functions():
    out = [("sample-echo", os.path.join(PEER, "samples", "echo", "func.py"),
            "handler", {})]
    peer_funcs = os.path.join(PEER, "fdk", "tests", "funcs.py")
    for name in _handlers(peer_funcs):
        if name not in NOT_HANDLERS:
            out.append(("peer-" + name, peer_funcs, name, {}))
    own = os.path.join(FUNCS, "funcs.py")
    for name in _handlers(own):
        out.append((name, own, name, {}))
    out.append(("ctx_tracing-oci", own, "ctx_tracing",
                {"env": {"OCI_TRACING_ENABLED": "1",
                         "OCI_TRACE_COLLECTOR_URL": "http://collector/x"}}))
    out.append(("logs-fdk-debug-off", own, "logs",
                {"env": {"FDK_DEBUG": "0"}}))
    for f in ("time.py", "json.py"):
        out.append(("file-" + f, os.path.join(FUNCS, f), "handler", {}))
    return out


FUNCTIONS = [] if SKIP else _functions()


# --- requests ---------------------------------------------------------------

def _head(lines, version="HTTP/1.1"):
    return ("POST /call %s\r\n" % version).encode() + b"".join(
        (ln if isinstance(ln, bytes) else ln.encode()) + b"\r\n"
        for ln in lines) + b"\r\n"


AGENT = ["Host: localhost", "User-Agent: Go-http-client/1.1",
         "Accept-Encoding: gzip"]


def _req(body, extra, call_id="01CALL", deadline=DEADLINE, version="HTTP/1.1",
         framing="length"):
    lines = list(AGENT)
    if call_id:
        lines.append("Fn-Call-Id: " + call_id)
    if deadline:
        lines.append("Fn-Deadline: " + deadline)
    lines += extra
    if framing == "chunked":
        lines.append("Transfer-Encoding: chunked")
        chunks = [body[i:i + 7] for i in range(0, len(body), 7)]
        payload = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(c), c) for c in chunks)
        payload += b"0\r\nX-Trailer: t\r\n\r\n"
        return _head(lines, version) + payload
    lines.append("Content-Length: %d" % len(body))
    return _head(lines, version) + body


LARGE = b"0123456789abcdef" * 65536

REQUESTS = [
    ("agent", _req(b'{"name": "Tubbs"}', ["Content-Type: application/json"])),
    ("empty", _req(b"", [], call_id=None, deadline=None)),
    ("gateway", _req(b'{"name": "gw"}', [
        "Fn-Intent: httprequest", "Fn-Http-Method: PUT",
        "Fn-Http-Request-Url: http://gw.example/t/app/route?x=1",
        "Fn-Http-H-Accept: text/html", "Fn-Http-H-X-Multi: a",
        "Fn-Http-H-X-Multi: b", "Fn-Http-H-Content-Type: application/json",
        "Content-Type: application/json"], call_id="01GATEWAY")),
    ("chunked", _req(b"hello chunked world", [], call_id="01CHUNKED",
                     framing="chunked")),
    ("large", _req(LARGE, ["Content-Type: application/octet-stream"],
                   call_id="01LARGE")),
    ("repeated", _req(b"rep", ["X-Rep: one", "X-Rep: two", "x-rep: three"],
                      call_id="01REPEATED")),
    ("tracing", _req(b"trace", [
        "X-B3-TraceId: 463ac35c9f6413ad", "X-B3-SpanId: a2fb4a1d1a96d312",
        "X-B3-ParentSpanId: 0020000000000001", "X-B3-Sampled: 1",
        "X-B3-Flags: 0"], call_id="01TRACING")),
    ("encodings", _req(b"enc", [b"X-Utf8: caf\xc3\xa9", b"X-Latin: caf\xe9"],
                       call_id="01ENCODINGS")),
    ("expect-continue", _req(b"continued", ["Expect: 100-continue"],
                             call_id="01EXPECT")),
    ("http10-close", _req(b"old client", [], call_id="01HTTP10",
                          version="HTTP/1.0")),
]
# Requests only some functions get.
def _rfc3339(offset):
    t = time.time() + offset
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + \
        ".%03dZ" % int(t % 1 * 1000)


# Requests only some functions get; a callable makes its request when it is
# sent (a deadline relative to that moment).
EXTRA_REQUESTS = {
    "slow": [("deadline-passed", _req(b"0", [], call_id="01DEADLINE",
                                      deadline="1970-01-01T00:00:00Z")),
             ("deadline", lambda: _req(b"0.6", [], call_id="01DEADLINE2",
                                       deadline=_rfc3339(0.2)))],
    # The head alone; the body follows the interim answer, or half a
    # second without one (curl waits a second).  Pipelining comes last:
    # fdk-python logs its failure with the second request later, which
    # would land in the stderr of a call after it.
    "ret_echo": [("expect-continue-wait", _req(b"waited", [
                     "Expect: 100-continue"], call_id="01WAIT")),
                 ("pipelined", _req(b"first", [], call_id="01PIPE1") +
                  _req(b"second", ["Connection: close"], call_id="01PIPE2"))],
    # Not an integer: fdk-python's tracing set-up fails outside the
    # function when tracing is enabled.
    "ctx_tracing": [("sampled-true", _req(b"t", [
        "X-B3-TraceId: 463ac35c9f6413ad", "X-B3-Sampled: true"],
        call_id="01SAMPLED"))],
}


# --- talking to a server ----------------------------------------------------

class Response(object):
    def __init__(self, status_line, headers, body, interim=()):
        self.status_line = status_line
        self.headers = headers
        self.body = body
        self.interim = list(interim)

    def key(self):
        return (self.status_line, self.headers, self.body)

    def __repr__(self):
        return "%s %r %r%s" % (self.status_line, self.headers, self.body[:300],
                               " (after %s)" % self.interim
                               if self.interim else "")


def _recv_until(sock, buf, marker):
    while marker not in buf:
        d = sock.recv(65536)
        if not d:
            return buf, False
        buf += d
    return buf, True


def _read_response(sock, buf, to_eof):
    """Reads one response; returns (Response or None at EOF, rest)."""
    interim = []
    while True:
        buf, ok = _recv_until(sock, buf, b"\r\n\r\n")
        if not ok:
            return (Response("<closed>", [], buf) if buf else None), b""
        head, _, buf = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        if lines[0].split(" ")[1:2] == ["100"]:
            interim.append(lines[0])
            continue
        break
    headers = [tuple(ln.split(": ", 1)) for ln in lines[1:]]
    if to_eof:
        while True:
            d = sock.recv(65536)
            if not d:
                break
            buf += d
        return Response(lines[0], headers, buf, interim), b""
    n = int(dict((k.lower(), v) for k, v in headers)["content-length"])
    while len(buf) < n:
        d = sock.recv(65536)
        if not d:
            break
        buf += d
    return Response(lines[0], headers, buf[:n], interim), buf[n:]


class Served(object):
    """One FDK process serving one handler."""

    def __init__(self, kind, func, handler, env):
        self.kind = kind
        self.dir = tempfile.mkdtemp(prefix="fdkd", dir="/tmp")
        self.sock = os.path.join(self.dir, "lsnr.sock")
        full = {k: v for k, v in os.environ.items()
                if not k.startswith(("FN_", "COLDSTART_FDK", "OCI_", "FDK_"))}
        full.update({"FN_LISTENER": "unix:" + self.sock,
                     "FN_FORMAT": "http-stream", "FN_APP_ID": "app-id-1",
                     "FN_APP_NAME": "DiffApp", "FN_FN_ID": "fn-id-1",
                     "FN_FN_NAME": "DiffFn", "MY_SETTING": "on",
                     "FN_LOGFRAME_NAME": "01FRAME",
                     "FN_LOGFRAME_HDR": "Fn-Call-Id",
                     "PYTHONPYCACHEPREFIX": PYCACHE})
        full.update(env)
        if kind == "fdk-python":
            # As fdk-python's console script runs: sys.path[0] is the
            # script's own directory.
            launcher = os.path.join(self.dir, "fdk")
            with open(launcher, "w") as f:
                f.write("import sys\nfrom fdk.scripts.fdk import main\n"
                        "sys.exit(main())\n")
            full["PYTHONPATH"] = PEER
            argv = [PY, launcher, func, handler]
        else:
            full["PYTHONPATH"] = PYDIR
            argv = [PY, FDK, func, handler]
        self.out = open(os.path.join(self.dir, "stdout"), "w+b")
        self.err = open(os.path.join(self.dir, "stderr"), "w+b")
        self.seen = 0
        self.proc = subprocess.Popen(argv, env=full, cwd=self.dir,
                                     stdout=self.out, stderr=self.err)

    def wait_ready(self, timeout=60):
        end = time.time() + timeout
        while not os.path.islink(self.sock):
            if self.proc.poll() is not None or time.time() > end:
                raise AssertionError("%s did not become ready:\n%s" % (
                    self.kind, self.stderr_since()))
            time.sleep(0.005)

    def stderr_since(self):
        self.err.flush()
        with open(self.err.name, "rb") as f:
            f.seek(self.seen)
            data = f.read()
        self.seen += len(data)
        return data.decode("utf-8", "replace")

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        s.connect(self.sock)
        return s

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        with open(self.out.name, "rb") as f:
            stdout = f.read().decode("utf-8", "replace")
        self.out.close()
        self.err.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return rc, stdout


def _exchange(server, requests, close_each):
    """Sends each request, on one keep-alive connection where it can;
    returns [(name, [responses], stderr of the call)]."""
    results = []
    conn, rest = None, b""
    for name, raw in requests:
        closing = close_each or name in ("http10-close", "pipelined")
        if close_each and name != "http10-close" and not callable(raw):
            raw = raw.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n",
                              1)
        if conn is None or closing:
            if conn is not None:
                conn.close()
            conn, rest = server.connect(), b""
        if callable(raw):
            raw = raw()
        got = []
        if name == "expect-continue-wait":
            head, _, body = raw.partition(b"\r\n\r\n")
            conn.sendall(head + b"\r\n\r\n")
            conn.settimeout(0.5)
            try:
                rest = conn.recv(65536)
            except socket.timeout:
                rest = b""
            conn.settimeout(30)
            raw = body
        conn.sendall(raw)
        if name == "pipelined":
            while True:
                r, rest = _read_response(conn, rest, False)
                if r is None:
                    break
                got.append(r)
                if ("Connection", "close") in r.headers:
                    break
        else:
            r, rest = _read_response(conn, rest, closing)
            got.append(r)
        results.append((name, got, server.stderr_since()))
        if closing:
            conn.close()
            conn = None
    if conn is not None:
        conn.close()
    return results


# --- the allowed differences ------------------------------------------------

ALLOWED = {
    "fdk-version": "Fn-Fdk-Version names coldstart-fdk",
    "list-headers": "a list-valued response header goes out as one header "
                    "per value, not as a Python list's repr",
    "framing": "Content-Length, Transfer-Encoding, Connection and "
               "Keep-Alive a function sets (e.g. by echoing ctx.Headers()) "
               "are not sent; the real length is",
    "traceback": "the error line's traceback starts at the function's own "
                 "frames, without the FDK's",
    "expect-continue": "Expect: 100-continue gets its interim answer",
    "pipelining": "pipelined requests are answered, each in turn",
    "deadline": "Fn-Deadline is enforced: a call past it gets 504",
}


def _norm_version(r):
    r.headers = [(k, "<fdk>" if k == "fn-fdk-version" else v)
                 for k, v in r.headers]


def _norm_lists(r):
    out = []
    for k, v in r.headers:
        if v.startswith("[") and v.endswith("]"):
            try:
                items = ast.literal_eval(v)
            except (ValueError, SyntaxError):
                items = None
            if isinstance(items, list):
                out.extend((k, str(i)) for i in items)
                continue
        out.append((k, v))
    r.headers = out


def _norm_framing(r):
    out, seen = [], set()
    for k, v in r.headers:
        low = k.lower()
        if low in ("content-length", "transfer-encoding"):
            continue
        if low in ("connection", "keep-alive"):
            if low in seen:
                continue
            seen.add(low)
        out.append((k, v))
    r.headers = out


_FRAME = re.compile(r'  File "([^"]+)", line \d+, in .*?\\n(?:    .*?\\n)*?'
                    r'(?=  File "|$)')


def _norm_traceback(text):
    # fdk-python's error line lists its runner's frames before the
    # function's; drop the frames of either FDK.
    def strip(m):
        return "" if m.group(1).startswith((PEER, PYDIR)) else m.group(0)
    return "\n".join(_FRAME.sub(strip, ln) if " - fn - ERROR - " in ln else ln
                     for ln in text.split("\n"))


def _copy(rs):
    return [Response(r.status_line, list(r.headers), r.body, r.interim)
            for r in rs]


def _normalized(rs, norms, side):
    rs = _copy(rs)
    for r in rs:
        _norm_version(r)
        if "expect-continue" in norms:
            r.interim = []
        if "list-headers" in norms and side == "theirs":
            _norm_lists(r)
        if "framing" in norms:
            _norm_framing(r)
    return [r.key() + (tuple(r.interim),) for r in rs]


RULE_SETS = [(), ("list-headers",), ("framing",), ("expect-continue",),
             ("list-headers", "framing")]


def classify(name, theirs, ours, err_theirs, err_ours):
    """Returns ("identical" | "allowed" | "other", rules that applied).
    Identical means byte for byte but for the Fn-Fdk-Version value."""
    wire = None
    for rules in RULE_SETS:
        if _normalized(theirs, rules, "theirs") == \
                _normalized(ours, rules, "ours"):
            wire = list(rules)
            break
    err = []
    if err_theirs != err_ours and name == "pipelined":
        err = None
    elif err_theirs != err_ours:
        err = ["traceback"] if _norm_traceback(err_theirs) == \
            _norm_traceback(err_ours) else None
    if wire is not None and err is not None:
        rules = wire + err
        return ("allowed" if rules else "identical"), rules
    if name == "pipelined" and len(ours) == 2 and all(
            r.status_line == "HTTP/1.1 200 OK" for r in ours):
        return "allowed", ["pipelining"]
    if name.startswith("deadline") and ours and \
            ours[0].status_line.startswith("HTTP/1.1 504") and \
            b"deadline" in ours[0].body:
        return "allowed", ["deadline"]
    return "other", []


def _run_function(entry):
    ident, func, handler, opts = entry
    requests = REQUESTS + EXTRA_REQUESTS.get(handler, [])
    close_each = handler in ECHO_HEADERS
    env = opts.get("env", {})
    servers = [Served("fdk-python", func, handler, env),
               Served("coldstart-fdk", func, handler, env)]
    try:
        for s in servers:
            s.wait_ready()
        got = [_exchange(s, requests, close_each) for s in servers]
    finally:
        stopped = [s.stop() for s in servers]
    rows = []
    for (name, theirs, et), (_, ours, eo) in zip(got[0], got[1]):
        verdict, rules = classify(name, theirs, ours, et, eo)
        rows.append((ident, name, verdict, rules, theirs, ours, et, eo))
    (rc_t, out_t), (rc_o, out_o) = stopped
    rules = []
    if "pipelined" in dict(requests) and rc_t == rc_o:
        # fdk-python mangles the second pipelined call: no frame for it.
        second = "\n01FRAME=01PIPE2\n\n"
        if out_o.replace(second, "") == out_t and second in out_o:
            rules, out_o = ["pipelining"], out_t
    verdict = "identical" if out_t == out_o and rc_t == rc_o else "other"
    if rules and verdict == "identical":
        verdict = "allowed"
    rows.append((ident, "stdout+exit", verdict, rules, out_t, out_o, rc_t,
                 rc_o))
    return rows


@pytest.mark.skipif(SKIP is not None, reason=SKIP or "")
def test_coldstart_fdk_answers_as_fdk_python_does(capsys):
    assert len(FUNCTIONS) >= 50
    rows = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        for r in pool.map(_run_function, FUNCTIONS):
            rows.extend(r)
    counts = {"identical": 0, "allowed": 0, "other": 0}
    by_rule = {}
    bad = []
    for ident, name, verdict, rules, theirs, ours, et, eo in rows:
        counts[verdict] += 1
        if verdict == "allowed":
            for rule in rules:
                by_rule[rule] = by_rule.get(rule, 0) + 1
        if verdict == "allowed" and "traceback" in rules and \
                os.environ.get("FDK_DIFF_SHOW"):
            print("%s / %s: %r\n  vs %r" % (ident, name, et, eo))
        if verdict == "other":
            bad.append("%s / %s:\n  fdk-python:    %r\n  coldstart-fdk: %r\n"
                       "  stderr fdk-python:    %r\n"
                       "  stderr coldstart-fdk: %r"
                       % (ident, name, theirs, ours, et, eo))
    with capsys.disabled():
        print("\nfdk differential test: %d functions, %d comparisons: "
              "%d identical (but for the Fn-Fdk-Version value), %d allowed "
              "differences, %d other" % (
                  len(FUNCTIONS), len(rows), counts["identical"],
                  counts["allowed"], counts["other"]))
        for rule, n in sorted(by_rule.items()):
            print("  allowed %-16s %3d  (%s)" % (rule, n, ALLOWED[rule]))
    assert not bad, "\n\n".join(bad)
