"""Mutation fuzzers for coldstart's readers written in Python (standard
library only: no coverage guidance, random mutations of seed files).

  httpwire  coldstart-fdk's HTTP request reader (coldstart.fdk.httpwire).
            An input is fed whole and again in random pieces: both must
            give the same requests (method, target, headers, body) and the
            same refusal; the only exception allowed is HTTPError with a
            status the server knows how to send; bytes buffered stay within
            the head limit plus one piece.
  imports   why's source scanner (coldstart._imports.read_source and
            read_pyx): any bytes give a list of import tuples or one of the
            errors its caller turns into "error:..." (SyntaxError,
            ValueError, RecursionError, MemoryError).

Usage: python3 tests/fuzz/fuzz_py.py TARGET SECONDS SEED_DIR ARTIFACT_PREFIX
Prints "TARGET: N runs"; exits 1 after writing the first failing input to
ARTIFACT_PREFIX-crash-SHA1 with the traceback on stderr.
"""
import hashlib
import os
import random
import sys
import time
import traceback
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

from coldstart import _imports  # noqa: E402
from coldstart.fdk import httpwire  # noqa: E402

MAX_LEN = 1 << 16

HTTP_TOKENS = [
    b"\r\n", b"\n", b"\r\n\r\n", b"POST /call HTTP/1.1\r\n", b"HTTP/1.0", b"HTTP/2.0", b"Content-Length: ",
    b"Transfer-Encoding: chunked\r\n", b"Transfer-Encoding: gzip\r\n", b"Expect: 100-continue\r\n",
    b"Connection: close\r\n", b"Connection: keep-alive\r\n", b"0\r\n\r\n", b"ffffffffffffffff\r\n",
    b"-1", b"00000000000000000001", b";ext=\"x\"", b" \t", b":", b"\x00", b"\xff\xfe", b"\xc3\xa9",
    b"Fn-Http-H-X: y\r\n", b"  folded\r\n", b"Content-Length: 5\r\nContent-Length: 6\r\n",
]
PY_TOKENS = [
    b"import ", b"from ", b" import ", b" as ", b"(", b")", b",", b".", b"..", b"*", b"\n", b"    ", b"\t",
    b"try:\n", b"except ImportError:\n", b"if TYPE_CHECKING:\n", b"def f():\n", b"class C:\n",
    b"importlib.import_module(", b"__import__(", b"__package__", b"'''", b'"""', b"\\\n", b"#", b"cimport ",
    b"cdef ", b"if __name__ == '__main__':\n", b"\x00", b"\xff", b"lambda: ", b"async def g():\n",
    b"match x:\n    case 1:\n", b"(" * 50, b"[" * 200,
]


def mutate(rng, data, tokens):
    data = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(7)
        pos = rng.randint(0, len(data))
        if op == 0 and data:
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            data[pos:pos] = bytes([rng.randrange(256)])
        elif op == 2 and data:
            del data[pos:pos + rng.randint(1, 16)]
        elif op == 3:
            data[pos:pos] = rng.choice(tokens)
        elif op == 4 and data:
            a = rng.randrange(len(data))
            chunk = data[a:a + rng.randint(1, 64)]
            data[pos:pos] = chunk * rng.randint(1, 4)
        elif op == 5 and data:
            i = rng.randrange(len(data))
            data[i] = rng.choice(b"0123456789abcdefABCDEF \r\n\t:;")
        else:
            data[pos:pos] = str(rng.choice((0, 1, 7, 255, 65535, 65536, 1 << 31, 1 << 40))).encode()
    return bytes(data[:MAX_LEN])


def _requests(reader, pieces, max_head):
    """Feeds pieces; returns [request summaries] and the refusal or None."""
    out = []
    for piece in pieces:
        reader.feed(piece)
        if len(reader.buf) > max_head + len(piece) + 64 and reader.state == 0:
            raise AssertionError("buffered %d bytes with a head limit of %d" % (len(reader.buf), max_head))
        while True:
            try:
                req = reader.next_request()
            except httpwire.HTTPError as e:
                if e.status not in httpwire.REASONS or e.status < 400:
                    raise AssertionError("refusal with status %r" % e.status)
                return out, e.status
            if req is None:
                break
            out.append((req.method, req.target, req.version, tuple(req.header_list), req.keep_alive,
                        req.body_io.getvalue()))
    return out, None


def one_httpwire(data, rng):
    max_head = 512
    whole = _requests(httpwire.RequestReader(max_head=max_head, max_body=4096), [data], max_head)
    pieces, i = [], 0
    while i < len(data):
        n = rng.randint(1, 64)
        pieces.append(data[i:i + n])
        i += n
    split = _requests(httpwire.RequestReader(max_head=max_head, max_body=4096), pieces, max_head)
    # A refusal may come earlier in pieces (a limit is seen before the end):
    # the requests before it must agree, and so must the refusal's status
    # when both refused.
    if whole != split:
        (wr, ws), (sr, ss) = whole, split
        if wr[:len(sr)] != sr and sr[:len(wr)] != wr:
            raise AssertionError("pieces gave other requests:\n%r\n%r" % (whole, split))
        if (ws is None) != (ss is None) and len(wr) == len(sr):
            raise AssertionError("pieces changed the refusal: %r vs %r" % (ws, ss))


def one_imports(data, rng):
    try:
        out = _imports.read_source(data, "<fuzz>")
        if not isinstance(out, list):
            raise AssertionError("read_source gave %r" % type(out))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    out = _imports.read_pyx(data)
    if not isinstance(out, list):
        raise AssertionError("read_pyx gave %r" % type(out))


TARGETS = {"httpwire": (one_httpwire, HTTP_TOKENS), "imports": (one_imports, PY_TOKENS)}


def main(argv):
    name, seconds, seed_dir, prefix = argv[1], float(argv[2]), argv[3], argv[4]
    run, tokens = TARGETS[name]
    seeds = []
    for f in sorted(os.listdir(seed_dir)) if os.path.isdir(seed_dir) else []:
        with open(os.path.join(seed_dir, f), "rb") as fh:
            seeds.append(fh.read()[:MAX_LEN])
    seeds = seeds or [b""]
    rng = random.Random(int(os.environ.get("FUZZ_SEED", "0")) or None)
    end = time.monotonic() + seconds
    runs = 0
    sys.setrecursionlimit(10000)
    warnings.simplefilter("ignore")  # SyntaxWarnings of mutated source
    while True:
        # Check the clock every 64 inputs: it costs as much as an input.
        if runs % 64 == 0 and time.monotonic() >= end:
            break
        data = rng.choice(seeds) if runs < len(seeds) else mutate(rng, rng.choice(seeds), tokens)
        try:
            run(data, random.Random(runs))
        except Exception:
            path = "%s-crash-%s" % (prefix, hashlib.sha1(data).hexdigest())
            with open(path, "wb") as fh:
                fh.write(data)
            traceback.print_exc()
            sys.stderr.write("%s: failing input written to %s\n" % (name, path))
            print("%s: %d runs" % (name, runs + 1))
            return 1
        runs += 1
    print("%s: %d runs" % (name, runs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
