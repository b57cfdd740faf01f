/*
 * The shared stderr of a traced target, attributed line by line: rows to the
 * process whose trace recorded the end of that import just before, start-up
 * rows to the interpreter whose importtime header opened them, everything
 * else straight through (trace_stream.h).
 */
#include "trace_stream.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "importtime.h"
#include "trace_merge.h"
#include "trace_read.h"

#define ROW_MARK "import time:"
#define READ_CHUNK 65536

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

struct rowlist {
	size_t *v; /* indexes into trace_stream.rows */
	size_t nr, alloc;
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

/* A finished import of some trace, waiting for its row; chained per name hash. */
struct pend {
	uint32_t live;
	uint32_t done;
	int32_t next;
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
	int32_t *heads, *tails;
	size_t cap;
	long last_live; /* where the last row went: cached rows follow it */
	long untraced; /* the window of the last interpreter found to have no trace, -1 */
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

static void rowlist_add(struct rowlist *l, size_t row)
{
	ALLOC_GROW(l->v, l->nr + 1, l->alloc);
	l->v[l->nr++] = row;
}

static const char *row_name(const struct trace_stream *s, size_t row)
{
	return s->names.buf + s->rows[row].name;
}

/* "  123" or "cached" up to the next '|'; returns the text after the '|', or NULL. */
static const char *lex_column(const char *p, const char *end, int64_t *v, bool *cached)
{
	bool neg = false;
	int64_t n = 0;
	int digits = 0;

	while (p < end && *p == ' ')
		p++;
	if (end - p >= 6 && !memcmp(p, "cached", 6)) {
		*cached = true;
		p += 6;
	} else {
		if (p < end && *p == '-') {
			neg = true;
			p++;
		}
		while (p < end && *p >= '0' && *p <= '9' && digits < 18) {
			n = n * 10 + (*p++ - '0');
			digits++;
		}
		if (!digits)
			return NULL;
		*v = neg ? -n : n;
	}
	while (p < end && *p == ' ')
		p++;
	return p < end && *p == '|' ? p + 1 : NULL;
}

/*
 * Whether text (from "import time:" to the end of the line) is importtime's
 * header or one of its rows: "import time: %9ld | %10ld | <2*depth spaces>name".
 */
static bool lex_row(const char *text, const char *end, struct row_text *rt)
{
	static const char header[] = "self [us] | cumulative | imported package";
	const char *p = text + strlen(ROW_MARK), *q;
	bool cached = false;

	memset(rt, 0, sizeof(*rt));
	while (p < end && *p == ' ')
		p++;
	if ((size_t)(end - p) >= strlen(header) && !memcmp(p, header, strlen(header))) {
		q = p + strlen(header);
		while (q < end && (*q == ' ' || *q == '\r'))
			q++;
		rt->header = q == end;
		return rt->header;
	}
	p = lex_column(p, end, &rt->self_us, &cached);
	if (!p)
		return false;
	p = lex_column(p, end, &rt->cum_us, &cached);
	if (!p || p >= end || *p != ' ')
		return false;
	p++;
	for (q = p; q < end && *q == ' '; q++)
		;
	rt->depth = (uint32_t)((q - p) / 2);
	rt->cached = cached;
	while (end > q && (end[-1] == '\r' || end[-1] == ' '))
		end--;
	if (q == end || memchr(q, ' ', (size_t)(end - q)))
		return false;
	rt->name = q;
	rt->name_len = (size_t)(end - q);
	return true;
}

static uint64_t name_hash(const char *name, size_t len)
{
	return hash_bytes(name, len);
}

static void pend_link(struct trace_stream *s, int32_t k)
{
	const struct pend *e = &s->pend[k];
	const struct trace_proc *tp = &s->lives[e->live].tp;
	const char *nm = proc_str(&tp->proc, tp->done[e->done].name);
	size_t h = (size_t)name_hash(nm, strlen(nm)) & (s->cap - 1);

	s->pend[k].next = -1;
	if (s->tails[h] >= 0)
		s->pend[s->tails[h]].next = k;
	else
		s->heads[h] = k;
	s->tails[h] = k;
}

/* Rebuilds the chains at twice the size; each chain keeps the order entries came in. */
static void pend_rehash(struct trace_stream *s)
{
	size_t i;

	s->cap = s->cap ? s->cap * 2 : 1024;
	free(s->heads);
	free(s->tails);
	s->heads = xmalloc(st_mult(s->cap, sizeof(*s->heads)));
	s->tails = xmalloc(st_mult(s->cap, sizeof(*s->tails)));
	for (i = 0; i < s->cap; i++)
		s->heads[i] = s->tails[i] = -1;
	for (i = 0; i < s->nr_pend; i++)
		pend_link(s, (int32_t)i);
}

/* Puts the imports a trace finished since the last call in the pending map. */
static void index_done(struct trace_stream *s, size_t li)
{
	struct live *lv = &s->lives[li];

	if (lv->tp.nr_done > lv->alloc_matched) {
		size_t old = lv->alloc_matched;

		lv->alloc_matched = lv->tp.nr_done * 2;
		lv->matched = xrealloc(lv->matched, lv->alloc_matched * sizeof(bool));
		memset(lv->matched + old, 0, (lv->alloc_matched - old) * sizeof(bool));
	}
	for (; lv->indexed < lv->tp.nr_done; lv->indexed++) {
		ALLOC_GROW(s->pend, s->nr_pend + 1, s->alloc_pend);
		s->pend[s->nr_pend].live = (uint32_t)li;
		s->pend[s->nr_pend].done = (uint32_t)lv->indexed;
		s->nr_pend++;
		if (s->nr_pend * 2 > s->cap)
			pend_rehash(s);
		else
			pend_link(s, (int32_t)(s->nr_pend - 1));
	}
}

/* Reads what the process wrote since the last read. */
static void read_live(struct trace_stream *s, size_t li)
{
	struct live *lv = &s->lives[li];
	char chunk[READ_CHUNK];
	struct buf err = BUF_INIT;

	while (lv->fd >= 0 && !lv->bad) {
		ssize_t n = read(lv->fd, chunk, sizeof(chunk));
		const char *nul;
		long used;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		nul = memchr(chunk, '\0', (size_t)n);
		buf_add(&lv->pending, chunk, nul ? (size_t)(nul - chunk) : (size_t)n);
		used = trace_proc_feed(&lv->tp, lv->pending.buf, lv->pending.len, &err);
		if (used < 0) {
			lv->bad = true;
			break;
		}
		if (used) {
			memmove(lv->pending.buf, lv->pending.buf + used, lv->pending.len - (size_t)used);
			buf_setlen(&lv->pending, lv->pending.len - (size_t)used);
		}
		if (nul) {
			/*
			 * The mapped file's zero tail: the rest is not written yet.
			 * Read again from the first zero byte next time.
			 */
			lseek(lv->fd, -(off_t)(n - (nul - chunk)), SEEK_CUR);
			break;
		}
	}
	buf_release(&err);
	if (!lv->bad)
		index_done(s, li);
}

static bool known_file(const struct trace_stream *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nr_lives; i++)
		if (!strcmp(s->lives[i].file, name))
			return true;
	return false;
}

/* New trace files, and what every process wrote since the last look. */
static void refresh(struct trace_stream *s)
{
	DIR *d = opendir(s->dir);
	struct dirent *de;
	size_t i;

	while (d && (de = readdir(d))) {
		struct buf path = BUF_INIT;
		struct live *lv;

		if (!ends_with(de->d_name, ".trace") || known_file(s, de->d_name))
			continue;
		ALLOC_GROW(s->lives, s->nr_lives + 1, s->alloc_lives);
		lv = &s->lives[s->nr_lives++];
		memset(lv, 0, sizeof(*lv));
		lv->file = xstrdup(de->d_name);
		lv->window = -1;
		buf_init(&lv->pending, 0);
		trace_proc_init(&lv->tp);
		buf_addf(&path, "%s/%s", s->dir, de->d_name);
		lv->fd = open(path.buf, O_RDONLY | O_CLOEXEC);
		lv->bad = lv->fd < 0;
		buf_release(&path);
		s->seen = xrealloc(s->seen, st_mult(s->alloc_lives, sizeof(*s->seen)));
		s->seen[s->nr_lives - 1] = 0;
	}
	if (d)
		closedir(d);
	for (i = 0; i < s->nr_lives; i++)
		read_live(s, i);
	s->refreshed = true;
}

/*
 * A row is printed right after the import's end is recorded, so once a
 * thread's later import has its row, its earlier ones that have none never
 * will (importlib.import_module() loads, failures inside it): they must not
 * take another process's row of the same name.
 */
static void retire_before(struct live *lv, size_t done)
{
	long tid = lv->tp.done[done].tid;
	size_t k;

	for (k = done; k > 0; k--) {
		if (lv->matched[k - 1])
			break;
		if (lv->tp.done[k - 1].tid == tid)
			lv->matched[k - 1] = true;
	}
}

/* Whether a row's cumulative can be the tracer's duration of the same import (importtime's clock is outside). */
static bool plausible(int64_t row_us, int64_t trace_us)
{
	int64_t slack = trace_us / 20 > 50 ? trace_us / 20 : 50;

	return row_us >= trace_us - 2 && row_us <= trace_us + slack;
}

/*
 * The finished import of a traced process this row was printed for: among
 * the processes whose earliest unmatched import of that name is waiting,
 * the one whose duration is closest to the row's (two forked workers import
 * the same modules at the same time; their durations differ).  While an
 * interpreter is starting, its start-up rows may carry the same names as
 * imports other processes are finishing: then only a duration that can be
 * the same import's counts.
 */
static bool match_row(struct trace_stream *s, const struct row_text *rt, bool strict, long *live_out,
		      size_t *done_out)
{
	uint64_t h = name_hash(rt->name, rt->name_len);
	int64_t best_diff = INT64_MAX;
	long best = -1;
	int32_t k;

	if (!s->cap)
		return false;
	s->stamp++;
	for (k = s->heads[h & (s->cap - 1)]; k >= 0; k = s->pend[k].next) {
		const struct pend *e = &s->pend[k];
		struct live *lv = &s->lives[e->live];
		const struct trace_done *d = &lv->tp.done[e->done];
		const char *nm = proc_str(&lv->tp.proc, d->name);
		int64_t diff;

		if (lv->matched[e->done] || s->seen[e->live] == s->stamp)
			continue;
		if (strlen(nm) != rt->name_len || memcmp(nm, rt->name, rt->name_len))
			continue;
		s->seen[e->live] = s->stamp; /* only a process's earliest waiting import counts */
		if (strict && (d->node < 0 || !plausible(rt->cum_us, d->cum_us)))
			continue;
		diff = d->node < 0 ? INT64_MAX / 2 : llabs(rt->cum_us - d->cum_us);
		if (diff < best_diff) {
			best_diff = diff;
			best = k;
		}
	}
	if (best < 0)
		return false;
	*live_out = (long)s->pend[best].live;
	*done_out = s->pend[best].done;
	s->lives[*live_out].matched[*done_out] = true;
	retire_before(&s->lives[*live_out], *done_out);
	return true;
}

static size_t add_row(struct trace_stream *s, const struct row_text *rt)
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

static bool window_has(const struct trace_stream *s, const struct window *w, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < w->rows.nr; i++) {
		const char *nm = row_name(s, w->rows.v[i]);

		if (strlen(nm) == len && !memcmp(nm, name, len))
			return true;
	}
	return false;
}

static struct rowlist *pend_at(struct window *w, uint32_t depth)
{
	if (depth >= w->nr_pend_depths) {
		size_t n = depth + 8;

		w->pend = xrealloc(w->pend, st_mult(n, sizeof(*w->pend)));
		memset(w->pend + w->nr_pend_depths, 0, (n - w->nr_pend_depths) * sizeof(*w->pend));
		w->nr_pend_depths = n;
	}
	return &w->pend[depth];
}

static int64_t pend_sum(const struct trace_stream *s, const struct rowlist *l)
{
	int64_t sum = 0;
	size_t i;

	for (i = 0; i < l->nr; i++)
		sum += s->rows[l->v[i]].cum_us;
	return sum;
}

/*
 * How far the row is from fitting window w's tree, in microseconds; -1 when
 * it cannot be there at all.  After a row at depth d the next one is at d - 1
 * (its parent) or deeper; a parent's self and its children's cumulative add
 * up to its own cumulative, within the rounding of each printed value.
 */
static int64_t fit_error(const struct trace_stream *s, struct window *w, uint32_t depth, int64_t self_us,
			 int64_t cum_us, bool cached)
{
	const struct rowlist *kids;
	size_t d;
	int64_t err;

	if (w->last_depth >= 0 && (long)depth < w->last_depth - 1)
		return -1;
	for (d = depth + 2; d < w->nr_pend_depths; d++)
		if (w->pend[d].nr)
			return -1;
	if (cached)
		return 0;
	kids = depth + 1 < w->nr_pend_depths ? &w->pend[depth + 1] : NULL;
	err = cum_us - self_us - (kids ? pend_sum(s, kids) : 0);
	if (err < 0)
		err = -err;
	err -= (int64_t)(kids ? kids->nr : 0) + 1;
	return err > 0 ? err : 0;
}

/* Enters row into window w's tree: the rows waiting at depth + 1 were its children. */
static void window_add(struct trace_stream *s, struct window *w, size_t row)
{
	uint32_t depth = s->rows[row].depth;
	struct rowlist *below = pend_at(w, depth + 1);

	if (below->nr) {
		struct rowlist *kids = xcalloc(1, sizeof(*kids));

		*kids = *below;
		memset(below, 0, sizeof(*below));
		free(s->rows[row].kids);
		s->rows[row].kids = kids;
	}
	rowlist_add(pend_at(w, depth), row);
	w->last_depth = depth;
}

/* Row x and the rows under it in its window's tree. */
static void subtree(const struct trace_stream *s, size_t x, struct rowlist *out)
{
	const struct rowlist *kids = s->rows[x].kids;
	size_t i;

	rowlist_add(out, x);
	for (i = 0; kids && i < kids->nr; i++)
		subtree(s, kids->v[i], out);
}

/* Moves the rows of l from window a's list to window b's. */
static void move_rows(struct window *a, struct window *b, const struct rowlist *l)
{
	size_t i, k, keep = 0;

	for (k = 0; k < a->rows.nr; k++) {
		bool moving = false;

		for (i = 0; i < l->nr && !moving; i++)
			moving = a->rows.v[k] == l->v[i];
		if (moving)
			rowlist_add(&b->rows, a->rows.v[k]);
		else
			a->rows.v[keep++] = a->rows.v[k];
	}
	a->rows.nr = keep;
}

#define MAX_SWAPS 12

/*
 * Two interpreters starting together print the same names at about the same
 * time, so a row can go to either; a wrong choice shows when its parent's
 * sum does not fit.  Looks for the exchange of waiting rows (with what they
 * closed) between window wi and another window, name for name, that makes
 * the parent fit window wi.
 */
static bool swap_to_fit(struct trace_stream *s, size_t wi, const struct row_text *rt)
{
	struct window *w = &s->wins[wi];
	struct rowlist *mine;
	int64_t want = rt->cum_us - rt->self_us, have;
	size_t vi, a, b;

	if (rt->depth + 1 >= w->nr_pend_depths || !w->pend[rt->depth + 1].nr)
		return false;
	mine = &w->pend[rt->depth + 1];
	have = pend_sum(s, mine);
	for (vi = 0; vi < s->nr_wins; vi++) {
		struct window *v = &s->wins[vi];
		struct rowlist *theirs;
		size_t pa[MAX_SWAPS], pb[MAX_SWAPS], k = 0;
		bool used[64] = { false };
		unsigned long mask, best_mask = 0;
		int64_t best_err = llabs(want - have);

		if (vi == wi || v->closed || rt->depth + 1 >= v->nr_pend_depths)
			continue;
		theirs = &v->pend[rt->depth + 1];
		for (a = 0; a < mine->nr && k < MAX_SWAPS; a++)
			for (b = 0; b < theirs->nr && b < 64; b++)
				if (!used[b] && !strcmp(row_name(s, mine->v[a]), row_name(s, theirs->v[b]))) {
					used[b] = true;
					pa[k] = a;
					pb[k] = b;
					k++;
					break;
				}
		for (mask = 1; mask < (1UL << k); mask++) {
			int64_t sum = have;
			size_t i;

			for (i = 0; i < k; i++)
				if (mask & (1UL << i))
					sum += s->rows[theirs->v[pb[i]]].cum_us - s->rows[mine->v[pa[i]]].cum_us;
			if (llabs(want - sum) < best_err) {
				best_err = llabs(want - sum);
				best_mask = mask;
			}
		}
		if (!best_mask || best_err > (int64_t)mine->nr + 1)
			continue;
		for (size_t i = 0; i < k; i++) {
			struct rowlist sx = { NULL, 0, 0 }, sy = { NULL, 0, 0 };
			size_t x = mine->v[pa[i]], y = theirs->v[pb[i]];

			if (!(best_mask & (1UL << i)))
				continue;
			mine->v[pa[i]] = y;
			theirs->v[pb[i]] = x;
			subtree(s, x, &sx);
			subtree(s, y, &sy);
			move_rows(w, v, &sx);
			move_rows(v, w, &sy);
			free(sx.v);
			free(sy.v);
		}
		return true;
	}
	return false;
}

/* Where row (name, depth) comes next in the reference start-up after position from, or -1. */
static long ref_find(const struct trace_stream *s, size_t from, const struct row_text *rt, size_t ahead)
{
	size_t k;

	for (k = from; k < s->ref.nr && k < from + ahead; k++) {
		const struct srow *r = &s->rows[s->ref.v[k]];
		const char *nm = row_name(s, s->ref.v[k]);

		if (r->depth == rt->depth && strlen(nm) == rt->name_len && !memcmp(nm, rt->name, rt->name_len))
			return (long)k;
	}
	return -1;
}

/* The window the reference start-up says prints this row next; -1 when it says nothing. */
static long window_by_ref(struct trace_stream *s, const struct row_text *rt, long *pos)
{
	static const size_t aheads[] = { 1, 8 };
	long best = -1;
	int64_t best_err = INT64_MAX;
	size_t a, i;

	if (!s->have_ref)
		return -1;
	for (a = 0; a < ARRAY_SIZE(aheads) && best < 0; a++)
		for (i = 0; i < s->nr_wins; i++) {
			struct window *w = &s->wins[i];
			long at;
			int64_t err;

			if (w->closed || (at = ref_find(s, w->cursor, rt, aheads[a])) < 0)
				continue;
			err = fit_error(s, w, rt->depth, rt->self_us, rt->cum_us, rt->cached);
			if (err < 0)
				continue;
			/* Two windows at the same place: the sums decide; a leaf goes to the oldest. */
			if (best < 0 || err < best_err) {
				best = (long)i;
				best_err = err;
				*pos = at;
			}
		}
	return best;
}

/*
 * The open window a start-up row belongs to: the one the reference start-up
 * says prints it next, else the one whose tree it fits best (depth order and
 * sums), among equal fits the oldest that has not had a row of that name yet
 * (interpreters started at the same time import the same modules in the
 * same order).  -1 when no window is open.
 */
static long window_for(struct trace_stream *s, const struct row_text *rt)
{
	long best = -1, any = -1, pos = -1, open = 0;
	int64_t best_err = INT64_MAX;
	bool best_new = false;
	size_t i;

	for (i = 0; i < s->nr_wins; i++)
		open += !s->wins[i].closed;
	if (open > 1)
		for (i = 0; i < s->nr_wins; i++)
			if (!s->wins[i].closed)
				s->wins[i].crowded = true;
	best = window_by_ref(s, rt, &pos);
	if (best >= 0) {
		s->wins[best].cursor = (size_t)pos + 1;
		return best;
	}
	for (i = 0; i < s->nr_wins; i++) {
		struct window *w = &s->wins[i];
		int64_t err;
		bool is_new;

		if (w->closed)
			continue;
		if (any < 0)
			any = (long)i;
		err = fit_error(s, w, rt->depth, rt->self_us, rt->cum_us, rt->cached);
		if (err < 0)
			continue;
		is_new = !window_has(s, w, rt->name, rt->name_len);
		if (best < 0 || (is_new && !best_new) || (is_new == best_new && err < best_err)) {
			best = (long)i;
			best_err = err;
			best_new = is_new;
		}
	}
	if (best >= 0 && best_err > 0 && !rt->cached && swap_to_fit(s, (size_t)best, rt))
		best_err = 0;
	if (best < 0 || best_err > 0) {
		for (i = 0; best_err > 0 && i < s->nr_wins; i++)
			if (!s->wins[i].closed && swap_to_fit(s, i, rt)) {
				best = (long)i;
				best_err = 0;
			}
	}
	if (best < 0 && any >= 0) {
		best = any;
		best_err = 1;
	}
	return best;
}

static bool in_modules(const struct trace_proc *tp, const char *name)
{
	size_t i;

	if (!strcmp(name, "site") || !strcmp(name, "sitecustomize") || !strcmp(name, "usercustomize"))
		return true;
	for (i = 0; i < tp->modules.nr; i++)
		if (!strcmp(tp->modules.v[i], name))
			return true;
	return false;
}

/* How well a window's rows fit the modules a trace found imported at its start. */
static long window_fit(const struct trace_stream *s, const struct window *w, const struct trace_proc *tp)
{
	long score = 0;
	size_t i;

	for (i = 0; i < w->rows.nr; i++)
		score += in_modules(tp, row_name(s, w->rows.v[i])) ? 1 : -1;
	return score;
}

/*
 * An exec'd process printed its first row since its tracer started: its
 * start-up window is open now, and has had every row its interpreter
 * printed before the tracer.  Of the open windows (interpreters starting
 * together) that is the one furthest along the reference start-up; without
 * a reference, the oldest.  A window whose rows mostly name modules this
 * process did not import is passed over: another interpreter's, one
 * without a tracer.
 */
static void pair_window(struct trace_stream *s, long li, bool open_only)
{
	struct live *lv = &s->lives[li];
	long best = -1;
	size_t i;

	if (lv->window >= 0 || lv->tp.proc.origin != ORIGIN_EXEC)
		return;
	for (i = 0; i < s->nr_wins; i++) {
		struct window *w = &s->wins[i];

		if ((open_only && w->closed) || w->live >= 0 || window_fit(s, w, &lv->tp) < 0)
			continue;
		if (best < 0 || (s->have_ref && w->cursor > s->wins[best].cursor))
			best = (long)i;
	}
	if (best >= 0) {
		lv->window = best;
		s->wins[best].live = li;
	}
}

/* Returns whether the row was taken out of the stream. */
static bool take_row(struct trace_stream *s, const struct row_text *rt)
{
	long li, w;
	size_t done, row;

	if (rt->header) {
		ALLOC_GROW(s->wins, s->nr_wins + 1, s->alloc_wins);
		memset(&s->wins[s->nr_wins], 0, sizeof(s->wins[0]));
		s->wins[s->nr_wins].open_seq = s->seq;
		s->wins[s->nr_wins].live = -1;
		s->wins[s->nr_wins].last_depth = -1;
		s->nr_wins++;
		return true;
	}
	if (!rt->cached) {
		bool starting = false;

		for (w = 0; w < (long)s->nr_wins; w++)
			starting |= !s->wins[w].closed;
		if (!s->refreshed)
			refresh(s);
		if (match_row(s, rt, starting, &li, &done)) {
			struct live *lv = &s->lives[li];

			row = add_row(s, rt);
			s->rows[row].fork_ghost = lv->tp.done[done].node < 0;
			s->rows[row].tnode = lv->tp.done[done].node;
			rowlist_add(&lv->rows, row);
			pair_window(s, li, true);
			/* Its window's tree goes on around it: site's and sitecustomize's rows come after. */
			if (lv->window >= 0 && !s->wins[lv->window].closed)
				window_add(s, &s->wins[lv->window], row);
			s->last_live = li;
			return true;
		}
	}
	w = window_for(s, rt);
	if (w >= 0) {
		row = add_row(s, rt);
		rowlist_add(&s->wins[w].rows, row);
		window_add(s, &s->wins[w], row);
		if (!rt->cached && rt->depth == 0 && rt->name_len == 4 && !memcmp(rt->name, "site", 4)) {
			struct window *win = &s->wins[w];

			win->closed = true;
			if (win->live < 0)
				s->untraced = w;
			if (!s->have_ref && !win->crowded) {
				size_t k;

				for (k = 0; k < win->rows.nr; k++)
					rowlist_add(&s->ref, win->rows.v[k]);
				s->have_ref = true;
			}
		}
		return true;
	}
	if (s->untraced >= 0) {
		rowlist_add(&s->wins[s->untraced].rows, add_row(s, rt));
		return true;
	}
	if (rt->cached && s->last_live >= 0) {
		rowlist_add(&s->lives[s->last_live].rows, add_row(s, rt));
		return true;
	}
	return false;
}

static void take_line(struct trace_stream *s, const char *text, size_t len, bool newline, struct buf *pass)
{
	const char *mark = len >= strlen(ROW_MARK) ? memmem(text, len, ROW_MARK, strlen(ROW_MARK)) : NULL;
	struct row_text rt;

	s->seq++;
	if (mark && lex_row(mark, text + len, &rt) && take_row(s, &rt)) {
		/* A prefix glued before the row is the target's own output. */
		buf_add(pass, text, (size_t)(mark - text));
		return;
	}
	buf_add(pass, text, len);
	if (newline)
		buf_addch(pass, '\n');
}

struct trace_stream *trace_stream_new(const char *dir)
{
	struct trace_stream *s = xcalloc(1, sizeof(*s));

	s->dir = dir;
	buf_init(&s->names, 0);
	buf_addch(&s->names, '\0');
	buf_init(&s->line, 0);
	s->last_live = -1;
	s->untraced = -1;
	return s;
}

void trace_stream_feed(struct trace_stream *s, const char *data, size_t len, struct buf *pass)
{
	const char *p = data, *end = data + len;

	s->refreshed = false;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl) {
			buf_add(&s->line, p, (size_t)(end - p));
			break;
		}
		if (s->line.len) {
			buf_add(&s->line, p, (size_t)(nl - p));
			take_line(s, s->line.buf, s->line.len, true, pass);
			buf_reset(&s->line);
		} else {
			take_line(s, p, (size_t)(nl - p), true, pass);
		}
		p = nl + 1;
	}
}

static int cmp_seq(const void *a, const void *b, void *arg)
{
	const struct trace_stream *s = arg;
	long x = s->rows[*(const size_t *)a].seq, y = s->rows[*(const size_t *)b].seq;

	return x < y ? -1 : x > y;
}

/*
 * Which rows of window w were not its interpreter's: the target's own lines
 * that arrived while it started.  A row is suspect when it names no module
 * the interpreter had imported when its tracer started (a failed import is
 * not in sys.modules either, so that alone decides nothing); a suspect goes
 * back when its parent's sum fits without it, or when it has no parent.
 */
static void window_strays(struct trace_stream *s, const struct window *w, struct rowlist *back)
{
	const struct trace_proc *tp = &s->lives[w->live].tp;
	struct rowlist all = { NULL, 0, 0 }, *pend = NULL;
	size_t nr_pend = 0, i, k;

	for (i = 0; i < w->rows.nr; i++)
		rowlist_add(&all, w->rows.v[i]);
	for (i = 0; i < s->lives[w->live].rows.nr; i++)
		rowlist_add(&all, s->lives[w->live].rows.v[i]);
	if (all.nr)
		qsort_r(all.v, all.nr, sizeof(*all.v), cmp_seq, s);
	for (i = 0; i < all.nr; i++) {
		const struct srow *r = &s->rows[all.v[i]];
		struct rowlist kids;
		int64_t sum = 0, stray_sum = 0;
		size_t strays = 0;

		if (r->depth + 2 > nr_pend) {
			pend = xrealloc(pend, st_mult(r->depth + 8, sizeof(*pend)));
			memset(pend + nr_pend, 0, (r->depth + 8 - nr_pend) * sizeof(*pend));
			nr_pend = r->depth + 8;
		}
		kids = pend[r->depth + 1];
		for (k = 0; k < kids.nr; k++) {
			const struct srow *c = &s->rows[kids.v[k]];

			sum += c->cum_us;
			if (c->tnode < 0 && !in_modules(tp, row_name(s, kids.v[k]))) {
				strays++;
				stray_sum += c->cum_us;
			}
		}
		if (strays && llabs(r->cum_us - r->self_us - sum) > (int64_t)kids.nr + 1 &&
		    llabs(r->cum_us - r->self_us - (sum - stray_sum)) <= (int64_t)(kids.nr - strays) + 1)
			for (k = 0; k < kids.nr; k++)
				if (s->rows[kids.v[k]].tnode < 0 && !in_modules(tp, row_name(s, kids.v[k])))
					rowlist_add(back, kids.v[k]);
		pend[r->depth + 1].nr = 0;
		rowlist_add(&pend[r->depth], all.v[i]);
	}
	/* Left without a parent: a stray if it names nothing imported. */
	for (k = 0; k < nr_pend; k++)
		for (i = 0; i < pend[k].nr; i++)
			if (s->rows[pend[k].v[i]].tnode < 0 && !in_modules(tp, row_name(s, pend[k].v[i])))
				rowlist_add(back, pend[k].v[i]);
	for (k = 0; k < nr_pend; k++)
		free(pend[k].v);
	free(pend);
	free(all.v);
}

static bool in_list(const struct rowlist *l, size_t row)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		if (l->v[i] == row)
			return true;
	return false;
}

/* The target's own lines held in start-up windows go back to it, in stream order. */
static void give_back(struct trace_stream *s, struct buf *pass)
{
	struct rowlist back = { NULL, 0, 0 };
	size_t i, k;

	for (i = 0; i < s->nr_wins; i++) {
		struct window *w = &s->wins[i];
		size_t keep = 0, first = back.nr;

		if (w->live < 0 || w->dropped)
			continue;
		window_strays(s, w, &back);
		if (back.nr == first)
			continue;
		for (k = 0; k < w->rows.nr; k++)
			if (!in_list(&back, w->rows.v[k]))
				w->rows.v[keep++] = w->rows.v[k];
		w->rows.nr = keep;
	}
	if (back.nr)
		qsort_r(back.v, back.nr, sizeof(*back.v), cmp_seq, s);
	for (k = 0; k < back.nr; k++) {
		const struct srow *r = &s->rows[back.v[k]];

		if (r->cached)
			buf_addf(pass, "import time: cached    | cached     | %*s%s\n", (int)(2 * r->depth), "",
				 row_name(s, back.v[k]));
		else
			buf_addf(pass, "import time: %9lld | %10lld | %*s%s\n", (long long)r->self_us,
				 (long long)r->cum_us, (int)(2 * r->depth), "", row_name(s, back.v[k]));
	}
	free(back.v);
}

/*
 * How far rows (stream order) are from one importtime tree: the sum, over
 * the rows that closed others, of how much their self and their children's
 * cumulative miss their own cumulative beyond rounding.
 */
static int64_t tree_error(const struct trace_stream *s, const struct rowlist *rows)
{
	struct rowlist *pend = NULL;
	size_t nr_pend = 0, i, k;
	int64_t total = 0;

	for (i = 0; i < rows->nr; i++) {
		const struct srow *r = &s->rows[rows->v[i]];
		int64_t sum = 0, err;

		if (r->depth + 2 > nr_pend) {
			pend = xrealloc(pend, st_mult(r->depth + 8, sizeof(*pend)));
			memset(pend + nr_pend, 0, (r->depth + 8 - nr_pend) * sizeof(*pend));
			nr_pend = r->depth + 8;
		}
		for (k = 0; k < pend[r->depth + 1].nr; k++)
			sum += s->rows[pend[r->depth + 1].v[k]].cum_us;
		if (!r->cached) {
			err = llabs(r->cum_us - r->self_us - sum) - (int64_t)pend[r->depth + 1].nr - 1;
			if (err > 0)
				total += err;
		}
		pend[r->depth + 1].nr = 0;
		rowlist_add(&pend[r->depth], rows->v[i]);
	}
	for (k = 0; k < nr_pend; k++)
		free(pend[k].v);
	free(pend);
	return total;
}

/* The tree error of window w's rows with live l's. */
static int64_t pair_error(const struct trace_stream *s, const struct window *w, const struct live *lv)
{
	struct rowlist all = { NULL, 0, 0 };
	size_t i;
	int64_t err;

	for (i = 0; i < w->rows.nr; i++)
		rowlist_add(&all, w->rows.v[i]);
	for (i = 0; i < lv->rows.nr; i++)
		rowlist_add(&all, lv->rows.v[i]);
	qsort_r(all.v, all.nr, sizeof(*all.v), cmp_seq, (void *)s);
	err = tree_error(s, &all);
	free(all.v);
	return err;
}

/*
 * Interpreters that started together run the same start-up, so which window
 * was whose is not settled by names or order; it is by the rows around the
 * tracer's start: the bootstrap's own row (sitecustomize) and site's close
 * over rows of the process's trace, and their sums fit only the right
 * pairing.  Re-pairs the windows of crowded start-ups, best fits first.
 */
static void repair_crowded(struct trace_stream *s)
{
	size_t nw = s->nr_wins, nl = s->nr_lives, i, j;
	int64_t *cost;
	bool *wdone, *ldone, any = false;

	for (i = 0; i < nw; i++)
		any |= s->wins[i].crowded;
	if (!any)
		return;
	cost = xmalloc(st_mult(st_mult(nw, nl) + 1, sizeof(*cost)));
	wdone = xcalloc(nw + 1, sizeof(bool));
	ldone = xcalloc(nl + 1, sizeof(bool));
	for (i = 0; i < nw; i++) {
		struct window *w = &s->wins[i];

		if (!w->crowded) {
			wdone[i] = true;
			if (w->live >= 0)
				ldone[w->live] = true;
			continue;
		}
		if (w->live >= 0)
			s->lives[w->live].window = -1;
		w->live = -1;
	}
	for (i = 0; i < nw; i++)
		for (j = 0; j < nl; j++) {
			const struct live *lv = &s->lives[j];

			cost[i * nl + j] = -1;
			if (wdone[i] || ldone[j] || lv->bad || lv->tp.proc.origin != ORIGIN_EXEC || !lv->rows.nr ||
			    window_fit(s, &s->wins[i], &lv->tp) < 0)
				continue;
			cost[i * nl + j] = pair_error(s, &s->wins[i], lv);
		}
	for (;;) {
		long bi = -1, bj = -1;

		for (i = 0; i < nw; i++)
			for (j = 0; j < nl; j++)
				if (!wdone[i] && !ldone[j] && cost[i * nl + j] >= 0 &&
				    (bi < 0 || cost[i * nl + j] < cost[bi * nl + bj])) {
					bi = (long)i;
					bj = (long)j;
				}
		if (bi < 0)
			break;
		wdone[bi] = ldone[bj] = true;
		s->wins[bi].live = bj;
		s->lives[bj].window = bi;
	}
	free(cost);
	free(wdone);
	free(ldone);
}

void trace_stream_end(struct trace_stream *s, struct buf *pass)
{
	struct buf err = BUF_INIT;
	size_t i;

	if (s->line.len) {
		take_line(s, s->line.buf, s->line.len, false, pass);
		buf_reset(&s->line);
	}
	refresh(s);
	for (i = 0; i < s->nr_lives; i++) {
		struct live *lv = &s->lives[i];

		if (lv->fd >= 0)
			close(lv->fd);
		lv->fd = -1;
		if (!lv->bad && trace_proc_finish(&lv->tp, &err) < 0)
			lv->bad = true;
		buf_reset(&err);
	}
	/* Traces whose first row came when no window was open: pair them in order. */
	for (i = 0; i < s->nr_lives; i++)
		if (!s->lives[i].bad && s->lives[i].rows.nr)
			pair_window(s, (long)i, false);
	repair_crowded(s);
	for (i = 0; i < s->nr_wins; i++) {
		struct window *w = &s->wins[i];

		if (w->crowded && w->live >= 0 && pair_error(s, w, &s->lives[w->live]) > 0)
			w->dropped = true;
	}
	give_back(s, pass);
	buf_release(&err);
}

/*
 * Feeds rows (stream order) to a parser of their own: the importtime tree of
 * one process, whose node i is the i-th row fed; match (may be NULL) gets
 * each node's trace node.
 */
static void rows_to_proc(struct trace_stream *s, struct profile *p, const size_t *rows, size_t nr,
			 long depth_shift, const char *who, struct proc *out, int32_t **match)
{
	struct run scratch;
	struct it_parser *ps;
	struct buf text = BUF_INIT;
	const struct it_warning *w;
	size_t i, nw;

	size_t fed = 0;

	memset(&scratch, 0, sizeof(scratch));
	ps = it_parser_new(&scratch);
	if (match)
		*match = xmalloc(st_mult(nr + 1, sizeof(**match)));
	buf_adds(&text, "import time: self [us] | cumulative | imported package\n");
	for (i = 0; i < nr; i++) {
		const struct srow *r = &s->rows[rows[i]];
		long depth = (long)r->depth - depth_shift;

		if (r->fork_ghost)
			continue;
		if (match)
			(*match)[fed] = r->tnode;
		fed++;
		if (depth < 0)
			depth = 0;
		if (r->cached)
			buf_addf(&text, "import time: cached    | cached     | %*s%s\n", (int)(2 * depth), "",
				 row_name(s, rows[i]));
		else
			buf_addf(&text, "import time: %9lld | %10lld | %*s%s\n", (long long)r->self_us,
				 (long long)r->cum_us, (int)(2 * depth), "", row_name(s, rows[i]));
	}
	it_feed(ps, text.buf, text.len, NULL);
	it_finish(ps, NULL);
	w = it_warnings(ps, &nw);
	for (i = 0; i < nw; i++)
		profile_add_warning(p, 0, "importtime (%s): %s", who, w[i].msg);
	it_parser_free(ps);
	buf_release(&text);
	if (scratch.nr_procs) {
		*out = scratch.procs[0];
		for (i = 1; i < scratch.nr_procs; i++)
			proc_release(&scratch.procs[i]);
		free(scratch.procs);
	} else {
		proc_init(out);
	}
	if (match && out->nr_nodes != fed) {
		/* Not one node per row (a line the parser read otherwise): pair by name instead. */
		free(*match);
		*match = NULL;
	}
}

static void warn_about(struct profile *p, const struct trace_proc *tp)
{
	long pid = tp->proc.pid;

	if (tp->stopped)
		profile_add_warning(p, 0, "trace of pid %ld: the tracer stopped itself: %s", pid, tp->stopped);
	if (tp->bad_records)
		profile_add_warning(p, 0, "trace of pid %ld: %zu malformed records skipped", pid,
				    tp->bad_records);
	if (!tp->audit)
		profile_add_warning(p, 0,
				    "trace of pid %ld: Python %s has no audit hooks; imports were traced, "
				    "side effects and compilation were not",
				    pid, tp->version_str);
}

/*
 * Interpreters that started at the same time printed their start-up rows
 * into one stream at the same time.  Where the rows of one fitted its own
 * trace's, they are shown (two alike interpreters' rows can still have been
 * exchanged: nothing in them says which is whose); where not, its tree
 * starts where its tracer did.
 */
static void crowd_warnings(struct trace_stream *s, struct profile *p)
{
	struct buf kept = BUF_INIT, lost = BUF_INIT;
	size_t i, nk = 0, nl = 0;

	for (i = 0; i < s->nr_wins; i++) {
		const struct window *w = &s->wins[i];
		long pid = w->live >= 0 ? s->lives[w->live].tp.proc.pid : -1;

		if (!w->crowded || w->live < 0)
			continue;
		if (w->dropped)
			buf_addf(&lost, "%s%ld", nl++ ? ", " : "", pid);
		else
			buf_addf(&kept, "%s%ld", nk++ ? ", " : "", pid);
	}
	if (nk)
		profile_add_warning(p, 0,
				    "the interpreters of pids %s started at the same time and printed their "
				    "start-up rows (before the tracer) into one stream; they are attributed by "
				    "order and importtime's sums, which cannot tell two alike interpreters' "
				    "rows apart",
				    kept.buf);
	if (nl)
		profile_add_warning(p, 0,
				    "the start-up rows (before the tracer) of pids %s could not be told apart "
				    "from those of interpreters that started at the same time: their trees "
				    "are their traces' alone, from where their tracers started (the processes "
				    "table gives the start-up before it)",
				    lost.buf);
	buf_release(&kept);
	buf_release(&lost);
}

void trace_stream_collect(struct trace_stream *s, struct profile *p, struct run *run)
{
	size_t i, untraced = 0;

	for (i = 0; i < s->nr_lives; i++) {
		struct live *lv = &s->lives[i];
		struct rowlist all = { NULL, 0, 0 };
		struct buf who = BUF_INIT;
		struct proc *pr;
		int32_t *match = NULL;
		size_t k;

		if (lv->bad) {
			profile_add_warning(p, 0, "trace '%s': not a readable coldstart trace", lv->file);
			continue;
		}
		if (lv->window >= 0 && s->wins[lv->window].dropped) {
			/* Its rows cannot be told apart: the tree is the trace's alone. */
		} else {
			if (lv->window >= 0)
				for (k = 0; k < s->wins[lv->window].rows.nr; k++)
					rowlist_add(&all, s->wins[lv->window].rows.v[k]);
			for (k = 0; k < lv->rows.nr; k++)
				rowlist_add(&all, lv->rows.v[k]);
		}
		if (all.nr)
			qsort_r(all.v, all.nr, sizeof(*all.v), cmp_seq, s);
		buf_addf(&who, "pid %ld", lv->tp.proc.pid);
		pr = run_add_proc(run);
		proc_release(pr);
		rows_to_proc(s, p, all.v, all.nr, lv->tp.proc.origin == ORIGIN_FORK ? lv->tp.fork_depth : 0,
			     who.buf, pr, &match);
		trace_merge(pr, &lv->tp, match);
		free(match);
		warn_about(p, &lv->tp);
		free(all.v);
		buf_release(&who);
	}
	for (i = 0; i < s->nr_wins; i++) {
		struct window *w = &s->wins[i];
		struct buf who = BUF_INIT;
		struct proc *pr;

		if (w->live >= 0 || !w->rows.nr)
			continue;
		untraced++;
		buf_addf(&who, "interpreter %zu without a trace", untraced);
		pr = run_add_proc(run);
		proc_release(pr);
		rows_to_proc(s, p, w->rows.v, w->rows.nr, 0, who.buf, pr, NULL);
		buf_release(&who);
	}
	crowd_warnings(s, p);
	if (untraced)
		profile_add_warning(p, 0,
				    "%zu Python process%s printed importtime rows but wrote no trace (-I, -E or "
				    "-S, or its tracer failed): %s rows are attributed by importtime's header "
				    "lines alone, and rows printed by other processes at the same time may be "
				    "among them",
				    untraced, untraced == 1 ? "" : "es", untraced == 1 ? "its" : "their");
	trace_assign_roles(run);
}

void trace_stream_free(struct trace_stream *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nr_lives; i++) {
		struct live *lv = &s->lives[i];

		if (lv->fd >= 0)
			close(lv->fd);
		free(lv->file);
		buf_release(&lv->pending);
		trace_proc_release(&lv->tp);
		free(lv->matched);
		free(lv->rows.v);
	}
	free(s->lives);
	for (i = 0; i < s->nr_wins; i++) {
		size_t d;

		free(s->wins[i].rows.v);
		for (d = 0; d < s->wins[i].nr_pend_depths; d++)
			free(s->wins[i].pend[d].v);
		free(s->wins[i].pend);
	}
	free(s->wins);
	free(s->ref.v);
	for (i = 0; i < s->nr_rows; i++)
		if (s->rows[i].kids) {
			free(s->rows[i].kids->v);
			free(s->rows[i].kids);
		}
	free(s->rows);
	buf_release(&s->names);
	buf_release(&s->line);
	free(s->pend);
	free(s->heads);
	free(s->tails);
	free(s->seen);
	free(s);
}
