"""Events in and responses out as awslambdaric 4.0.1 reads and writes them
(simplejson 3.18 with use_decimal=False, allow_nan=True; Decimal written as
its text, NaN decimals as NaN; ensure_ascii off only for the Lambda
python3.12+ execution environments), on the standard library's json.

The standard encoder's C loop does the work; simplejson differs from it in
a few places, which a pure-Python encoder here follows instead: an object
with a callable _asdict() (namedtuples, and lists, tuples or dicts that
have one) is written as the dict it returns, bytes as their UTF-8 text,
bytes keys likewise.  A scan of the containers for namedtuples decides
which encoder runs (it is skipped when no such class exists); when the
fast one raises, the slow one runs to raise as simplejson does.

The json package itself is not imported (its regular expressions cost a
millisecond of CPU at the first event, and `re` with them): the C
scanner and encoder of _json do what json.loads() and json.dumps() would
with them, and a document that does not parse goes to json.loads() for
its exception.
"""

import os
import sys

from .errors import FaultException

try:
    from _json import encode_basestring as _quote
    from _json import encode_basestring_ascii as _quote_ascii
    from _json import make_encoder as _make_encoder
    from _json import make_scanner as _make_scanner
except ImportError:  # no C accelerator: json's Python code
    from json.encoder import encode_basestring as _quote
    from json.encoder import encode_basestring_ascii as _quote_ascii
    _make_encoder = _make_scanner = None

_ENSURE_ASCII_OFF = {"AWS_Lambda_python3.12", "AWS_Lambda_python3.13",
                     "AWS_Lambda_python3.14", "AWS_Lambda_python3.15"}

_INF = float("inf")


def _ensure_ascii():
    return os.environ.get("AWS_EXECUTION_ENV") not in _ENSURE_ASCII_OFF


def _decimal_type():
    # No object is a Decimal unless the decimal module was imported.
    mod = sys.modules.get("decimal")
    return getattr(mod, "Decimal", None)


def _decimal_text(o):
    if o.is_nan():
        return "NaN"
    return str(o)


_SCALARS = frozenset((str, int, float, bool, type(None)))


def _decode_context():
    # What the C scanner reads of a json.JSONDecoder() with no arguments
    # (json.loads' own), on a module object: no class of its own to create
    # at every start.
    ctx = type(sys)("_decode_context")
    ctx.object_hook = None
    ctx.object_pairs_hook = None
    ctx.parse_float = float
    ctx.parse_int = int
    ctx.parse_constant = {"-Infinity": -_INF, "Infinity": _INF,
                          "NaN": float("nan")}.__getitem__
    ctx.strict = True
    ctx.memo = {}
    return ctx


_scan = _make_scanner(_decode_context()) if _make_scanner else None


def _skip_space(s, i):
    # json.decoder's WHITESPACE: [ \t\n\r]*
    n = len(s)
    while i < n and s[i] in " \t\n\r":
        i += 1
    return i


def loads(s):
    """json.loads(s) for a str s, raising what it raises."""
    if _scan is not None and not s.startswith("\ufeff"):
        try:
            obj, end = _scan(s, _skip_space(s, 0))
            if _skip_space(s, end) == len(s):
                return obj
        except Exception:
            pass
    import json
    return json.loads(s)


def _asdict_types():
    """The dict, list and tuple subclasses alive now that have a callable
    _asdict (namedtuples, mostly): the standard encoder writes them as
    plain containers, simplejson as what _asdict() returns."""
    found = set()
    stack = list(tuple.__subclasses__()) + list(list.__subclasses__()) + \
        list(dict.__subclasses__())
    seen = set()
    while stack:
        cls = stack.pop()
        if cls in seen:
            continue
        seen.add(cls)
        try:
            stack.extend(type.__subclasses__(cls))
        except TypeError:
            continue
        if callable(getattr(cls, "_asdict", None)):
            found.add(cls)
    return found


def _needs_slow(obj):
    """True when obj holds an instance of one of _asdict_types().  (Bytes
    keys need the slow encoder too: the standard one raises for them, and
    to_json() then tries the slow one.)  Walks the dicts, lists and tuples
    level by level with gc.get_referents, which lists a whole level's
    items in C; at most as deep as an encoder can go (a circular structure
    ends the walk there, and the encoders report it)."""
    bad = _asdict_types()
    if not bad:
        return False
    import gc
    level = [obj]
    for _ in range(sys.getrecursionlimit()):
        types = set(map(type, level))
        if not bad.isdisjoint(types):
            return True
        keep = {t for t in types if issubclass(t, (dict, list, tuple))}
        if not keep:
            return False
        level = gc.get_referents(*[o for o in level if type(o) in keep])
    return False


class _Fast(object):
    """The standard encoder (json.JSONEncoder(allow_nan=True) with its C
    loop) with default() for what simplejson writes and the standard one
    cannot: Decimal (as a marker string replaced by its text afterwards),
    bytes, _asdict() objects."""

    def __init__(self, ensure_ascii):
        self.ensure_ascii = ensure_ascii
        self.decimals = None
        self.marker = None
        self.dec = _decimal_type()

    def default(self, o):
        if self.dec is not None and isinstance(o, self.dec):
            if self.decimals is None:
                self.decimals = []
                self.marker = "\x00coldstart-decimal-%s-" % (
                    os.urandom(8).hex())
            self.decimals.append(_decimal_text(o))
            return "%s%d\x00" % (self.marker, len(self.decimals) - 1)
        if isinstance(o, bytes):
            return o.decode("utf-8")
        asdict = getattr(o, "_asdict", None)
        if asdict is not None and callable(asdict):
            d = asdict()
            if not isinstance(d, dict):
                raise TypeError("_asdict() must return a dict, not %s"
                                % type(d).__name__)
            return d
        raise TypeError("Object of type %s is not JSON serializable"
                        % o.__class__.__name__)

    def encode(self, obj):
        """json.JSONEncoder.encode(obj)."""
        quote = _quote_ascii if self.ensure_ascii else _quote
        if isinstance(obj, str):
            return quote(obj)
        if _make_encoder is None:
            import json
            return json.JSONEncoder(ensure_ascii=self.ensure_ascii,
                                    allow_nan=True,
                                    default=self.default).encode(obj)
        chunks = _make_encoder({}, self.default, quote, None, ": ", ", ",
                               False, False, True)(obj, 0)
        if not isinstance(chunks, (list, tuple)):
            chunks = list(chunks)
        return "".join(chunks)

    def encode_all(self, obj):
        text = self.encode(obj)
        if self.decimals:
            esc = _quote_ascii(self.marker)[1:-1]
            parts = text.split('"' + esc)
            out = [parts[0]]
            for p in parts[1:]:
                i = p.index("\\u0000")
                out.append(self.decimals[int(p[:i])])
                out.append(p[i + 7:])
            text = "".join(out)
        return text


def _float_text(o):
    if o != o:
        return "NaN"
    if o == _INF:
        return "Infinity"
    if o == -_INF:
        return "-Infinity"
    return float.__repr__(o)


class _Slow(object):
    """simplejson's encoding order, in Python: text, None, booleans, ints,
    floats, _asdict(), lists, tuples, dicts, then default()."""

    def __init__(self, ensure_ascii):
        self.quote = _quote_ascii if ensure_ascii else _quote
        self.dec = _decimal_type()
        self.seen = set()

    def key(self, k):
        if isinstance(k, str):
            return k
        if isinstance(k, bytes):
            return k.decode("utf-8")
        if isinstance(k, float):
            return _float_text(k)
        if k is True:
            return "true"
        if k is False:
            return "false"
        if k is None:
            return "null"
        if isinstance(k, int):
            return int.__repr__(k)
        raise TypeError("keys must be str, int, float, bool or None, not %s"
                        % type(k).__name__)

    def enter(self, o):
        i = id(o)
        if i in self.seen:
            raise ValueError("Circular reference detected")
        self.seen.add(i)
        return i

    def encode(self, o, out):
        if isinstance(o, bytes):
            o = o.decode("utf-8")
        if isinstance(o, str):
            out.append(self.quote(o))
        elif o is None:
            out.append("null")
        elif o is True:
            out.append("true")
        elif o is False:
            out.append("false")
        elif isinstance(o, int):
            out.append(int.__repr__(o))
        elif isinstance(o, float):
            out.append(_float_text(o))
        else:
            asdict = getattr(o, "_asdict", None)
            if asdict is not None and callable(asdict):
                d = asdict()
                if not isinstance(d, dict):
                    raise TypeError("_asdict() must return a dict, not %s"
                                    % type(d).__name__)
                self.encode_dict(d, out)
            elif isinstance(o, (list, tuple)):
                i = self.enter(o)
                out.append("[")
                first = True
                for v in o:
                    if not first:
                        out.append(", ")
                    first = False
                    self.encode(v, out)
                out.append("]")
                self.seen.discard(i)
            elif isinstance(o, dict):
                self.encode_dict(o, out)
            elif self.dec is not None and isinstance(o, self.dec):
                out.append(_decimal_text(o))
            else:
                raise TypeError("Object of type %s is not JSON serializable"
                                % o.__class__.__name__)

    def encode_dict(self, d, out):
        i = self.enter(d)
        out.append("{")
        first = True
        for k, v in d.items():
            k = self.key(k)
            if not first:
                out.append(", ")
            first = False
            out.append(self.quote(k))
            out.append(": ")
            self.encode(v, out)
        out.append("}")
        self.seen.discard(i)


def to_json(obj):
    """obj as awslambdaric's to_json() writes it; raises what simplejson
    raises (TypeError, ValueError, UnicodeDecodeError)."""
    ascii_only = _ensure_ascii()
    if not _needs_slow(obj):
        try:
            return _Fast(ascii_only).encode_all(obj)
        except (TypeError, ValueError, RecursionError):
            pass
    out = []
    _Slow(ascii_only).encode(obj, out)
    return "".join(out)


def marshal_response(response):
    """(body bytes, content type) for a handler's return value; raises
    FaultException(Runtime.MarshalError) for what cannot be written."""
    if isinstance(response, bytes):
        return response, "application/unknown"
    try:
        text = to_json(response)
    except Exception as e:
        raise FaultException(FaultException.MARSHAL_ERROR,
                             "Unable to marshal response: {}".format(str(e)),
                             None)
    try:
        return text.encode("utf-8"), "application/json"
    except UnicodeEncodeError as e:
        # awslambdaric's encode() here raises outside its error handling
        # and the runtime dies; the caller gets a MarshalError instead.
        raise FaultException(FaultException.MARSHAL_ERROR,
                             "Unable to marshal response: {}".format(str(e)),
                             None)


def _simplejson_message(e, doc):
    """The standard decoder's message as simplejson words it."""
    msg = e.msg
    if msg == "Extra data":
        end = len(doc)
        endline = doc.count("\n", 0, end) + 1
        endcol = end - doc.rfind("\n", 0, end)
        return "%s: line %d column %d - line %d column %d (char %d - %d)" % (
            msg, e.lineno, e.colno, endline, endcol, e.pos, end)
    if msg == "Invalid \\escape" and e.pos < len(doc):
        msg = "Invalid \\X escape sequence %r" % doc[e.pos]
    return "%s: line %d column %d (char %d)" % (msg, e.lineno, e.colno,
                                                e.pos)


def unmarshal_request(body, content_type):
    """The event for a body: JSON when its Content-Type is
    application/json, else the bytes as they came; raises
    FaultException(Runtime.UnmarshalError)."""
    if content_type != "application/json":
        return body
    try:
        doc = body.decode("utf-8") if isinstance(body, bytes) else body
        if doc.startswith("\ufeff"):
            doc = doc[1:]
        try:
            return loads(doc)
        except ValueError as e:
            import json
            if not isinstance(e, json.JSONDecodeError):
                raise
            raise ValueError(_simplejson_message(e, doc))
    except Exception as e:
        raise FaultException(FaultException.UNMARSHAL_ERROR,
                             "Unable to unmarshal input: {}".format(str(e)),
                             None)
