/*
 * A streaming JSON reader: pulls values one at a time from a byte source
 * (a file through zlib, a buffer), so a reader can build its model as it
 * goes and never holds the document, nor a tree of it, in memory.
 */
#ifndef COLDSTART_JSON_READER_H
#define COLDSTART_JSON_READER_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

/*
 * Limits of the reader; documents past them are refused with an error
 * naming the limit (docs/profile-format.md, "Limits").
 */
#define JR_MAX_DEPTH 256 /* nesting of arrays and objects */
#define JR_MAX_STRING ((size_t)16 << 20) /* bytes of one decoded string or key */
#define JR_MAX_NUMBER 512 /* characters of one number */

enum jr_type {
	JR_ERROR = -1,
	JR_NULL,
	JR_FALSE,
	JR_TRUE,
	JR_INT, /* an integer that fits int64_t: i (and d) */
	JR_REAL, /* any other number: d (finite; integers beyond int64_t land here) */
	JR_STR, /* str: the decoded bytes, len in str.len (may hold NUL bytes) */
	JR_ARR, /* the opening bracket was read: iterate with jr_arr_next */
	JR_OBJ, /* the opening brace was read: iterate with jr_obj_next */
};

/*
 * The source hands out up to len bytes: returns how many, 0 at the end, or
 * -1 with its reason in err.
 */
typedef long jr_read_fn(void *ctx, char *buf, size_t len, struct buf *err);

struct jr {
	/* The value read last by jr_value. */
	enum jr_type type;
	int64_t i;
	double d;
	struct buf str;
	/* The key read last by jr_obj_next. */
	struct buf key;

	/* Private. */
	jr_read_fn *read;
	void *ctx;
	char *chunk;
	size_t pos, end; /* unread bytes are chunk[pos..end) */
	bool eof;
	uint64_t offset; /* of chunk[0] in the document */
	long line;
	uint64_t line_start; /* document offset of the current line's first byte */
	unsigned char stack[JR_MAX_DEPTH]; /* per open container: 'a' / 'o', upper case before its first member */
	size_t depth;
	struct buf *capture; /* while set, consumed bytes are appended to it */
	size_t capture_from, capture_max;
	bool capture_cut;
	bool failed;
	struct buf err;
};

/* Reads from a source; release with jr_release. */
void jr_init(struct jr *r, jr_read_fn *read, void *ctx);
/* Reads the len bytes at text (borrowed: they must outlive r). */
void jr_init_mem(struct jr *r, const char *text, size_t len);
void jr_release(struct jr *r);

/*
 * Reads the next value and returns its type (also in r->type); JR_ERROR
 * with the reason in r->err.  After JR_ARR or JR_OBJ the members follow.
 */
enum jr_type jr_value(struct jr *r);
/*
 * Inside an object: 1 when a member follows (its key in r->key; read or
 * skip its value next), 0 at the closing brace, -1 on error.
 */
int jr_obj_next(struct jr *r);
/* Inside an array: 1 when an element follows, 0 at the closing bracket, -1 on error. */
int jr_arr_next(struct jr *r);
/*
 * Skips the rest of the container jr_value just opened (nothing when the
 * last value was a scalar), checking its syntax.  0 or -1.
 */
int jr_skip(struct jr *r);
/*
 * Reads the next value (a whole container included) and appends its text
 * to out, at most max bytes: *cut tells when it was longer.  0 or -1.
 */
int jr_copy_value(struct jr *r, struct buf *out, size_t max, bool *cut);
/* After the top-level value: only white space may follow.  0 or -1. */
int jr_finish(struct jr *r);
/* Fails the reader with a message naming the current position; returns -1. */
int jr_fail(struct jr *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
