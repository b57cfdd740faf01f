/*
 * Interpreters' start-up rows in the shared stderr: printed before their
 * tracers started, so no trace waits for them.  Each importtime header opens
 * a window; rows go to the window they fit; windows are paired with traces
 * and checked once the stream ends (docs/trace-format.md, "The shared
 * stderr", point 2).
 */
#include "ingest/trace_window.h"

#include <stdlib.h>
#include <string.h>

#include "ingest/importtime.h"

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
		qsort_r(all.v, all.nr, sizeof(*all.v), ts_cmp_seq, s);
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
		qsort_r(back.v, back.nr, sizeof(*back.v), ts_cmp_seq, s);
	for (k = 0; k < back.nr; k++) {
		const struct srow *r = &s->rows[back.v[k]];

		if (r->cached)
			it_cached_row(pass, r->depth, row_name(s, back.v[k]));
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
	qsort_r(all.v, all.nr, sizeof(*all.v), ts_cmp_seq, (void *)s);
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

/*
 * Interpreters that started at the same time printed their start-up rows
 * into one stream at the same time.  Where the rows of one fitted its own
 * trace's, they are shown (two alike interpreters' rows can still have been
 * exchanged: nothing in them says which is whose); where not, its tree
 * starts where its tracer did.
 */
void windows_warn(struct trace_stream *s, struct profile *p)
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

void window_open(struct trace_stream *s)
{
	struct window *w;

	ALLOC_GROW(s->wins, s->nr_wins + 1, s->alloc_wins);
	w = &s->wins[s->nr_wins++];
	memset(w, 0, sizeof(*w));
	w->open_seq = s->seq;
	w->live = -1;
	w->last_depth = -1;
}

bool windows_starting(const struct trace_stream *s)
{
	size_t i;

	for (i = 0; i < s->nr_wins; i++)
		if (!s->wins[i].closed)
			return true;
	return false;
}

void window_matched(struct trace_stream *s, long li, size_t row)
{
	struct live *lv = &s->lives[li];

	pair_window(s, li, true);
	/* Its window's tree goes on around it: site's and sitecustomize's rows come after. */
	if (lv->window >= 0 && !s->wins[lv->window].closed)
		window_add(s, &s->wins[lv->window], row);
}

bool window_take(struct trace_stream *s, const struct row_text *rt)
{
	long w = window_for(s, rt);
	size_t row;

	if (w < 0) {
		if (s->untraced < 0)
			return false;
		/* After an interpreter without a trace closed its window, its rows are its own. */
		rowlist_add(&s->wins[s->untraced].rows, ts_add_row(s, rt));
		return true;
	}
	row = ts_add_row(s, rt);
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

/*
 * While an interpreter starts, a row is taken for a trace's import only
 * within the slack of its duration (match_row), so a traced import's row made
 * longer by a preemption after the tracer's last clock read went to the
 * start-up window that was open, another interpreter's.  Such a row names no
 * module that interpreter had imported before its tracer (a stray of its
 * window): when it fits a traced import it is that import's row, and goes to
 * its process.  Returns whether a crowded window gave one up.
 */
static bool claim_late_rows(struct trace_stream *s)
{
	bool crowded = false;
	size_t i, k;

	for (i = 0; i < s->nr_wins; i++) {
		struct window *w = &s->wins[i];
		struct rowlist strays = { NULL, 0, 0 };
		size_t keep = 0;

		if (w->live < 0)
			continue;
		window_strays(s, w, &strays);
		for (k = 0; k < w->rows.nr; k++) {
			size_t row = w->rows.v[k];

			if (in_list(&strays, row) && ts_claim_late_row(s, row))
				crowded |= w->crowded;
			else
				w->rows.v[keep++] = row;
		}
		w->rows.nr = keep;
		free(strays.v);
	}
	return crowded;
}

void windows_end(struct trace_stream *s, struct buf *pass)
{
	size_t i;

	/* Traces whose first row came when no window was open: pair them in order. */
	for (i = 0; i < s->nr_lives; i++)
		if (!s->lives[i].bad && s->lives[i].rows.nr)
			pair_window(s, (long)i, false);
	repair_crowded(s);
	/* A crowded window's pairing was judged with the other process's row in its tree. */
	if (claim_late_rows(s))
		repair_crowded(s);
	for (i = 0; i < s->nr_wins; i++) {
		struct window *w = &s->wins[i];

		if (w->crowded && w->live >= 0 && pair_error(s, w, &s->lives[w->live]) > 0)
			w->dropped = true;
	}
	give_back(s, pass);
}

void windows_free(struct trace_stream *s)
{
	size_t i, d;

	for (i = 0; i < s->nr_wins; i++) {
		free(s->wins[i].rows.v);
		for (d = 0; d < s->wins[i].nr_pend_depths; d++)
			free(s->wins[i].pend[d].v);
		free(s->wins[i].pend);
	}
	free(s->wins);
	free(s->ref.v);
}
