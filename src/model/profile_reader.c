/*
 * The checked reads every member of the profile's JSON goes through (see
 * profile_reader.h): numbers held to their field's range, strings charged
 * to the model's memory limit, arrays and tables of scalar fields.
 */
#include "model/profile_reader.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "run 0, process 2, node 7: " before a message about a field. */
void rd_where(const struct reader *rd, struct buf *out)
{
	if (rd->run != SIZE_MAX)
		buf_addf(out, "run %zu, ", rd->run);
	if (rd->proc != SIZE_MAX)
		buf_addf(out, "process %zu, ", rd->proc);
	if (rd->node != SIZE_MAX)
		buf_addf(out, "node %zu, ", rd->node);
	if (rd->item)
		buf_addf(out, "%s %zu, ", rd->item, rd->item_no);
	if (out->len >= 2)
		buf_setlen(out, out->len - 2);
	if (out->len)
		buf_adds(out, ": ");
}

int rd_out_of_range(struct reader *rd, const char *key, const char *value, int64_t lo, int64_t hi)
{
	struct buf where = BUF_INIT;

	rd_where(rd, &where);
	jr_fail(&rd->jr, "%s'%s' %s is out of range (%lld to %lld)", where.buf, key, value, (long long)lo,
		(long long)hi);
	buf_release(&where);
	return -1;
}

/* Counts bytes the model takes, failing past the limit. */
int rd_charge(struct reader *rd, uint64_t bytes)
{
	struct buf size = BUF_INIT;

	if (bytes <= rd->limit - rd->used) {
		rd->used += bytes;
		return 0;
	}
	buf_add_bytes(&size, rd->limit > INT64_MAX ? INT64_MAX : (int64_t)rd->limit);
	rd->over_limit = true;
	jr_fail(&rd->jr, "the profile needs more than %s of memory, the limit", size.buf);
	buf_release(&size);
	return -1;
}

/*
 * The number of a field, in lo..hi: non-numbers give dflt (readers have
 * always taken a missing or null figure as unknown), a number out of the
 * range fails.  Reals are truncated toward zero.
 */
int rd_int(struct reader *rd, const char *key, int64_t lo, int64_t hi, int64_t dflt, int64_t *out)
{
	char text[64];

	switch (jr_value(&rd->jr)) {
	case JR_ERROR: return -1;
	case JR_INT:
		if (rd->jr.i < lo || rd->jr.i > hi) {
			snprintf(text, sizeof(text), "%lld", (long long)rd->jr.i);
			return rd_out_of_range(rd, key, text, lo, hi);
		}
		*out = rd->jr.i;
		return 0;
	case JR_REAL:
		if (!(rd->jr.d >= (double)lo && rd->jr.d <= (double)hi)) {
			snprintf(text, sizeof(text), "%g", rd->jr.d);
			return rd_out_of_range(rd, key, text, lo, hi);
		}
		*out = i64_from_double(rd->jr.d);
		return 0;
	default: *out = dflt; return jr_skip(&rd->jr);
	}
}

/* A string value as a new C string (NUL bytes, which JSON may spell, become '?'); NULL for non-strings. */
int rd_str(struct reader *rd, char **out)
{
	enum jr_type t = jr_value(&rd->jr);
	size_t k;

	if (t == JR_ERROR)
		return -1;
	if (t != JR_STR)
		return jr_skip(&rd->jr);
	for (k = 0; k < rd->jr.str.len; k++)
		if (!rd->jr.str.buf[k])
			rd->jr.str.buf[k] = '?';
	if (rd_charge(rd, rd->jr.str.len + 1) < 0)
		return -1;
	free(*out);
	*out = xstrndup(rd->jr.str.buf, rd->jr.str.len);
	return 0;
}

/* The string just read, charged, its NUL bytes made '?' for a NUL-separated pool; NULL past the limit. */
struct buf *rd_pool_str(struct reader *rd)
{
	struct buf *s = &rd->jr.str;
	size_t k;

	if (rd_charge(rd, s->len + 1) < 0)
		return NULL;
	for (k = 0; k < s->len; k++)
		if (!s->buf[k])
			s->buf[k] = '?';
	return s;
}

/* The string just read, interned into pr's pool. */
int rd_intern_str(struct reader *rd, struct proc *pr, uint32_t *off)
{
	struct buf *s = rd_pool_str(rd);

	if (!s)
		return -1;
	*off = proc_intern(pr, s->buf, s->len);
	return 0;
}

/*
 * Reads the value of the member just opened into base when its key is one
 * of fields: returns 1, 0 when the key is not there (nothing read), -1.
 * A member that is not a number keeps the struct's default.
 */
int rd_field(struct reader *rd, const struct field *fields, size_t nr, void *base)
{
	const char *key = rd->jr.key.buf;
	char *at = base;
	size_t i;
	int64_t v;
	enum jr_type t;

	for (i = 0; i < nr && strcmp(fields[i].key, key); i++)
		;
	if (i == nr)
		return 0;
	at += fields[i].off;
	switch (fields[i].type) {
	case F_BOOL:
		t = jr_value(&rd->jr);
		if (t == JR_TRUE || t == JR_FALSE)
			*(bool *)at = t == JR_TRUE;
		return jr_skip(&rd->jr) < 0 ? -1 : 1;
	case F_STR: return rd_str(rd, (char **)at) < 0 ? -1 : 1;
	case F_REAL:
		t = jr_value(&rd->jr);
		if (t == JR_INT || t == JR_REAL) {
			if (!(rd->jr.d >= (double)fields[i].lo && rd->jr.d <= (double)fields[i].hi)) {
				char text[64];

				snprintf(text, sizeof(text), "%g", rd->jr.d);
				return rd_out_of_range(rd, key, text, fields[i].lo, fields[i].hi);
			}
			*(double *)at = rd->jr.d;
			return 1;
		}
		return jr_skip(&rd->jr) < 0 ? -1 : 1;
	default: break;
	}
	if (fields[i].type == F_I64)
		v = *(int64_t *)at;
	else if (fields[i].type == F_INT)
		v = *(int *)at;
	else
		v = *(long *)at;
	if (rd_int(rd, key, fields[i].lo, fields[i].hi, v, &v) < 0)
		return -1;
	if (fields[i].type == F_I64)
		*(int64_t *)at = v;
	else if (fields[i].type == F_INT)
		*(int *)at = (int)v;
	else
		*(long *)at = (long)v;
	return 1;
}

/* Expects an array and reads its elements with each(); anything else is skipped. */
int rd_array(struct reader *rd, int (*each)(struct reader *rd, void *ctx, size_t i), void *ctx)
{
	enum jr_type t = jr_value(&rd->jr);
	size_t i;
	int more;

	if (t == JR_ERROR)
		return -1;
	if (t != JR_ARR)
		return jr_skip(&rd->jr);
	for (i = 0; (more = jr_arr_next(&rd->jr)) > 0; i++)
		if (each(rd, ctx, i) < 0)
			return -1;
	return more;
}
