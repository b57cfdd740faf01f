/*
 * The grammar of one -X importtime line: the header, a row (also glued after
 * the target's own text), and the common row recognised in one pass with
 * word-wide scans.  Pure functions of the bytes they are given.
 */
#include "ingest/it_row.h"

#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define HEADER_REST " self [us] | cumulative | imported package"
#define HEADER_REST_LEN (sizeof(HEADER_REST) - 1)

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
static const char *parse_column(const char *p, const char *end, int64_t *val, bool *cached, bool *clamped,
				bool *negative)
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

int it_row_parse(const char *line, size_t len, struct it_row *r, const char **why)
{
	const char *end = line + len, *p, *q, *m;
	bool c1, c2, clamp1, clamp2, neg1, neg2;
	size_t spaces, i;

	memset(r, 0, sizeof(*r));
	if (len >= IT_MARKER_LEN && !memcmp(line, IT_MARKER, IT_MARKER_LEN))
		m = line;
	else if (!(m = memmem(line, len, IT_MARKER, IT_MARKER_LEN)))
		return 0;
	r->prefix_len = (size_t)(m - line);
	p = m + IT_MARKER_LEN;

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
	r->negative = neg1 || neg2;

	spaces = count_spaces(q, end);
	r->name = q + spaces;
	r->name_len = (size_t)(end - r->name);
	if (!r->name_len) {
		*why = "no module name";
		return -1;
	}
	i = (size_t)(skip_name(r->name, end) - r->name);
	if (i < r->name_len) {
		*why = r->name[i] == '|' ? "module name contains '|'" : "module name contains a control character";
		return -1;
	}
	/* "| " is the separator; the indentation follows it. */
	r->no_separator = spaces == 0;
	r->indent = spaces ? spaces - 1 : 0;
	r->depth = it_clamp_depth(r->indent / 2);
	return 1;
}

size_t it_row_lex(const char *p, const char *end, struct it_fast_row *rec)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const char *f = p + IT_MARKER_LEN, *name, *stop;
	size_t indent;

	/* The marker, both columns and a one-byte name with its newline. */
	if (end - p < (ptrdiff_t)IT_ROW_COLUMNS + 2)
		return 0;
	if (load64(p) != load64(IT_MARKER) || memcmp(p + 8, IT_MARKER + 8, IT_MARKER_LEN - 8))
		return 0;
	if (f[0] != ' ' || f[1] != ' ' || f[10] != ' ' || f[11] != '|' || f[12] != ' ' || f[13] != ' ' ||
	    f[14] != ' ' || f[23] != ' ' || f[24] != '|' || f[25] != ' ')
		return 0;
	rec->self_us = field8(f + 2);
	rec->cum_us = field8(f + 15);
	if (rec->self_us < 0 || rec->cum_us < 0)
		return 0;
	indent = count_spaces(p + IT_ROW_COLUMNS, end);
	if (indent % 2)
		return 0;
	name = p + IT_ROW_COLUMNS + indent;
	stop = skip_name(name, end);
	if (stop == name || stop == end)
		return 0;
	rec->name = name;
	rec->name_len = (uint32_t)(stop - name);
	rec->depth = it_clamp_depth(indent / 2);
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
