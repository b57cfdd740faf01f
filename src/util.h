/*
 * Small shared helpers: allocation that never fails, a growable string buffer,
 * an argv/env vector, and the one error-reporting helper commands use.
 */
#ifndef COLDSTART_UTIL_H
#define COLDSTART_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* A figure that was not measured: any int64_t measurement (profile.h, samples.h). */
#define UNKNOWN (-1)

#define BUG(...) bug_fl(__FILE__, __LINE__, __VA_ARGS__)
_Noreturn void bug_fl(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Allocation: these die with a message on exhaustion and never return NULL. */
void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *ptr, size_t size);
/*
 * realloc for arrays that may grow to hundreds of megabytes (a profile's
 * nodes and names): from BIG_MIN bytes on they live in a mapping of their
 * own, grown by mremap without copying and marked for transparent huge pages,
 * which roughly halves the cost of faulting them in.  Sizes are the
 * allocation's bytes (0 for NULL); free with big_free and the same size.
 */
#define BIG_MIN ((size_t)4 << 20)
void *big_realloc(void *ptr, size_t old_size, size_t new_size);
void big_free(void *ptr, size_t size);
char *xstrdup(const char *s);
/* FNV-1a, 64 bits: the hash of the tool's hash tables and cache keys. */
uint64_t hash_bytes(const void *data, size_t len);
static inline uint64_t hash_str(const char *s)
{
	return hash_bytes(s, strlen(s));
}
char *xstrndup(const char *s, size_t n);
/* Multiplies with an overflow check (dies on overflow). */
size_t st_mult(size_t a, size_t b);

/*
 * Grows x (an array of nr used and alloc allocated elements) so that it can
 * hold at least n elements.  Growth is geometric.
 */
#define ALLOC_GROW(x, n, alloc)                                                                                        \
	do {                                                                                                           \
		if ((n) > (alloc)) {                                                                                   \
			size_t ag_new_ = (alloc) < 16 ? 16 : (alloc)*3 / 2;                                            \
			if (ag_new_ < (n))                                                                             \
				ag_new_ = (n);                                                                         \
			(x) = xrealloc((x), st_mult(sizeof(*(x)), ag_new_));                                           \
			(alloc) = ag_new_;                                                                             \
		}                                                                                                      \
	} while (0)

/*
 * A growable, always NUL-terminated byte buffer.  buf is never NULL: an empty
 * buffer points at a shared empty string until something is added.
 */
struct buf {
	char *buf;
	size_t len;
	size_t alloc;
};

extern char buf_empty[];
#define BUF_INIT                                                                                                       \
	{                                                                                                              \
		buf_empty, 0, 0                                                                                        \
	}

void buf_init(struct buf *sb, size_t hint);
void buf_release(struct buf *sb);
/* Hands the string to the caller (who frees it) and leaves sb empty. */
char *buf_detach(struct buf *sb, size_t *len);
void buf_grow(struct buf *sb, size_t extra);
/* Bytes that can be added without growing (the terminating NUL has its own room). */
static inline size_t buf_avail(const struct buf *sb)
{
	return sb->alloc ? sb->alloc - sb->len - 1 : 0;
}
void buf_setlen(struct buf *sb, size_t len);
static inline void buf_reset(struct buf *sb)
{
	buf_setlen(sb, 0);
}
void buf_add(struct buf *sb, const void *data, size_t len);
void buf_adds(struct buf *sb, const char *s);
void buf_addch(struct buf *sb, int c);
void buf_addf(struct buf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_vaddf(struct buf *sb, const char *fmt, va_list ap);
/*
 * The eight decimal digits of u < 100,000,000 as bytes 0-9, most significant
 * first in memory (little-endian): both 4-digit halves are split into pairs
 * and the pairs into digits in parallel, dividing by multiplication.
 */
static inline uint64_t eight_digits(uint32_t u)
{
	uint64_t x = (uint64_t)(u / 10000) | (uint64_t)(u % 10000) << 32;
	uint64_t hi = ((x * 5243) >> 19) & 0x0000007f0000007fULL; /* v / 100 for v < 10000 */

	x = hi | (x - hi * 100) << 16;
	hi = ((x * 103) >> 10) & 0x000f000f000f000fULL; /* v / 10 for v < 100 */
	return hi | (x - hi * 10) << 8;
}

/*
 * Writes v in decimal at q (no NUL) and returns the end.  q must have room
 * for 24 bytes: numbers below 10^8 are written as one 8-byte store.  Inline:
 * a million-node profile formats five million numbers.
 */
static inline char *put_i64(char *q, int64_t v)
{
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	char tmp[24];
	size_t k = sizeof(tmp);

	if (v < 0)
		*q++ = '-';
	if (u < 10) {
		*q = (char)('0' + u);
		return q + 1;
	}
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (u < 100000000) {
		uint64_t d = eight_digits((uint32_t)u);
		/* Leading zero digits are the low zero bytes; u >= 10 leaves at least two digits. */
		unsigned skip = (unsigned)__builtin_ctzll(d) / 8;

		d = (d + 0x3030303030303030ULL) >> (8 * skip);
		memcpy(q, &d, 8);
		return q + 8 - skip;
	}
#endif
	while (u) {
		tmp[--k] = (char)('0' + u % 10);
		u /= 10;
	}
	memcpy(q, tmp + k, sizeof(tmp) - k);
	return q + (sizeof(tmp) - k);
}

/* Appends the last non-empty line of text, trimmed: a program's error in one line. */
void buf_add_last_line(struct buf *sb, const char *text);
/* Appends a signed decimal integer (put_i64) without going through printf. */
void buf_add_i64(struct buf *sb, int64_t v);
/*
 * Length of the valid UTF-8 sequence at s (at most n bytes, n > 0), 0 when
 * the bytes there are not UTF-8 (overlong forms and surrogates included).
 */
size_t utf8_seq_len(const unsigned char *s, size_t n);
/*
 * Appends s as a JSON string literal, quotes included, that is always valid
 * UTF-8: a byte that is not part of a UTF-8 sequence (a Latin-1 path, say)
 * is written as the four characters \xHH, the way Python's backslashreplace
 * shows it.  Returns how many bytes were written that way.
 */
size_t buf_add_json_str(struct buf *sb, const char *s, size_t len);
/*
 * Reads a whole file (gzip or plain); -1 with errno set on failure: the
 * read's own (EISDIR for a directory), EIO for gzip data that is broken.
 */
int buf_read_file(struct buf *sb, const char *path);

/*
 * A file read through zlib (gzip or plain; "-" is stdin) that fails once
 * more than limit bytes of text came out of it: readers of user files stop
 * there, so a small .gz that inflates to gigabytes costs nothing.
 */
struct gzFile_s;
struct zfile {
	struct gzFile_s *gz;
	uint64_t limit, total;
	int over_limit; /* zfile_read failed at the limit */
};
/* Opens path; -1 with the reason (strerror) in err. */
int zfile_open(struct zfile *zf, const char *path, uint64_t limit, struct buf *err);
/*
 * Up to len bytes of text: returns how many, 0 at the end, -1 with the
 * reason in err (a read error, a damaged gzip stream, the limit).
 * The signature is the json_reader's source.
 */
long zfile_read(void *zf, char *buf, size_t len, struct buf *err);
void zfile_close(struct zfile *zf);
/*
 * After gzread on gz returned n (-1, or 0 at the end): 1 with the reason in
 * err when it failed or the gzip data ended before its end ("truncated gzip
 * data", "corrupt gzip data (incorrect data check)", a read error's
 * strerror), 0 at a clean end.
 */
int gz_failure(struct gzFile_s *gz, int n, struct buf *err);

/*
 * Saturating int64 arithmetic, for figures that come from files: a crafted
 * profile must not wrap a total to zero (and through a budget gate) or
 * make the sanitiser build abort.
 */
static inline int64_t i64_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return a < 0 ? INT64_MIN : INT64_MAX;
	return r;
}

static inline int64_t i64_sub(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return b > 0 ? INT64_MIN : INT64_MAX;
	return r;
}

static inline int64_t i64_mul(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_mul_overflow(a, b, &r))
		return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
	return r;
}

/* -a, and INT64_MAX for INT64_MIN. */
static inline int64_t i64_neg(int64_t a)
{
	return a == INT64_MIN ? INT64_MAX : -a;
}

static inline int64_t i64_abs(int64_t a)
{
	return a < 0 ? i64_neg(a) : a;
}

/*
 * a * num / den for 0 <= num <= den, den > 0 (a share of a), without the
 * overflow of a * num; the result is between 0 and a.
 */
static inline int64_t i64_share(int64_t a, int64_t num, int64_t den)
{
#ifdef __SIZEOF_INT128__
	return (int64_t)((__int128)a * num / den);
#else
	return (int64_t)((long double)a * num / den);
#endif
}

/* (a + b) / 2 without the overflow of a + b. */
static inline int64_t i64_mid(int64_t a, int64_t b)
{
#ifdef __SIZEOF_INT128__
	return (int64_t)(((__int128)a + b) / 2);
#else
	return a / 2 + b / 2 + (a % 2 + b % 2) / 2;
#endif
}

/* A double as int64_t, truncated toward zero, clamped, NaN as 0. */
static inline int64_t i64_from_double(double d)
{
	if (d != d)
		return 0;
	if (d >= 9223372036854775807.0)
		return INT64_MAX;
	if (d <= -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)d;
}

/*
 * A NULL-terminated vector of owned strings, for argv and envp of child
 * processes.  v is never NULL.
 */
struct strvec {
	const char **v;
	size_t nr;
	size_t alloc;
};

extern const char *strvec_empty[];
#define STRVEC_INIT                                                                                                    \
	{                                                                                                              \
		strvec_empty, 0, 0                                                                                     \
	}

void strvec_init(struct strvec *sv);
void strvec_push(struct strvec *sv, const char *s);
void strvec_pushf(struct strvec *sv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strvec_pushv(struct strvec *sv, const char *const *v);
void strvec_clear(struct strvec *sv);
/*
 * For environment vectors ("NAME=value" entries): setenv drops every entry
 * for name and appends NAME=value, unsetenv only drops them; getenv returns
 * the value or NULL.
 */
void strvec_setenv(struct strvec *env, const char *name, const char *value);
void strvec_unsetenv(struct strvec *env, const char *name);
const char *strvec_getenv(const struct strvec *env, const char *name);

/*
 * Reporting for commands: "coldstart: error: ..." on stderr.  error() returns
 * -1 so library code can `return error(...)`.
 */
int error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int error_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Monotonic clock in nanoseconds (CLOCK_MONOTONIC, the tracer's clock too). */
int64_t now_ns(void);

int starts_with(const char *s, const char *prefix);
int ends_with(const char *s, const char *suffix);
/* The program name as a path: PATH is searched for a name without a slash; NULL when not found.  The caller frees it. */
char *find_program(const char *name);

/*
 * Parses "128m", "1g", "512k", "100" (bytes) into bytes; binary units.
 * Returns -1 on bad input.
 */
int parse_size(const char *s, int64_t *out);
/* A whole decimal int64 (sign allowed, nothing after it); 0, or -1 when s is not one. */
int parse_i64(const char *s, int64_t *out);
/* Parses "300ms", "1.5s", "250us", "20" (ms) into microseconds. */
int parse_duration_us(const char *s, int64_t *out);
/* Formats microseconds for humans: "812 us", "12.3 ms", "1.25 s". */
void buf_add_duration(struct buf *sb, int64_t us);
/* Formats bytes for humans: "12.0 MiB". */
void buf_add_bytes(struct buf *sb, int64_t bytes);

/*
 * For "did you mean": how far name is from candidate (edits, a swap of two
 * neighbours counting as one), or 0 when candidate begins with name (a cut
 * short option); SIZE_MAX when too far to suggest (more than a third of the
 * longer one's letters, at least one).
 */
size_t name_distance(const char *name, const char *candidate);

#endif
