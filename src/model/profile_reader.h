/*
 * The reader of the profile's JSON, as its parts use it (profile_read.c: the
 * document and its runs; profile_read_proc.c: a process, its imports and its
 * timeline): the reader's state, the table-driven scalar fields and the
 * checked reads every member goes through (profile_reader.c).
 */
#ifndef COLDSTART_PROFILE_READER_H
#define COLDSTART_PROFILE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json_reader.h"
#include "model/profile.h"

#define MAX_US PROFILE_MAX_US
#define MAX_NS PROFILE_MAX_NS
#define MAX_KB PROFILE_MAX_KB
#define MAX_BYTES PROFILE_MAX_BYTES
#define MAX_COUNT PROFILE_MAX_COUNT

struct reader {
	struct jr jr;
	struct profile *p;
	uint64_t limit, used; /* bytes the model may take, and has taken */
	int64_t version; /* 0 until read */
	bool is_profile, has_runs;
	bool over_limit; /* charge failed */
	int64_t escaped; /* the writer's "escaped_bytes" */
	struct buf native;
	bool native_cut;
	/* Where the reader is, for messages; SIZE_MAX outside. */
	size_t run, proc, node;
	const char *item; /* "timeline node", "timeline sample": item_no; NULL outside */
	size_t item_no;
	const struct zfile *zf; /* the source when reading a file */
};

/*
 * Scalar members of an object, described once: a key, where its value goes
 * and the range it must lie in.
 */
enum field_type { F_I64, F_INT, F_LONG, F_BOOL, F_STR, F_REAL };

struct field {
	const char *key;
	enum field_type type;
	size_t off;
	int64_t lo, hi;
};

#define I64(s, k, lo, hi)                                                                                              \
	{                                                                                                              \
#k, F_I64, offsetof(struct s, k), lo, hi                                                               \
	}
#define READ_FIELD(rd, table, base) rd_field(rd, table, ARRAY_SIZE(table), base)

/* "run 0, process 2, node 7: " before a message about a field. */
void rd_where(const struct reader *rd, struct buf *out);
/* Fails the read: key's value is out of lo..hi; -1. */
int rd_out_of_range(struct reader *rd, const char *key, const char *value, int64_t lo, int64_t hi);
/* Counts bytes the model takes, failing past the limit; 0 or -1. */
int rd_charge(struct reader *rd, uint64_t bytes);
/*
 * The number of a field, in lo..hi: non-numbers give dflt (readers have
 * always taken a missing or null figure as unknown), a number out of the
 * range fails.  Reals are truncated toward zero.
 */
int rd_int(struct reader *rd, const char *key, int64_t lo, int64_t hi, int64_t dflt, int64_t *out);
/* A string value as a new C string (NUL bytes become '?'); NULL for non-strings.  0 or -1. */
int rd_str(struct reader *rd, char **out);
/* The string value just read, charged to the model; NULL when it is not a string or over the limit. */
struct buf *rd_pool_str(struct reader *rd);
/* A string value interned into pr's pool at *off. */
int rd_intern_str(struct reader *rd, struct proc *pr, uint32_t *off);
/*
 * Reads the value of the member just opened into base when its key is one
 * of fields: returns 1, 0 when the key is not there (nothing read), -1.
 */
int rd_field(struct reader *rd, const struct field *fields, size_t nr, void *base);
/* Expects an array and reads its elements with each(); anything else is skipped. */
int rd_array(struct reader *rd, int (*each)(struct reader *rd, void *ctx, size_t i), void *ctx);

#endif
