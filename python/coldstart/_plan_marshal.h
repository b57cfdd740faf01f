/*
 * A check of marshal data before the interpreter unmarshals it: part of
 * _plancode.c (included there), for the plan's string table and the code it
 * holds.
 *
 * The applier checks each archive part's CRC-32 before it reads it, so what
 * reaches here is what plan_code.py wrote.  This is the second line, for
 * bytes damaged in a way the CRC did not see: CPython's marshal reader is
 * not meant for damaged data, and some of it ends the process instead of
 * raising.  A reference (TYPE_REF) to a tuple, list, dict or set that is
 * still being read makes an object that contains itself; hashing it (a dict
 * key) or interning a code object's constants then recurses until the stack
 * overflows.  References that share one object many times over make a
 * small input that those same walks visit an exponential number of times.
 * And a length field allocates what it declares before the items are read.
 *
 * marshal_ok() walks the data as the reader would, without building
 * anything, and refuses: types that marshal does not write for code and
 * tables (lists, sets, the text forms of floats), a reference to an object
 * not yet complete, objects nested deeper than MARSHAL_DEPTH, a length
 * larger than what is left to read, and an object that, with what its
 * references share, counts more than MARSHAL_NODES objects.  What it
 * accepts, marshal reads into a tree of finished objects of bounded size.
 * It does not judge what the objects mean (a code object's bytecode is the
 * CRC's to vouch for).
 */

/* The nesting of real code: module > class > def > def > comprehension is
 * ten levels (a code object and its constants' tuple are two). */
#define MARSHAL_DEPTH 400
#define MARSHAL_NODES (1L << 22)

/* What a reference index stands for: the objects a walk of it meets, or
 * -1 while it is being read. */
struct mref {
	long nodes;
};

struct mscan {
	const unsigned char *p, *end;
	struct mref *refs;
	Py_ssize_t nrefs, cap;
};

static int mscan_take(struct mscan *s, Py_ssize_t n, const unsigned char **at)
{
	if (n < 0 || s->end - s->p < n)
		return -1;
	*at = s->p;
	s->p += n;
	return 0;
}

static int mscan_long(struct mscan *s, long *v)
{
	const unsigned char *b;

	if (mscan_take(s, 4, &b) < 0)
		return -1;
	*v = (long)(int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
	return 0;
}

/* A new reference index, -1 (in progress) until mscan_done. */
static Py_ssize_t mscan_reserve(struct mscan *s)
{
	if (s->nrefs == s->cap) {
		Py_ssize_t cap = s->cap ? s->cap * 2 : 64;
		struct mref *r = PyMem_Realloc(s->refs, (size_t)cap * sizeof(*r));

		if (!r)
			return -1;
		s->refs = r;
		s->cap = cap;
	}
	s->refs[s->nrefs].nodes = -1;
	return s->nrefs++;
}

static long mscan_object(struct mscan *s, int depth);

/* n objects in a row; their node count, or -1. */
static long mscan_items(struct mscan *s, long n, int depth)
{
	long total = 0;

	if (n < 0 || n > s->end - s->p)
		return -1;
	while (n-- > 0) {
		long k = mscan_object(s, depth);

		if (k < 0 || (total += k) > MARSHAL_NODES)
			return -1;
	}
	return total;
}

#if PY_VERSION_HEX >= 0x030B0000
#define CODE_LONGS_BEFORE 5 /* argcount, posonlyargcount, kwonlyargcount, stacksize, flags */
#define CODE_OBJECTS 8 /* code, consts, names, localsplusnames, localspluskinds, filename, name, qualname */
#define CODE_OBJECTS_AFTER 2 /* linetable, exceptiontable */
#elif PY_VERSION_HEX >= 0x03080000
#define CODE_LONGS_BEFORE 6 /* argcount, posonlyargcount, kwonlyargcount, nlocals, stacksize, flags */
#define CODE_OBJECTS 8 /* code, consts, names, varnames, freevars, cellvars, filename, name */
#define CODE_OBJECTS_AFTER 1 /* lnotab or linetable */
#else
#define CODE_LONGS_BEFORE 5 /* argcount, kwonlyargcount, nlocals, stacksize, flags */
#define CODE_OBJECTS 8
#define CODE_OBJECTS_AFTER 1
#endif

/*
 * One object and what it contains: the number of objects a walk of it
 * meets (itself included, a shared one as often as it is met), or -1 to
 * refuse.
 */
static long mscan_object(struct mscan *s, int depth)
{
	const unsigned char *b;
	Py_ssize_t idx = -1;
	long n, nodes = 1, k;
	int code, flag, i;

	if (depth > MARSHAL_DEPTH || mscan_take(s, 1, &b) < 0)
		return -1;
	code = b[0] & 0x7f;
	flag = b[0] & 0x80;
	/* Containers take their index before their items: a reference to it
	 * from inside is a cycle (marshal registers tuples, dicts and code
	 * before reading them, too). */
	if (flag && (code == '(' || code == ')' || code == '{' || code == 'c' || code == '>')) {
		idx = mscan_reserve(s);
		if (idx < 0)
			return -1;
	}
	switch (code) {
	case 'N': /* None, the other singletons: never registered */
	case 'F':
	case 'T':
	case 'S':
	case '.': return 1;
	case 'i':
		if (mscan_take(s, 4, &b) < 0)
			return -1;
		break;
	case 'g':
		if (mscan_take(s, 8, &b) < 0)
			return -1;
		break;
	case 'y':
		if (mscan_take(s, 16, &b) < 0)
			return -1;
		break;
	case 'l': /* n 15-bit digits, two bytes each; the sign of n is the number's */
		if (mscan_long(s, &n) < 0 || n < -(1L << 24) || n > 1L << 24 ||
		    mscan_take(s, 2 * (n < 0 ? -n : n), &b) < 0)
			return -1;
		break;
	case 's': /* bytes, str of all kinds */
	case 't':
	case 'u':
	case 'a':
	case 'A':
		if (mscan_long(s, &n) < 0 || mscan_take(s, n, &b) < 0)
			return -1;
		break;
	case 'z':
	case 'Z':
		if (mscan_take(s, 1, &b) < 0 || mscan_take(s, b[0], &b) < 0)
			return -1;
		break;
	case '(':
	case ')':
	case '>':
		if (code == ')') {
			if (mscan_take(s, 1, &b) < 0)
				return -1;
			n = b[0];
		} else if (mscan_long(s, &n) < 0) {
			return -1;
		}
		k = mscan_items(s, n, depth + 1);
		if (k < 0)
			return -1;
		nodes += k;
		break;
	case '{': /* key, value, ... up to TYPE_NULL */
		for (;;) {
			if (s->p >= s->end)
				return -1;
			if (*s->p == '0') {
				s->p++;
				break;
			}
			k = mscan_items(s, 2, depth + 1);
			if (k < 0 || (nodes += k) > MARSHAL_NODES)
				return -1;
		}
		break;
	case 'c':
		for (i = 0; i < CODE_LONGS_BEFORE; i++)
			if (mscan_long(s, &n) < 0)
				return -1;
		k = mscan_items(s, CODE_OBJECTS, depth + 1);
		if (k < 0 || mscan_long(s, &n) < 0)
			return -1;
		nodes += k;
		k = mscan_items(s, CODE_OBJECTS_AFTER, depth + 1);
		if (k < 0)
			return -1;
		nodes += k;
		break;
	case 'r':
		if (mscan_long(s, &n) < 0 || n < 0 || n >= s->nrefs || s->refs[n].nodes < 0)
			return -1;
		return s->refs[n].nodes;
	default: /* TYPE_NULL out of place, lists, sets, text floats, int64, unknown */ return -1;
	}
	if (nodes > MARSHAL_NODES)
		return -1;
	if (flag) {
		if (idx < 0)
			idx = mscan_reserve(s);
		if (idx < 0)
			return -1;
		s->refs[idx].nodes = nodes;
	}
	return nodes;
}

/* 1 when data is one object marshal can read safely (above), else 0. */
static int marshal_ok(const char *data, Py_ssize_t len)
{
	struct mscan s = { (const unsigned char *)data, (const unsigned char *)data + len, NULL, 0, 0 };
	long nodes = len > 0 ? mscan_object(&s, 0) : -1;

	PyMem_Free(s.refs);
	return nodes >= 0;
}
