/*
 * The rows of the shared stderr, as the stream and the start-up windows both
 * add, order and claim them (see trace_rows.h).
 */
#include "ingest/trace_rows.h"

#include <stdlib.h>
#include <string.h>

size_t ts_pend_slot(const struct trace_stream *s, const char *name, size_t len)
{
	const struct iset *set = &s->pend_names;
	size_t k;

	for (k = hash_bytes(name, len) & (set->cap - 1); set->slot[k] >= 0; k = (k + 1) & (set->cap - 1)) {
		const char *t = pend_name(s, set->slot[k]);

		if (strlen(t) == len && !memcmp(t, name, len))
			break;
	}
	return k;
}

int32_t ts_pend_first(const struct trace_stream *s, const char *name, size_t len)
{
	return s->pend_names.cap ? s->pend_names.slot[ts_pend_slot(s, name, len)] : -1;
}

size_t ts_add_row(struct trace_stream *s, const struct row_text *rt)
{
	struct srow *r;

	ALLOC_GROW(s->rows, s->nr_rows + 1, s->alloc_rows);
	r = &s->rows[s->nr_rows];
	memset(r, 0, sizeof(*r));
	r->seq = s->seq;
	r->name = (uint32_t)s->names.len;
	buf_add(&s->names, rt->name, rt->name_len);
	buf_addch(&s->names, '\0');
	r->self_us = rt->self_us;
	r->cum_us = rt->cum_us;
	r->depth = rt->depth;
	r->cached = rt->cached;
	r->tnode = -1;
	return s->nr_rows++;
}

int ts_cmp_seq(const void *a, const void *b, void *arg)
{
	const struct trace_stream *s = arg;
	long x = s->rows[*(const size_t *)a].seq, y = s->rows[*(const size_t *)b].seq;

	return x < y ? -1 : x > y;
}

/* The line of the stream that brought the row of trace node node of lv, -1 for none. */
static long row_seq_of(const struct trace_stream *s, const struct live *lv, int32_t node)
{
	size_t i;

	for (i = 0; i < lv->rows.nr; i++)
		if (s->rows[lv->rows.v[i]].tnode == node)
			return s->rows[lv->rows.v[i]].seq;
	return -1;
}

/*
 * Whether finished import j of lv, which has no row, can have printed its row
 * at line seq: a thread prints its rows in the order its imports finish, so
 * after the row of the thread's import that finished before j and before the
 * row of the one that finished after it (imports without a row skipped).
 */
static bool late_row_in_order(const struct trace_stream *s, const struct live *lv, size_t j, long seq)
{
	const struct trace_done *done = lv->tp.done;
	long rs;
	size_t k;

	if (row_seq_of(s, lv, done[j].node) >= 0)
		return false;
	for (k = j; k-- > 0;)
		if (done[k].tid == done[j].tid && done[k].node >= 0 && (rs = row_seq_of(s, lv, done[k].node)) >= 0) {
			if (rs > seq)
				return false;
			break;
		}
	for (k = j + 1; k < lv->tp.nr_done; k++)
		if (done[k].tid == done[j].tid && done[k].node >= 0 && (rs = row_seq_of(s, lv, done[k].node)) >= 0)
			return rs > seq;
	return true;
}

/*
 * A row printed late for a traced import: of the same name, not shorter than
 * the trace's duration, arrived after the import's end was read (pend.seq)
 * and in its thread's order; of several, the closest duration.
 */
bool ts_claim_late_row(struct trace_stream *s, size_t row)
{
	struct srow *r = &s->rows[row];
	const char *name = row_name(s, row);
	int64_t best_diff = INT64_MAX;
	long best = -1;
	int32_t k;

	if (r->cached || r->tnode >= 0)
		return false;
	for (k = ts_pend_first(s, name, strlen(name)); k >= 0; k = s->pend[k].next) {
		const struct pend *e = &s->pend[k];
		const struct live *lv = &s->lives[e->live];
		const struct trace_done *d = &lv->tp.done[e->done];

		if (lv->bad || d->node < 0 || e->seq > r->seq || r->cum_us < d->cum_us - 2 ||
		    r->cum_us - d->cum_us >= best_diff || !late_row_in_order(s, lv, e->done, r->seq))
			continue;
		best_diff = r->cum_us - d->cum_us;
		best = k;
	}
	if (best < 0)
		return false;
	r->tnode = s->lives[s->pend[best].live].tp.done[s->pend[best].done].node;
	r->fork_ghost = false;
	rowlist_add(&s->lives[s->pend[best].live].rows, row);
	return true;
}
