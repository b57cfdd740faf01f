/*
 * The rows of the shared stderr (trace_stream.h) and the state they are kept
 * in, which the stream (trace_stream.c: lines, rows matched to traces, the
 * processes made of them) and the start-up windows (trace_window.c:
 * interpreters' start-up rows) both read and fill.  Only those two use it.
 */
#ifndef COLDSTART_TRACE_ROWS_H
#define COLDSTART_TRACE_ROWS_H

#include "ingest/trace_read.h"
#include "iset.h"

struct rowlist {
	size_t *v; /* indexes into trace_stream.rows */
	size_t nr, alloc;
};

/* A line of the stream recognised as an importtime row and taken out of it. */
struct srow {
	long seq; /* line number in the stream */
	uint32_t name; /* offset in the stream's name pool */
	int64_t self_us, cum_us;
	uint32_t depth;
	bool cached;
	bool fork_ghost; /* the end, in a forked child, of an import its parent started */
	int32_t tnode; /* the trace node it was printed for; -1: printed before the tracer */
	struct rowlist *kids; /* in a start-up window's tree: the rows it closed, NULL for none */
};

/* One trace file, read while its process writes it. */
struct live {
	char *file;
	int fd;
	struct buf pending; /* read but not yet a whole record */
	struct trace_proc tp;
	bool bad; /* not a trace: ignored */
	size_t indexed; /* tp.done entries already in the pending map */
	bool *matched; /* per tp.done entry: its row was seen */
	size_t alloc_matched;
	long window; /* the start-up rows of this interpreter, -1 */
	struct rowlist rows;
};

/*
 * The start-up rows of one interpreter: from importtime's header to its
 * "site" row.  pend[d] holds the rows at depth d that wait for their parent
 * (importtime prints a parent right after its last child, at depth d - 1):
 * what a new row must fit to belong here.
 */
struct window {
	long open_seq;
	bool closed;
	long live; /* its trace, -1 (none yet, or an interpreter without a tracer) */
	struct rowlist rows;
	struct rowlist *pend;
	size_t nr_pend_depths;
	long last_depth; /* of its last row, -1 */
	bool crowded; /* another window was open at the same time */
	bool dropped; /* crowded, and its rows make no consistent tree with its trace's: not used */
	size_t cursor; /* where its rows have reached in the reference start-up */
};

/* A finished import of some trace, waiting for its row; chained per name, in the order they came. */
struct pend {
	uint32_t live;
	uint32_t done;
	int32_t next; /* the next entry of the same name, -1 */
	int32_t last; /* in the first entry of a name: the last entry of that name */
	long seq; /* the stream's line when the import's end was read: its row comes at or after it */
};

struct trace_stream {
	const char *dir;
	/*
	 * The rows of the first start-up that no other interpreter's overlapped:
	 * interpreters of the same kind print the same rows in the same order,
	 * so where one has got to says which row it prints next.
	 */
	struct rowlist ref;
	bool have_ref;
	struct live *lives;
	size_t nr_lives, alloc_lives;
	struct window *wins;
	size_t nr_wins, alloc_wins;
	struct srow *rows;
	size_t nr_rows, alloc_rows;
	struct buf names; /* NUL-separated row names; offset 0 is "" */
	struct buf line; /* the line being assembled */
	long seq;
	bool refreshed; /* the traces were read after the chunk being fed was read */
	struct pend *pend;
	size_t nr_pend, alloc_pend;
	struct iset pend_names; /* the first pend entry of each name */
	long last_live; /* where the last row went: cached rows follow it */
	long untraced; /* the window of the last interpreter found to have no trace, -1 */
	long stopped; /* the last live whose tracer stopped recording (R): later unmatched rows are its own, -1 */
	unsigned long stamp; /* for per-call marks in match */
	unsigned long *seen; /* per live */
};

/* What a row-like text says; name points into the text. */
struct row_text {
	bool header, cached;
	int64_t self_us, cum_us;
	uint32_t depth;
	const char *name;
	size_t name_len;
};

static inline void rowlist_add(struct rowlist *l, size_t row)
{
	ALLOC_GROW(l->v, l->nr + 1, l->alloc);
	l->v[l->nr++] = row;
}

static inline const char *row_name(const struct trace_stream *s, size_t row)
{
	return s->names.buf + s->rows[row].name;
}

/* The name of the import pend entry k waits for. */
static inline const char *pend_name(const struct trace_stream *s, int32_t k)
{
	const struct trace_proc *tp = &s->lives[s->pend[k].live].tp;

	return proc_str(&tp->proc, tp->done[s->pend[k].done].name);
}

/*
 * The slot of s->pend_names that holds the first pend entry named name (len
 * bytes), or the empty slot where it would go; the set must have room.
 */
size_t ts_pend_slot(const struct trace_stream *s, const char *name, size_t len);
/* The first pend entry named name (len bytes), -1 for none. */
int32_t ts_pend_first(const struct trace_stream *s, const char *name, size_t len);

/* A new row taken out of the stream, its index; rows by stream order (qsort_r, arg s). */
size_t ts_add_row(struct trace_stream *s, const struct row_text *rt);
int ts_cmp_seq(const void *a, const void *b, void *arg);
/*
 * After the stream: a row a start-up window held that its interpreter cannot
 * have printed goes to the traced import it is the late row of, if one fits
 * (its process's rows then hold it); false if none.
 */
bool ts_claim_late_row(struct trace_stream *s, size_t row);

#endif
