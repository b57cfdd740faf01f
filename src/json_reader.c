/*
 * Streaming JSON reader (json_reader.h): a pull lexer over chunks of a byte
 * source, with the nesting, string and number limits that keep a hostile
 * document from costing more memory than its caller chooses to keep.
 */
#include "json_reader.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK ((size_t)64 << 10)

/* Fails with a message about the byte back bytes before the current one. */
static int vfail(struct jr *r, size_t back, const char *fmt, va_list ap)
{
	uint64_t at = r->offset + r->pos;

	if (r->failed)
		return -1;
	r->failed = true;
	at = at >= back ? at - back : 0;
	buf_reset(&r->err);
	buf_vaddf(&r->err, fmt, ap);
	buf_addf(&r->err, " at line %ld column %llu", r->line,
		 (unsigned long long)(at >= r->line_start ? at - r->line_start + 1 : 1));
	return -1;
}

static int fail_back(struct jr *r, size_t back, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail_back(struct jr *r, size_t back, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(r, back, fmt, ap);
	va_end(ap);
	return -1;
}

static void capture_span(struct jr *r, size_t from, size_t to)
{
	size_t n = to - from;

	if (r->capture->len + n > r->capture_max) {
		n = r->capture_max > r->capture->len ? r->capture_max - r->capture->len : 0;
		r->capture_cut = true;
	}
	buf_add(r->capture, r->chunk + from, n);
}

/* Reads the next chunk; false at the end or on error. */
static bool refill(struct jr *r)
{
	long n;

	if (r->eof || r->failed)
		return false;
	if (r->capture) {
		capture_span(r, r->capture_from, r->end);
		r->capture_from = 0;
	}
	r->offset += r->end;
	r->pos = r->end = 0;
	n = r->read(r->ctx, r->chunk, CHUNK, &r->err);
	if (n < 0) {
		r->failed = true;
		if (!r->err.len)
			buf_adds(&r->err, "read error");
		return false;
	}
	if (!n) {
		r->eof = true;
		return false;
	}
	r->end = (size_t)n;
	return true;
}

/* Makes at least one unread byte available; false at the end or on error. */
static inline bool fill(struct jr *r)
{
	return r->pos < r->end || refill(r);
}

/* The next byte that is not white space, not consumed; -1 at the end. */
static int peek_token(struct jr *r)
{
	for (;;) {
		while (r->pos < r->end) {
			unsigned char c = (unsigned char)r->chunk[r->pos];

			if (c == '\n') {
				r->line++;
				r->line_start = r->offset + r->pos + 1;
			} else if (c != ' ' && c != '\t' && c != '\r') {
				return c;
			}
			r->pos++;
		}
		if (!fill(r))
			return -1;
	}
}

static int unexpected(struct jr *r, int c, const char *wanted)
{
	if (r->failed)
		return -1;
	if (c < 0)
		return jr_fail(r, "invalid JSON: the document ends where %s was expected", wanted);
	if (c >= 0x20 && c < 0x7f)
		return jr_fail(r, "invalid JSON: '%c' where %s was expected", c, wanted);
	return jr_fail(r, "invalid JSON: byte 0x%02x where %s was expected", c, wanted);
}

static void add_utf8(struct buf *b, uint32_t cp)
{
	char u[4];

	if (cp < 0x80) {
		buf_addch(b, (int)cp);
		return;
	}
	if (cp < 0x800) {
		u[0] = (char)(0xc0 | cp >> 6);
		u[1] = (char)(0x80 | (cp & 0x3f));
		buf_add(b, u, 2);
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | cp >> 12);
		u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		buf_add(b, u, 3);
	} else {
		u[0] = (char)(0xf0 | cp >> 18);
		u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		u[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		buf_add(b, u, 4);
	}
}

static int next_byte(struct jr *r)
{
	if (!fill(r))
		return -1;
	return (unsigned char)r->chunk[r->pos++];
}

/* Four hex digits after \u; -1 on error. */
static long hex4(struct jr *r)
{
	long v = 0;
	int k, c;

	for (k = 0; k < 4; k++) {
		c = next_byte(r);
		if (c >= '0' && c <= '9')
			v = v * 16 + (c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v = v * 16 + (c - 'A' + 10);
		else
			return unexpected(r, c, "a hex digit of \\u");
	}
	return v;
}

/*
 * \uXXXX, the backslash and the u already read.  A surrogate pair is one
 * code point; a lone low surrogate U+DC80..U+DCFF is the byte 0x80..0xff it
 * stands for in Python's surrogateescape (json.dumps of os.fsdecode(b)),
 * any other lone surrogate becomes U+FFFD.
 */
static int read_unicode_escape(struct jr *r, struct buf *out)
{
	long cp = hex4(r), lo;

	if (cp < 0)
		return -1;
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (fill(r) && r->chunk[r->pos] == '\\') {
			r->pos++;
			if (next_byte(r) != 'u')
				return jr_fail(r, "invalid JSON: a high surrogate followed by another escape");
			lo = hex4(r);
			if (lo < 0)
				return -1;
			if (lo >= 0xdc00 && lo <= 0xdfff) {
				add_utf8(out, (uint32_t)(0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00)));
				return 0;
			}
			add_utf8(out, 0xfffd);
			cp = lo;
			if (cp < 0xd800 || cp > 0xdfff) {
				add_utf8(out, (uint32_t)cp);
				return 0;
			}
			if (cp <= 0xdbff) {
				add_utf8(out, 0xfffd);
				return 0;
			}
		} else {
			add_utf8(out, 0xfffd);
			return r->failed ? -1 : 0;
		}
	}
	if (cp >= 0xdc80 && cp <= 0xdcff)
		buf_addch(out, (int)(cp - 0xdc00));
	else if (cp >= 0xdc00 && cp <= 0xdfff)
		add_utf8(out, 0xfffd);
	else
		add_utf8(out, (uint32_t)cp);
	return 0;
}

/*
 * A string, the opening quote already read, decoded into out.  Bytes that
 * are not UTF-8 are kept as they are: profiles written before the writer
 * escaped them hold raw bytes, and must stay readable.
 */
static int read_string(struct jr *r, struct buf *out)
{
	buf_reset(out);
	for (;;) {
		size_t start = r->pos;
		unsigned char c = 0;

		while (r->pos < r->end) {
			c = (unsigned char)r->chunk[r->pos];
			if (c == '"' || c == '\\' || c < 0x20)
				break;
			r->pos++;
		}
		buf_add(out, r->chunk + start, r->pos - start);
		if (out->len > JR_MAX_STRING)
			return jr_fail(r, "a string longer than %zu MiB", JR_MAX_STRING >> 20);
		if (r->pos == r->end) {
			if (!fill(r))
				return unexpected(r, -1, "the end of a string");
			continue;
		}
		r->pos++;
		if (c == '"')
			return 0;
		if (c < 0x20) {
			r->pos--;
			return jr_fail(r, "invalid JSON: control byte 0x%02x inside a string", c);
		}
		switch (next_byte(r)) {
		case '"': buf_addch(out, '"'); break;
		case '\\': buf_addch(out, '\\'); break;
		case '/': buf_addch(out, '/'); break;
		case 'b': buf_addch(out, '\b'); break;
		case 'f': buf_addch(out, '\f'); break;
		case 'n': buf_addch(out, '\n'); break;
		case 'r': buf_addch(out, '\r'); break;
		case 't': buf_addch(out, '\t'); break;
		case 'u':
			if (read_unicode_escape(r, out) < 0)
				return -1;
			break;
		default:
			if (r->pos)
				r->pos--;
			return jr_fail(r, "invalid JSON: unknown escape in a string");
		}
	}
}

static bool is_number_char(int c)
{
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* Strict JSON number syntax over the collected characters. */
static bool number_syntax_ok(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (*s >= '0' && *s <= '9')
			s++;
	else
		return false;
	if (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (*s < '0' || *s > '9')
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return !*s;
}

/*
 * An integer that lies wholly in the chunk, the common case, without a
 * copy or strtoll; false (nothing consumed) for anything else.
 */
static bool fast_integer(struct jr *r)
{
	const char *p = r->chunk + r->pos, *end = r->chunk + r->end, *digits;
	bool neg = *p == '-';
	uint64_t v = 0;

	p += neg;
	digits = p;
	while (p < end && *p >= '0' && *p <= '9' && p - digits < 18)
		v = v * 10 + (uint64_t)(*p++ - '0');
	/* 18 digits always fit; longer numbers, fractions and the chunk's end take the slow path. */
	if (p == digits || p == end || is_number_char((unsigned char)*p) || (*digits == '0' && p - digits > 1))
		return false;
	r->i = neg ? -(int64_t)v : (int64_t)v;
	r->d = (double)r->i;
	r->pos = (size_t)(p - r->chunk);
	return true;
}

static enum jr_type read_number(struct jr *r)
{
	char text[JR_MAX_NUMBER + 1];
	size_t n = 0;
	bool integral = true;
	char *end;

	if (fast_integer(r))
		return r->type = JR_INT;
	while (fill(r) && is_number_char((unsigned char)r->chunk[r->pos])) {
		char c = r->chunk[r->pos];

		if (n == JR_MAX_NUMBER) {
			jr_fail(r, "a number longer than %d characters", JR_MAX_NUMBER);
			return JR_ERROR;
		}
		if (c == '.' || c == 'e' || c == 'E')
			integral = false;
		text[n++] = c;
		r->pos++;
	}
	if (r->failed)
		return JR_ERROR;
	text[n] = '\0';
	if (!number_syntax_ok(text)) {
		fail_back(r, n, "invalid JSON: bad number '%s'", text);
		return JR_ERROR;
	}
	if (integral) {
		errno = 0;
		r->i = strtoll(text, &end, 10);
		if (!errno) {
			r->d = (double)r->i;
			return r->type = JR_INT;
		}
	}
	r->d = strtod(text, &end);
	if (!isfinite(r->d)) {
		fail_back(r, n, "number '%s' out of range", text);
		return JR_ERROR;
	}
	return r->type = JR_REAL;
}

static enum jr_type read_literal(struct jr *r, const char *word, enum jr_type type)
{
	const char *w;

	for (w = word; *w; w++)
		if (next_byte(r) != *w) {
			jr_fail(r, "invalid JSON: expected '%s'", word);
			return JR_ERROR;
		}
	if (fill(r) &&
	    (is_number_char((unsigned char)r->chunk[r->pos]) || (r->chunk[r->pos] >= 'a' && r->chunk[r->pos] <= 'z'))) {
		jr_fail(r, "invalid JSON: expected '%s'", word);
		return JR_ERROR;
	}
	return r->type = type;
}

static enum jr_type open_container(struct jr *r, unsigned char kind, enum jr_type type)
{
	if (r->depth == JR_MAX_DEPTH) {
		jr_fail(r, "arrays and objects nested deeper than %d", JR_MAX_DEPTH);
		return JR_ERROR;
	}
	r->pos++;
	r->stack[r->depth++] = kind;
	return r->type = type;
}

/* The separator before the next member of the innermost container, or its end. */
static int next_member(struct jr *r, unsigned char kind, char close)
{
	unsigned char *top;
	int c;

	if (r->failed)
		return -1;
	if (!r->depth || (r->stack[r->depth - 1] | 0x20) != kind)
		BUG("jr: member of a container that is not open");
	top = &r->stack[r->depth - 1];
	c = peek_token(r);
	if (c == close) {
		r->pos++;
		r->depth--;
		return 0;
	}
	if (*top == kind) {
		if (c != ',')
			return unexpected(r, c, kind == 'a' ? "',' or ']'" : "',' or '}'");
		r->pos++;
	}
	*top = kind;
	return 1;
}

void jr_init(struct jr *r, jr_read_fn *read, void *ctx)
{
	memset(r, 0, sizeof(*r));
	buf_init(&r->str, 0);
	buf_init(&r->key, 0);
	buf_init(&r->err, 0);
	r->read = read;
	r->ctx = ctx;
	r->chunk = xmalloc(CHUNK);
	r->line = 1;
}

void jr_init_mem(struct jr *r, const char *text, size_t len)
{
	jr_init(r, NULL, NULL);
	free(r->chunk);
	r->chunk = (char *)text;
	r->end = len;
	r->eof = true;
}

void jr_release(struct jr *r)
{
	if (r->read)
		free(r->chunk);
	r->chunk = NULL;
	buf_release(&r->str);
	buf_release(&r->key);
	buf_release(&r->err);
}

int jr_fail(struct jr *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(r, 0, fmt, ap);
	va_end(ap);
	return -1;
}

enum jr_type jr_value(struct jr *r)
{
	int c;

	if (r->failed)
		return r->type = JR_ERROR;
	c = peek_token(r);
	switch (c) {
	case '{': return open_container(r, 'O', JR_OBJ);
	case '[': return open_container(r, 'A', JR_ARR);
	case '"': r->pos++; return r->type = read_string(r, &r->str) < 0 ? JR_ERROR : JR_STR;
	case 't': return read_literal(r, "true", JR_TRUE);
	case 'f': return read_literal(r, "false", JR_FALSE);
	case 'n': return read_literal(r, "null", JR_NULL);
	default:
		if (c == '-' || (c >= '0' && c <= '9'))
			return read_number(r);
		unexpected(r, c, "a value");
		return r->type = JR_ERROR;
	}
}

int jr_obj_next(struct jr *r)
{
	int more = next_member(r, 'o', '}'), c;

	if (more <= 0)
		return more;
	c = peek_token(r);
	if (c != '"')
		return unexpected(r, c, "a key");
	r->pos++;
	if (read_string(r, &r->key) < 0)
		return -1;
	c = peek_token(r);
	if (c != ':')
		return unexpected(r, c, "':'");
	r->pos++;
	return 1;
}

int jr_arr_next(struct jr *r)
{
	return next_member(r, 'a', ']');
}

int jr_skip(struct jr *r)
{
	size_t base;

	if (r->failed)
		return -1;
	if (r->type != JR_ARR && r->type != JR_OBJ)
		return 0;
	base = r->depth - 1;
	while (r->depth > base) {
		int more = (r->stack[r->depth - 1] | 0x20) == 'o' ? jr_obj_next(r) : jr_arr_next(r);

		if (more < 0)
			return -1;
		if (more && jr_value(r) == JR_ERROR)
			return -1;
	}
	r->type = JR_NULL;
	return 0;
}

int jr_copy_value(struct jr *r, struct buf *out, size_t max, bool *cut)
{
	int ret;

	if (peek_token(r) < 0)
		return unexpected(r, -1, "a value");
	r->capture = out;
	r->capture_from = r->pos;
	r->capture_max = out->len + max;
	r->capture_cut = false;
	ret = jr_value(r) == JR_ERROR ? -1 : jr_skip(r);
	if (ret == 0)
		capture_span(r, r->capture_from, r->pos);
	*cut = r->capture_cut;
	r->capture = NULL;
	return ret;
}

int jr_finish(struct jr *r)
{
	int c;

	if (r->failed)
		return -1;
	c = peek_token(r);
	if (c >= 0)
		return unexpected(r, c, "the end of the document");
	return r->failed ? -1 : 0;
}
