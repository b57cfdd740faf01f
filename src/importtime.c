/*
 * Streaming parser of `-X importtime` stderr: splits lines, recognises header
 * and row lines (also when glued after the target's own text), and builds the
 * post-order rows into per-process import trees with a stack of pending nodes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "importtime.h"
#include "parallel.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define MARKER "import time:"
#define MARKER_LEN (sizeof(MARKER) - 1)
#define HEADER_REST " self [us] | cumulative | imported package"
#define HEADER_REST_LEN (sizeof(HEADER_REST) - 1)
/* "import time: %9ld | %10ld | ": where a common row's indentation starts. */
#define ROW_COLUMNS (MARKER_LEN + 26)

/*
 * A line longer than this that is not a row is passed through in pieces, so
 * one endless line never holds more than this much memory.  The fuzzer builds
 * with a small limit to reach that path.
 */
#ifndef IT_MAX_LINE
#define IT_MAX_LINE ((size_t)16 << 20)
#endif
_Static_assert(IT_MAX_LINE >= 2 * MARKER_LEN, "IT_MAX_LINE too small");
/* Warnings beyond this many are only counted, so junk input stays bounded. */
#define IT_MAX_WARNINGS 1000
/* Names quoted in warnings are cut to this many bytes. */
#define IT_QUOTE_MAX 80

/* maxd of a pending node whose depth is known. */
#define DEPTH_KNOWN UINT32_MAX

/*
 * A node printed but not yet adopted by a parent row.  For a cached row whose
 * depth is not known yet, maxd is the deepest level its printed field allows
 * (see attach_cached); for every other node it is DEPTH_KNOWN.
 */
struct pending {
	int32_t node;
	uint32_t maxd;
	uint32_t depth; /* the node's, when known: adopt reads it here, not in the node */
};

struct it_parser {
	struct run *run;
	/* Index of the current process in run->procs; the array may move. */
	size_t proc;
	bool has_proc;
	struct pending *stack;
	size_t nr_stack, alloc_stack;
	/* The start of a line whose newline has not arrived yet. */
	struct buf carry;
	/* The line in carry has passed MAX_LINE and lost its head. */
	bool overlong;
	long lineno;
	size_t rows, headers;
	struct it_warning *warnings;
	size_t nr_warnings, alloc_warnings;
	size_t dropped_warnings;
	bool finished;
};

/* What parse_row found on one line. */
struct row {
	bool header;
	bool cached;
	bool clamped; /* a number did not fit in int64 */
	bool no_separator; /* no space after the last '|' */
	size_t prefix_len; /* bytes before MARKER, passed through */
	int64_t self_us, cum_us;
	uint32_t flags;
	uint32_t depth; /* normal rows */
	size_t indent; /* spaces between "| " and the name */
	const char *name;
	size_t name_len;
};

static void add_warning(struct it_parser *ps, long line, const char *fmt, va_list ap)
{
	struct buf msg = BUF_INIT;

	buf_vaddf(&msg, fmt, ap);
	ALLOC_GROW(ps->warnings, ps->nr_warnings + 1, ps->alloc_warnings);
	ps->warnings[ps->nr_warnings].line = line;
	ps->warnings[ps->nr_warnings].msg = buf_detach(&msg, NULL);
	ps->nr_warnings++;
}

/* Records a warning about line (1-based); beyond the cap it is only counted. */
static void warn_at(struct it_parser *ps, long line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void warn_at(struct it_parser *ps, long line, const char *fmt, ...)
{
	va_list ap;

	if (ps->nr_warnings >= IT_MAX_WARNINGS) {
		ps->dropped_warnings++;
		return;
	}
	va_start(ap, fmt);
	add_warning(ps, line, fmt, ap);
	va_end(ap);
}

#define warn(ps, ...) warn_at((ps), (ps)->lineno, __VA_ARGS__)

static uint32_t clamp_depth(size_t d)
{
	return d > UINT32_MAX - 2 ? UINT32_MAX - 2 : (uint32_t)d;
}

static int quote_len(size_t len)
{
	return (int)(len > IT_QUOTE_MAX ? IT_QUOTE_MAX : len);
}

static void pass(struct buf *pt, const char *data, size_t len)
{
	if (pt && len)
		buf_add(pt, data, len);
}

static struct proc *cur_proc(struct it_parser *ps)
{
	return &ps->run->procs[ps->proc];
}

static inline void push_pending(struct it_parser *ps, int32_t node, uint32_t maxd, uint32_t depth)
{
	if (ps->nr_stack == ps->alloc_stack)
		ALLOC_GROW(ps->stack, ps->nr_stack + 1, ps->alloc_stack);
	ps->stack[ps->nr_stack].node = node;
	ps->stack[ps->nr_stack].maxd = maxd;
	ps->stack[ps->nr_stack].depth = depth;
	ps->nr_stack++;
}

/*
 * Links every pending node of the current process as a root, in stream
 * order.  A cached row still waiting for a parent is legitimately a root (its
 * field allows depth 0); any other pending node lost its parent's row, which
 * is worth one warning saying why.
 */
static void flush_pending(struct it_parser *ps, const char *why)
{
	struct proc *pr;
	size_t i, lost = 0;

	if (!ps->has_proc)
		return;
	pr = cur_proc(ps);
	for (i = 0; i < ps->nr_stack; i++) {
		struct pending *e = &ps->stack[i];

		if (e->maxd != DEPTH_KNOWN)
			pr->nodes[e->node].depth = 0;
		else
			lost++;
		proc_link_root(pr, e->node);
	}
	if (lost)
		warn(ps, "%s: %zu import%s without a parent row linked as root%s", why, lost,
		     lost == 1 ? "" : "s", lost == 1 ? "" : "s");
	ps->nr_stack = 0;
}

static void start_proc(struct it_parser *ps)
{
	run_add_proc(ps->run);
	ps->proc = ps->run->nr_procs - 1;
	ps->has_proc = true;
}

/*
 * Word-at-a-time helpers for the two loops that see every byte of a row:
 * the indentation and the name.  A row is ~70 bytes and there may be
 * millions of them.
 */
#define ONES ((uint64_t)0x0101010101010101ULL)
#define HIGHS ((uint64_t)0x8080808080808080ULL)

static uint64_t load64(const char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Bytes of x that are zero get their high bit set (exact, no false hits). */
static uint64_t zero_bytes(uint64_t x)
{
	return ~(((x & ~HIGHS) + ~HIGHS) | x | ~HIGHS);
}

static inline size_t count_spaces(const char *p, const char *end)
{
	const char *s = p;

#ifdef __SSE2__
	for (; end - p >= 16; p += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)p);
		unsigned other = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(' '))) ^ 0xffffu;

		if (other)
			return (size_t)(p - s) + (size_t)__builtin_ctz(other);
	}
#endif
	while (end - p >= 8) {
		uint64_t other = ~zero_bytes(load64(p) ^ (ONES * ' ')) & HIGHS;

		if (other) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			return (size_t)(p - s) + (size_t)__builtin_ctzll(other) / 8;
#else
			break;
#endif
		}
		p += 8;
	}
	while (p < end && *p == ' ')
		p++;
	return (size_t)(p - s);
}

/* First byte of [p, end) that cannot be in a module name, or end. */
static inline const char *skip_name(const char *p, const char *end)
{
#ifdef __SSE2__
	for (; end - p >= 16; p += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)p);
		/* Unsigned v <= 0x1f, the DEL byte, '|'. */
		__m128i bad = _mm_or_si128(_mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f)),
					   _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)),
							_mm_cmpeq_epi8(v, _mm_set1_epi8('|'))));
		unsigned m = (unsigned)_mm_movemask_epi8(bad);

		if (m)
			return p + __builtin_ctz(m);
	}
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	for (; end - p >= 8; p += 8) {
		uint64_t x = load64(p);
		/* < 0x20 (exact for the lowest flagged byte), 0x7f, '|' */
		uint64_t bad = ((x - ONES * 0x20) & ~x & HIGHS) | zero_bytes(x ^ (ONES * 0x7f)) |
			       zero_bytes(x ^ (ONES * '|'));

		if (bad)
			return p + __builtin_ctzll(bad) / 8;
	}
#endif
	for (; p < end; p++) {
		unsigned char ch = (unsigned char)*p;

		if (ch < 0x20 || ch == 0x7f || ch == '|')
			break;
	}
	return p;
}

/*
 * The value of a number right-aligned in 8 bytes ("    1243"), or -1 when
 * the bytes are anything else (all spaces, a space after a digit, a sign).
 * The leading spaces become '0's, all eight bytes must then be digits, and
 * digit pairs, quads and octets are combined with three multiplications.
 */
static inline __attribute__((always_inline)) int64_t field8(const char *f)
{
	uint64_t x = load64(f);
	/* Bytes before the first one that is not a space (there must be one). */
	uint64_t lead = ~zero_bytes(x ^ (ONES * ' ')) & HIGHS;
	unsigned shift;

	if (!lead)
		return -1;
	shift = (unsigned)__builtin_ctzll(lead) & ~7u;
	/* ' ' | 0x10 == '0'; the shift by 64 is avoided: lead has a bit below 64. */
	x |= ((ONES * 0x10) >> (63 - shift)) >> 1;
	if (((x & (ONES * 0xf0)) ^ (ONES * 0x30)) | (((x & (ONES * 0x0f)) + ONES * 0x06) & (ONES * 0x10)))
		return -1;
	x &= ONES * 0x0f;
	x = (x * (1 + (10 << 8))) >> 8 & 0x00ff00ff00ff00ffULL;
	x = (x * (1 + (100 << 16))) >> 16 & 0x0000ffff0000ffffULL;
	x = (x * (1 + (10000ULL << 32))) >> 32;
	return (int64_t)x;
}

/*
 * Parses "123", "-123" or "cached" after optional spaces, up to the next
 * '|'.  Returns the position after the '|', or NULL when the column is not
 * one of those.  Numbers beyond int64 are clamped; the caller warns.
 */
static const char *parse_column(const char *p, const char *end, int64_t *val, bool *cached,
				bool *clamped, bool *negative)
{
	bool neg = false;
	uint64_t v = 0;
	const char *digits;

	*cached = *clamped = *negative = false;
	p += count_spaces(p, end);
	if ((size_t)(end - p) >= 6 && !memcmp(p, "cached", 6)) {
		*cached = true;
		*val = 0;
		p += 6;
	} else {
		if (p < end && *p == '-') {
			neg = true;
			p++;
		}
		digits = p;
		/* 18 digits always fit; only longer numbers need checks. */
		while (p < end && (unsigned char)(*p - '0') < 10 && p - digits < 18)
			v = v * 10 + (unsigned)(*p++ - '0');
		if (p == digits)
			return NULL;
		for (; p < end && (unsigned char)(*p - '0') < 10; p++) {
			unsigned d = (unsigned)(*p - '0');

			if (v > ((uint64_t)INT64_MAX - d) / 10) {
				*clamped = true;
				v = (uint64_t)INT64_MAX;
			} else if (!*clamped) {
				v = v * 10 + d;
			}
		}
		*val = neg ? -(int64_t)v : (int64_t)v;
		*negative = neg && v;
	}
	p += count_spaces(p, end);
	if (p == end || *p != '|')
		return NULL;
	return p + 1;
}

/*
 * Recognises a header or a row in line[0..len) (no newline, no CR).  Only the
 * first MARKER on the line is considered: what precedes it is the target's
 * own text, glued on the same line.  Returns 1 for a row or header, 0 for a
 * line without MARKER, -1 for a line with MARKER that does not parse (why is
 * set to the reason).
 */
static int parse_row(const char *line, size_t len, struct row *r, const char **why)
{
	const char *end = line + len, *p, *q, *m;
	bool c1, c2, clamp1, clamp2, neg1, neg2;
	size_t spaces, i;

	memset(r, 0, sizeof(*r));
	if (len >= MARKER_LEN && !memcmp(line, MARKER, MARKER_LEN))
		m = line;
	else if (!(m = memmem(line, len, MARKER, MARKER_LEN)))
		return 0;
	r->prefix_len = (size_t)(m - line);
	p = m + MARKER_LEN;

	if ((size_t)(end - p) == HEADER_REST_LEN && !memcmp(p, HEADER_REST, HEADER_REST_LEN)) {
		r->header = true;
		return 1;
	}
	q = parse_column(p, end, &r->self_us, &c1, &clamp1, &neg1);
	if (!q) {
		*why = "self column is not a number";
		return -1;
	}
	q = parse_column(q, end, &r->cum_us, &c2, &clamp2, &neg2);
	if (!q) {
		*why = "cumulative column is not a number";
		return -1;
	}
	if (c1 != c2) {
		*why = "only one column says 'cached'";
		return -1;
	}
	r->cached = c1;
	r->clamped = clamp1 || clamp2;
	if (neg1 || neg2)
		r->flags |= NODE_NEGATIVE;

	spaces = count_spaces(q, end);
	r->name = q + spaces;
	r->name_len = (size_t)(end - r->name);
	if (!r->name_len) {
		*why = "no module name";
		return -1;
	}
	i = (size_t)(skip_name(r->name, end) - r->name);
	if (i < r->name_len) {
		*why = r->name[i] == '|' ? "module name contains '|'"
					 : "module name contains a control character";
		return -1;
	}
	/* "| " is the separator; the indentation follows it. */
	r->no_separator = spaces == 0;
	r->indent = spaces ? spaces - 1 : 0;
	r->depth = clamp_depth(r->indent / 2);
	return 1;
}

/*
 * Adopts pending nodes for a row at depth d: scanning down from the top of
 * the stack, a node at depth d+1 is a child; a node deeper than that lost its
 * own parent's row and is attached here with a warning; a node at depth <= d
 * (or a cached row that cannot be this deep) ends the scan.  The adopted
 * nodes are linked in stream order, which is import order.
 */
static void adopt(struct it_parser *ps, int32_t parent, uint32_t d)
{
	struct proc *pr = cur_proc(ps);
	size_t k = ps->nr_stack, i;

	while (k > 0) {
		struct pending *e = &ps->stack[k - 1];

		if (e->maxd != DEPTH_KNOWN) {
			if (e->maxd < d + 1)
				break;
		} else if (e->depth <= d) {
			break;
		}
		k--;
	}
	for (i = k; i < ps->nr_stack; i++) {
		struct pending *e = &ps->stack[i];
		struct imp_node *n = &pr->nodes[e->node];

		if (e->maxd != DEPTH_KNOWN) {
			n->depth = d + 1;
		} else if (n->depth > d + 1) {
			const char *cn = node_name(pr, e->node), *pn = node_name(pr, parent);

			warn(ps, "'%.*s' at depth %u has no parent row at depth %u; attached to '%.*s'",
			     quote_len(strlen(cn)), cn, n->depth, n->depth - 1,
			     quote_len(strlen(pn)), pn);
		}
		proc_link_child(pr, parent, e->node);
	}
	ps->nr_stack = k;
}

/*
 * Places a cached row (3.14 -X importtime=2).  CPython prints it with
 * "%*s" in a field 2*L wide, L being the number of imports open at that
 * moment: the row is a leaf child of the innermost open import, at depth L.
 * When the name is shorter than the field, the padding gives L exactly and
 * the node is pending like any other.  When it is not, L can be anything up
 * to len(name)/2, and the log alone cannot tell which: the rule is that the
 * row is held pending and adopted by the first later row that can be its
 * parent, i.e. the first row at a depth d with d+1 <= len(name)/2 (the
 * innermost candidate, because cached rows are far more common inside
 * imports than at the top level).  Left over at the end, it is a root.
 * The rule is exact when the cached import is followed by the end of the
 * import it belongs to; when a fresh import follows it in the same module,
 * the row lands one level (or, for long names, several) too deep, under the
 * first row of that import.  Width is checked only for consistency.
 */
static void attach_cached(struct it_parser *ps, const struct row *r)
{
	struct proc *pr = cur_proc(ps);
	size_t width = r->indent + r->name_len;
	int32_t node = proc_add_node(pr, r->name, r->name_len, 0, 0, 0);
	uint32_t maxd = clamp_depth(width / 2);

	pr->nodes[node].flags |= NODE_CACHED;
	if (r->indent && width % 2 == 0) {
		pr->nodes[node].depth = maxd;
		push_pending(ps, node, DEPTH_KNOWN, maxd);
		return;
	}
	if (r->indent)
		warn(ps, "cached row for '%.*s' has an odd field width %zu",
		     quote_len(r->name_len), r->name, width);
	if (maxd == 0)
		proc_link_root(pr, node);
	else
		push_pending(ps, node, maxd, 0);
}

/* Adds a row that is not cached to the current process (it exists). */
static void add_row(struct it_parser *ps, const char *name, size_t len, uint32_t depth,
		    int64_t self_us, int64_t cum_us, uint32_t flags)
{
	struct proc *pr = cur_proc(ps);
	int32_t node = proc_add_node(pr, name, len, depth, self_us, cum_us);

	pr->nodes[node].flags |= flags;
	adopt(ps, node, depth);
	if (depth == 0)
		proc_link_root(pr, node);
	else
		push_pending(ps, node, DEPTH_KNOWN, depth);
}

static void handle_row(struct it_parser *ps, const struct row *r)
{
	struct proc *pr;

	if (r->header) {
		ps->headers++;
		if (ps->has_proc) {
			bool open = false;
			size_t i;

			for (i = 0; i < ps->nr_stack; i++)
				if (ps->stack[i].maxd == DEPTH_KNOWN)
					open = true;
			if (open)
				warn(ps, "a new process started while the previous one was "
					 "inside an import: process trees interleave");
			flush_pending(ps, "previous process interrupted");
		}
		start_proc(ps);
		return;
	}

	if (!ps->has_proc) {
		warn(ps, "row before any header: the log was cut at the top");
		start_proc(ps);
	}
	pr = cur_proc(ps);
	if (pr->nr_nodes >= INT32_MAX - 1) {
		warn(ps, "too many rows in one process: row dropped");
		return;
	}
	ps->rows++;
	if (r->clamped)
		warn(ps, "number too large for '%.*s': clamped to %lld", quote_len(r->name_len),
		     r->name, (long long)INT64_MAX);
	if (r->flags & NODE_NEGATIVE)
		warn(ps, "negative time for '%.*s'", quote_len(r->name_len), r->name);
	if (r->no_separator)
		warn(ps, "no space after the last '|' before '%.*s'", quote_len(r->name_len), r->name);

	if (r->cached) {
		attach_cached(ps, r);
		return;
	}
	if (r->indent % 2)
		warn(ps, "odd indentation (%zu spaces) before '%.*s'", r->indent,
		     quote_len(r->name_len), r->name);
	add_row(ps, r->name, r->name_len, r->depth, r->self_us, r->cum_us, r->flags);
}

/* A row lex_row recognised: everything add_row needs. */
struct fast_rec {
	const char *name;
	uint32_t name_len;
	uint32_t depth;
	int64_t self_us, cum_us;
};

/*
 * The common row in one pass: "import time:" at the start of a line, both
 * numbers inside their columns (under 100 s), even indentation and a clean
 * name up to the newline.  Returns the line's length, newline included, or 0
 * to leave the line to handle_line, which reads every line this one takes the
 * same way (and is the only one that warns).  Only whole lines are taken, and
 * nothing past the newline is looked at, so chunking makes no difference.
 * Touches no parser state: the lexing thread of it_feed_from calls it too.
 */
static size_t lex_row(const char *p, const char *end, struct fast_rec *rec)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const char *f = p + MARKER_LEN, *name, *stop;
	size_t indent;

	/* The marker, both columns and a one-byte name with its newline. */
	if (end - p < (ptrdiff_t)ROW_COLUMNS + 2)
		return 0;
	if (load64(p) != load64(MARKER) || memcmp(p + 8, MARKER + 8, MARKER_LEN - 8))
		return 0;
	if (f[0] != ' ' || f[1] != ' ' || f[10] != ' ' || f[11] != '|' || f[12] != ' ' ||
	    f[13] != ' ' || f[14] != ' ' || f[23] != ' ' || f[24] != '|' || f[25] != ' ')
		return 0;
	rec->self_us = field8(f + 2);
	rec->cum_us = field8(f + 15);
	if (rec->self_us < 0 || rec->cum_us < 0)
		return 0;
	indent = count_spaces(p + ROW_COLUMNS, end);
	if (indent % 2)
		return 0;
	name = p + ROW_COLUMNS + indent;
	stop = skip_name(name, end);
	if (stop == name || stop == end)
		return 0;
	rec->name = name;
	rec->name_len = (uint32_t)(stop - name);
	rec->depth = clamp_depth(indent / 2);
	if (*stop == '\r' && end - stop >= 2 && stop[1] == '\n')
		stop++;
	/* A longer line goes through carry like any other (and is cut there). */
	if (*stop != '\n' || (size_t)(stop + 1 - p) > IT_MAX_LINE)
		return 0;
	return (size_t)(stop + 1 - p);
#else
	(void)p;
	(void)end;
	(void)rec;
	return 0;
#endif
}

/* Whether the parser is in the state lex_row's rows may be added in. */
static bool fast_ok(struct it_parser *ps)
{
	return ps->has_proc && !ps->carry.len && !ps->overlong && cur_proc(ps)->nr_nodes < INT32_MAX - 1;
}

static void add_fast(struct it_parser *ps, const struct fast_rec *rec)
{
	ps->lineno++;
	ps->rows++;
	add_row(ps, rec->name, rec->name_len, rec->depth, rec->self_us, rec->cum_us, 0);
}

/* lex_row on the parser: adds the row and returns its length, or 0. */
static size_t fast_row(struct it_parser *ps, const char *p, const char *end)
{
	struct fast_rec rec;
	size_t n;

	if (!fast_ok(ps) || !(n = lex_row(p, end, &rec)))
		return 0;
	add_fast(ps, &rec);
	return n;
}

/*
 * Handles one complete line, newline included when it had one.  Rows are
 * consumed; the text glued before a row and every other line go to pt.
 */
static void handle_line(struct it_parser *ps, const char *line, size_t len, struct buf *pt)
{
	size_t body = len;
	const char *why = NULL;
	struct row r;
	int ret;

	ps->lineno++;
	if (body && line[body - 1] == '\n')
		body--;
	if (body && line[body - 1] == '\r')
		body--;
	ret = parse_row(line, body, &r, &why);
	if (ret <= 0) {
		if (ret < 0)
			warn(ps, "malformed importtime row passed through: %s", why);
		pass(pt, line, len);
		return;
	}
	pass(pt, line, r.prefix_len);
	handle_row(ps, &r);
}

/*
 * carry holds more than IT_MAX_LINE bytes of one line.  Keeps only what may
 * still become a row, the text from the last MARKER on (unless that text is
 * itself too long to be a row) or the last MARKER_LEN-1 bytes (a MARKER may
 * be split across chunks), and passes the rest through.
 */
static void trim_carry(struct it_parser *ps, struct buf *pt)
{
	const char *s = ps->carry.buf, *m, *last = NULL;
	size_t len = ps->carry.len, keep_from;

	if (!ps->overlong)
		warn_at(ps, ps->lineno + 1, "line longer than %zu bytes passed through in pieces", IT_MAX_LINE);
	ps->overlong = true;
	for (m = s; (m = memmem(m, len - (size_t)(m - s), MARKER, MARKER_LEN)); m++)
		last = m;
	if (last && last > s)
		keep_from = (size_t)(last - s);
	else
		keep_from = len - (MARKER_LEN - 1);
	pass(pt, s, keep_from);
	memmove(ps->carry.buf, s + keep_from, len - keep_from);
	buf_setlen(&ps->carry, len - keep_from);
}

/* Appends to carry, trimming whenever the line outgrows the limit. */
static void carry_add(struct it_parser *ps, const char *data, size_t len, struct buf *pt)
{
	while (len) {
		size_t room = IT_MAX_LINE + 1 - ps->carry.len;
		size_t n = len < room ? len : room;

		buf_add(&ps->carry, data, n);
		data += n;
		len -= n;
		if (ps->carry.len > IT_MAX_LINE)
			trim_carry(ps, pt);
	}
}

static void finish_carry(struct it_parser *ps, struct buf *pt)
{
	handle_line(ps, ps->carry.buf, ps->carry.len, pt);
	buf_reset(&ps->carry);
	ps->overlong = false;
}

struct it_parser *it_parser_new(struct run *run)
{
	struct it_parser *ps = xcalloc(1, sizeof(*ps));

	ps->run = run;
	buf_init(&ps->carry, 0);
	return ps;
}

void it_feed(struct it_parser *ps, const char *data, size_t len, struct buf *passthrough)
{
	const char *p = data, *end = data + len;

	if (ps->finished)
		BUG("it_feed after it_finish");
	while (p < end) {
		const char *nl;
		size_t n;

		if ((n = fast_row(ps, p, end))) {
			p += n;
			continue;
		}
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) {
			carry_add(ps, p, (size_t)(end - p), passthrough);
			return;
		}
		n = (size_t)(nl + 1 - p);
		/*
		 * A line that fits is parsed in place; anything else goes
		 * through carry, which trims at the same bytes however the
		 * input was chunked.
		 */
		if (!ps->carry.len && !ps->overlong && n <= IT_MAX_LINE) {
			handle_line(ps, p, n, passthrough);
		} else {
			carry_add(ps, p, n, passthrough);
			finish_carry(ps, passthrough);
		}
		p = nl + 1;
	}
}

void it_finish(struct it_parser *ps, struct buf *passthrough)
{
	if (ps->finished)
		return;
	if (ps->carry.len || ps->overlong)
		finish_carry(ps, passthrough);
	flush_pending(ps, "process ended inside an import");
	if (ps->dropped_warnings) {
		struct buf msg = BUF_INIT;

		buf_addf(&msg, "%zu more warnings not recorded", ps->dropped_warnings);
		ALLOC_GROW(ps->warnings, ps->nr_warnings + 1, ps->alloc_warnings);
		ps->warnings[ps->nr_warnings].line = 0;
		ps->warnings[ps->nr_warnings].msg = buf_detach(&msg, NULL);
		ps->nr_warnings++;
	}
	ps->finished = true;
}

/*
 * it_feed_from: a lexing thread reads chunks into a ring of slots and splits
 * each into items, in stream order: rows lex_row took, and raw bytes (every
 * other line, and lines cut by the chunk's end) for it_feed.  The calling
 * thread applies the items of one slot after the other.  256 KiB chunks keep
 * what the two threads hand over in the caches (1 MiB ones measured ~5 %
 * slower on the 1M-row bench log).
 */
#define LEX_CHUNK ((size_t)1 << 18)
#define LEX_SLOTS 8

/*
 * 24 bytes, as every row of a big log passes through one: offsets into the
 * slot's chunk, numbers lex_row kept under 10^8.  name_len 0 marks raw bytes.
 */
struct lex_item {
	uint32_t off, len; /* the raw bytes, or the row's line */
	uint32_t name_off, name_len; /* the row's name, from the line's start */
	uint32_t self_us, cum_us;
};

struct lex_slot {
	char *buf;
	struct lex_item *items;
	size_t nr_items, alloc_items;
	bool ready; /* lexed, not yet applied */
};

struct lexer {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct lex_slot slot[LEX_SLOTS];
	it_read_fn read;
	void *ctx;
	bool done; /* the lexing thread has filled its last slot */
	bool failed; /* read returned -1 */
	int read_errno;
	bool partial; /* the previous chunk ended inside a line (lexing thread only) */
};

static void lex_add(struct lex_slot *sl, const char *p, size_t len, const struct fast_rec *rec)
{
	struct lex_item *it;

	if (sl->nr_items == sl->alloc_items)
		ALLOC_GROW(sl->items, sl->nr_items + 1, sl->alloc_items);
	it = &sl->items[sl->nr_items++];
	it->off = (uint32_t)(p - sl->buf);
	it->len = (uint32_t)len;
	it->name_off = rec ? (uint32_t)(rec->name - p) : 0;
	it->name_len = rec ? rec->name_len : 0;
	it->self_us = rec ? (uint32_t)rec->self_us : 0;
	it->cum_us = rec ? (uint32_t)rec->cum_us : 0;
}

static void lex_chunk(struct lexer *lx, struct lex_slot *sl, size_t n)
{
	const char *p = sl->buf, *end = sl->buf + n, *raw = NULL;

	sl->nr_items = 0;
	if (lx->partial) {
		const char *nl = memchr(p, '\n', n);

		if (!nl) {
			lex_add(sl, p, n, NULL);
			return;
		}
		raw = p;
		p = nl + 1;
		lx->partial = false;
	}
	while (p < end) {
		struct fast_rec rec;
		size_t len = lex_row(p, end, &rec);
		const char *nl;

		if (len) {
			if (raw)
				lex_add(sl, raw, (size_t)(p - raw), NULL);
			raw = NULL;
			lex_add(sl, p, len, &rec);
			p += len;
			continue;
		}
		if (!raw)
			raw = p;
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) {
			lx->partial = true;
			p = end;
			break;
		}
		p = nl + 1;
	}
	if (raw)
		lex_add(sl, raw, (size_t)(p - raw), NULL);
}

static void *lex_main(void *arg)
{
	struct lexer *lx = arg;
	unsigned s = 0;

	for (;;) {
		struct lex_slot *sl = &lx->slot[s];
		long n;
		int err;

		pthread_mutex_lock(&lx->lock);
		while (sl->ready)
			pthread_cond_wait(&lx->cond, &lx->lock);
		pthread_mutex_unlock(&lx->lock);
		n = lx->read(lx->ctx, sl->buf, LEX_CHUNK);
		err = errno;
		if (n > 0)
			lex_chunk(lx, sl, (size_t)n);
		pthread_mutex_lock(&lx->lock);
		if (n > 0) {
			sl->ready = true;
		} else {
			lx->failed = n < 0;
			lx->read_errno = err;
			lx->done = true;
		}
		pthread_cond_broadcast(&lx->cond);
		pthread_mutex_unlock(&lx->lock);
		if (n <= 0)
			return NULL;
		s = (s + 1) % LEX_SLOTS;
	}
}

/* it_feed_from on the calling thread alone. */
static int feed_plain(struct it_parser *ps, it_read_fn read, void *ctx, struct buf *pt)
{
	char *chunk = xmalloc(LEX_CHUNK);
	long n;

	while ((n = read(ctx, chunk, LEX_CHUNK)) > 0)
		it_feed(ps, chunk, (size_t)n, pt);
	free(chunk);
	return n < 0 ? -1 : 0;
}

int it_feed_from(struct it_parser *ps, it_read_fn read, void *ctx, struct buf *pt)
{
	struct lexer lx;
	pthread_t thread;
	unsigned s, i;
	int ret = 0;

	if (parallel_cpus() < 2)
		return feed_plain(ps, read, ctx, pt);
	memset(&lx, 0, sizeof(lx));
	pthread_mutex_init(&lx.lock, NULL);
	pthread_cond_init(&lx.cond, NULL);
	lx.read = read;
	lx.ctx = ctx;
	for (s = 0; s < LEX_SLOTS; s++)
		lx.slot[s].buf = xmalloc(LEX_CHUNK);
	if (parallel_start(&thread, lex_main, &lx) < 0) {
		ret = feed_plain(ps, read, ctx, pt);
		goto out;
	}
	for (s = 0;; s = (s + 1) % LEX_SLOTS) {
		struct lex_slot *sl = &lx.slot[s];
		bool have;

		pthread_mutex_lock(&lx.lock);
		while (!sl->ready && !lx.done)
			pthread_cond_wait(&lx.cond, &lx.lock);
		have = sl->ready;
		pthread_mutex_unlock(&lx.lock);
		if (!have)
			break;
		for (i = 0; i < sl->nr_items; i++) {
			const struct lex_item *it = &sl->items[i];
			const char *line = sl->buf + it->off;

			if (it->name_len && fast_ok(ps)) {
				struct fast_rec rec = { line + it->name_off, it->name_len,
							clamp_depth((it->name_off - ROW_COLUMNS) / 2), it->self_us,
							it->cum_us };

				add_fast(ps, &rec);
			} else {
				it_feed(ps, line, it->len, pt);
			}
		}
		pthread_mutex_lock(&lx.lock);
		sl->ready = false;
		pthread_cond_broadcast(&lx.cond);
		pthread_mutex_unlock(&lx.lock);
	}
	pthread_join(thread, NULL);
	if (lx.failed) {
		errno = lx.read_errno;
		ret = -1;
	}
out:
	for (s = 0; s < LEX_SLOTS; s++) {
		free(lx.slot[s].buf);
		free(lx.slot[s].items);
	}
	pthread_cond_destroy(&lx.cond);
	pthread_mutex_destroy(&lx.lock);
	return ret;
}

const struct it_warning *it_warnings(const struct it_parser *ps, size_t *nr)
{
	*nr = ps->nr_warnings;
	return ps->warnings;
}

size_t it_rows(const struct it_parser *ps)
{
	return ps->rows;
}

size_t it_headers(const struct it_parser *ps)
{
	return ps->headers;
}

void it_parser_free(struct it_parser *ps)
{
	size_t i;

	if (!ps)
		return;
	for (i = 0; i < ps->nr_warnings; i++)
		free(ps->warnings[i].msg);
	free(ps->warnings);
	free(ps->stack);
	buf_release(&ps->carry);
	free(ps);
}

void it_parse_buffer(struct profile *p, struct run *run, const char *text, size_t len)
{
	struct it_parser *ps = it_parser_new(run);
	const struct it_warning *w;
	size_t nr, i;

	it_feed(ps, text, len, NULL);
	it_finish(ps, NULL);
	w = it_warnings(ps, &nr);
	for (i = 0; i < nr; i++)
		profile_add_warning(p, w[i].line, "%s", w[i].msg);
	it_parser_free(ps);
}
