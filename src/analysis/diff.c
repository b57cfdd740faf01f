/*
 * Profile comparison: per-module self and cumulative medians across runs,
 * a noise threshold from the runs' spread (median absolute deviation), and
 * the text report `coldstart diff` prints.
 */
#include "analysis/diff.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* |delta| must exceed this many robust standard deviations of the difference. */
#define NOISE_SIGMAS 3.0
/* MAD * 1.4826 estimates the standard deviation of normal noise. */
#define MAD_TO_SIGMA 1.4826
/*
 * With at least this many runs on each side, a change must also separate
 * the runs: B slower than A in at least SEPARATION of all (A run, B run)
 * pairs (Mann-Whitney's probability of superiority).  Seven noisy runs can
 * give a small MAD by chance; this keeps such modules from being flagged.
 */
#define SEPARATION_MIN_RUNS 3
#define SEPARATION 0.9

struct sample {
	const char *name;
	uint32_t run; /* index among the side's compared runs */
	uint8_t side; /* 0 = A, 1 = B */
	uint8_t kind;
	int64_t self_us, cum_us;
};

struct samples {
	struct sample *v;
	size_t nr, alloc;
};

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	if (x->side != y->side)
		return x->side - y->side;
	return x->run < y->run ? -1 : x->run > y->run;
}

static int cmp_entry_name(const void *key, const void *e)
{
	return strcmp(key, ((const struct diff_entry *)e)->name);
}

/* The runs a side is judged on: non-warm-up runs with a process, else any. */
static size_t pick_runs(const struct profile *p, const struct run **out)
{
	size_t i, n = 0;

	for (i = 0; i < p->nr_runs; i++)
		if (p->runs[i].nr_procs && !p->runs[i].warmup)
			out[n++] = &p->runs[i];
	if (n)
		return n;
	for (i = 0; i < p->nr_runs; i++)
		if (p->runs[i].nr_procs)
			out[n++] = &p->runs[i];
	return n;
}

static void collect(struct samples *s, const struct run *const *runs, size_t nr, uint8_t side, enum metric m)
{
	size_t r, i;

	for (r = 0; r < nr; r++) {
		const struct proc *pr = &runs[r]->procs[0];

		for (i = 0; i < pr->nr_nodes; i++) {
			struct sample *x;

			ALLOC_GROW(s->v, s->nr + 1, s->alloc);
			x = &s->v[s->nr++];
			x->name = node_name(pr, (int32_t)i);
			x->run = (uint32_t)r;
			x->side = side;
			x->kind = pr->nodes[i].kind;
			x->self_us = node_self_in(pr, (int32_t)i, m);
			x->cum_us = node_cum_in(pr, (int32_t)i, m);
			if (x->self_us < 0)
				x->self_us = 0;
			if (x->cum_us < 0)
				x->cum_us = 0;
		}
	}
}

static int64_t threshold(int64_t min_delta, int64_t mad_a, int64_t mad_b)
{
	double spread = MAD_TO_SIGMA * sqrt((double)mad_a * (double)mad_a + (double)mad_b * (double)mad_b);
	int64_t t = i64_from_double(round(NOISE_SIGMAS * spread));

	return t > min_delta ? t : min_delta;
}

/* Fraction of (a, b) pairs with b > a, ties counting half. */
static double superiority(const int64_t *a, size_t na, const int64_t *b, size_t nb)
{
	double wins = 0;
	size_t i, j;

	for (i = 0; i < na; i++)
		for (j = 0; j < nb; j++)
			wins += b[j] > a[i] ? 1.0 : b[j] == a[i] ? 0.5 : 0.0;
	return wins / ((double)na * (double)nb);
}

/* Fills one entry from the samples of one name (sorted by side, run). */
static void fill_entry(struct diff *d, const struct sample *s, size_t n, size_t na, size_t nb)
{
	int64_t *a_self = xcalloc(na, sizeof(int64_t)), *a_cum = xcalloc(na, sizeof(int64_t));
	int64_t *b_self = xcalloc(nb, sizeof(int64_t)), *b_cum = xcalloc(nb, sizeof(int64_t));
	bool in_a = false, in_b = false;
	struct diff_entry *e;
	size_t i;

	ALLOC_GROW(d->entries, d->nr + 1, d->alloc);
	e = &d->entries[d->nr++];
	memset(e, 0, sizeof(*e));
	e->name = xstrdup(s[0].name);
	for (i = 0; i < n; i++) {
		/* A name twice in one process: selves add up, the outer cum counts. */
		if (s[i].side == 0) {
			in_a = true;
			a_self[s[i].run] = i64_add(a_self[s[i].run], s[i].self_us);
			if (s[i].cum_us > a_cum[s[i].run])
				a_cum[s[i].run] = s[i].cum_us;
			if (!in_b)
				e->kind = s[i].kind;
		} else {
			in_b = true;
			b_self[s[i].run] = i64_add(b_self[s[i].run], s[i].self_us);
			if (s[i].cum_us > b_cum[s[i].run])
				b_cum[s[i].run] = s[i].cum_us;
			e->kind = s[i].kind;
		}
	}
	if (na >= SEPARATION_MIN_RUNS && nb >= SEPARATION_MIN_RUNS)
		e->superiority = superiority(a_self, na, b_self, nb);
	else
		e->superiority = -1.0;
	e->a_self_us = diff_median(a_self, na);
	e->a_mad_us = diff_mad(a_self, na, e->a_self_us);
	e->b_self_us = diff_median(b_self, nb);
	e->b_mad_us = diff_mad(b_self, nb, e->b_self_us);
	e->a_cum_us = diff_median(a_cum, na);
	e->b_cum_us = diff_median(b_cum, nb);
	e->added = !in_a && in_b;
	e->removed = in_a && !in_b;
	e->delta_us = i64_sub(e->b_self_us, e->a_self_us);
	e->cum_delta_us = i64_sub(e->b_cum_us, e->a_cum_us);
	free(a_self);
	free(a_cum);
	free(b_self);
	free(b_cum);
}

/*
 * A module's own MAD comes from a handful of runs and is sometimes tiny by
 * chance; the typical MAD of all modules on that side is used as a floor,
 * so such a module needs a change larger than the noise every module shows.
 */
static int64_t typical_mad(const struct diff *d, int side)
{
	int64_t *v = xmalloc(st_mult(d->nr ? d->nr : 1, sizeof(*v))), m;
	size_t i, n = 0;

	for (i = 0; i < d->nr; i++) {
		const struct diff_entry *e = &d->entries[i];

		if (side == 0 && !e->added)
			v[n++] = e->a_mad_us;
		else if (side == 1 && !e->removed)
			v[n++] = e->b_mad_us;
	}
	m = diff_median(v, n);
	free(v);
	return m;
}

static void judge_entries(struct diff *d)
{
	int64_t floor_a = typical_mad(d, 0), floor_b = typical_mad(d, 1);
	size_t i;

	for (i = 0; i < d->nr; i++) {
		struct diff_entry *e = &d->entries[i];
		int64_t mad_a = e->a_mad_us > floor_a ? e->a_mad_us : floor_a;
		int64_t mad_b = e->b_mad_us > floor_b ? e->b_mad_us : floor_b;

		e->threshold_us = threshold(d->min_delta_us, mad_a, mad_b);
		e->flagged = i64_abs(e->delta_us) > e->threshold_us;
		if (e->flagged && e->superiority >= 0 && !e->added && !e->removed)
			e->flagged = e->delta_us > 0 ? e->superiority >= SEPARATION
						     : e->superiority <= 1.0 - SEPARATION;
		if (e->flagged && i64_abs(e->delta_us) > d->max_abs_delta_us)
			d->max_abs_delta_us = i64_abs(e->delta_us);
	}
}

static int64_t median_of(const struct run *const *runs, size_t n, int kind, enum metric metric, int64_t *mad)
{
	int64_t *v = xmalloc(st_mult(n ? n : 1, sizeof(*v))), m;
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		int64_t x = kind == 0 ? proc_import_total_in(&runs[i]->procs[0], true, metric) : runs[i]->wall_us;

		if (x != UNKNOWN && x >= 0)
			v[k++] = x;
	}
	if (!k) {
		free(v);
		*mad = 0;
		return UNKNOWN;
	}
	m = diff_median(v, k);
	*mad = diff_mad(v, k, m);
	free(v);
	return m;
}

static void add_signed(struct buf *out, int64_t us)
{
	if (us > 0)
		buf_addch(out, '+');
	buf_add_duration(out, us);
}

static int cmp_delta_desc(const void *a, const void *b)
{
	const struct diff_entry *x = *(const struct diff_entry *const *)a;
	const struct diff_entry *y = *(const struct diff_entry *const *)b;
	int64_t ax = i64_abs(x->added || x->removed ? (x->added ? x->b_cum_us : x->a_cum_us) : x->delta_us);
	int64_t ay = i64_abs(y->added || y->removed ? (y->added ? y->b_cum_us : y->a_cum_us) : y->delta_us);

	if (ax != ay)
		return ax > ay ? -1 : 1;
	return strcmp(x->name, y->name);
}

const struct diff_entry **diff_select(const struct diff *d, enum diff_list which, size_t *nr)
{
	const struct diff_entry **v = xmalloc(st_mult(d->nr ? d->nr : 1, sizeof(*v)));
	size_t i, n = 0;

	for (i = 0; i < d->nr; i++) {
		const struct diff_entry *e = &d->entries[i];
		bool take;

		switch (which) {
		case DIFF_SLOWER: take = e->flagged && !e->added && !e->removed && e->delta_us > 0; break;
		case DIFF_FASTER: take = e->flagged && !e->added && !e->removed && e->delta_us < 0; break;
		case DIFF_NEW: take = e->added; break;
		case DIFF_REMOVED: take = e->removed; break;
		default: take = !e->flagged && e->delta_us != 0 && !e->added && !e->removed;
		}
		if (take)
			v[n++] = e;
	}
	qsort(v, n, sizeof(*v), cmp_delta_desc);
	*nr = n;
	return v;
}

static void report_list(const struct diff *d, int which, const char *heading, size_t top, struct buf *out)
{
	size_t n, i;
	const struct diff_entry **v = diff_select(d, (enum diff_list)which, &n);

	if (!n) {
		free(v);
		return;
	}
	buf_addf(out, "\n%s (%zu):\n", heading, n);
	for (i = 0; i < n && (!top || i < top); i++) {
		const struct diff_entry *e = v[i];
		struct buf col = BUF_INIT;

		if (which == 2) {
			add_signed(&col, e->b_cum_us);
			buf_addf(out, "  %12s  %s (self ", col.buf, e->name);
			buf_add_duration(out, e->b_self_us);
			buf_adds(out, e->flagged ? ", flagged)\n" : ")\n");
		} else if (which == 3) {
			add_signed(&col, i64_neg(e->a_cum_us));
			buf_addf(out, "  %12s  %s\n", col.buf, e->name);
		} else {
			add_signed(&col, e->delta_us);
			buf_addf(out, "  %12s  %s  self ", col.buf, e->name);
			buf_add_duration(out, e->a_self_us);
			buf_adds(out, " -> ");
			buf_add_duration(out, e->b_self_us);
			buf_adds(out, ", cumulative ");
			add_signed(out, e->cum_delta_us);
			buf_adds(out, ", threshold ");
			buf_add_duration(out, e->threshold_us);
			buf_addch(out, '\n');
		}
		buf_release(&col);
	}
	if (top && n > top)
		buf_addf(out, "  ... %zu more (--top 0 shows all)\n", n - top);
	free(v);
}

int64_t diff_median(int64_t *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_i64);
	return n % 2 ? v[n / 2] : i64_mid(v[n / 2 - 1], v[n / 2]);
}

int64_t diff_mad(const int64_t *v, size_t n, int64_t median)
{
	int64_t *dev, m;
	size_t i;

	if (n < 2)
		return 0;
	dev = xmalloc(st_mult(n, sizeof(*dev)));
	for (i = 0; i < n; i++)
		dev[i] = i64_abs(i64_sub(v[i], median));
	m = diff_median(dev, n);
	free(dev);
	return m;
}

int diff_compute(struct diff *d, const struct profile *a, const struct profile *b, int64_t min_delta_us,
		 struct buf *err)
{
	const struct run **ra = xmalloc(st_mult(a->nr_runs ? a->nr_runs : 1, sizeof(*ra)));
	const struct run **rb = xmalloc(st_mult(b->nr_runs ? b->nr_runs : 1, sizeof(*rb)));
	struct samples s = { NULL, 0, 0 };
	size_t i, j;
	int ret = -1;

	d->min_delta_us = min_delta_us;
	d->a_runs = pick_runs(a, ra);
	d->b_runs = pick_runs(b, rb);
	if (!d->a_runs || !d->b_runs) {
		buf_addf(err, "the %s profile holds no run with a process", !d->a_runs ? "first" : "second");
		goto out;
	}
	d->metric = (profile_metric(a) == METRIC_CPU || profile_metric(b) == METRIC_CPU) && profile_has_cpu_times(a) &&
				    profile_has_cpu_times(b)
			    ? METRIC_CPU
			    : METRIC_WALL;
	collect(&s, ra, d->a_runs, 0, d->metric);
	collect(&s, rb, d->b_runs, 1, d->metric);
	if (s.nr)
		qsort(s.v, s.nr, sizeof(*s.v), cmp_sample);
	for (i = 0; i < s.nr; i = j) {
		for (j = i + 1; j < s.nr && !strcmp(s.v[j].name, s.v[i].name); j++)
			;
		fill_entry(d, &s.v[i], j - i, d->a_runs, d->b_runs);
	}
	judge_entries(d);
	d->a_total_us = median_of(ra, d->a_runs, 0, d->metric, &d->a_total_mad_us);
	d->b_total_us = median_of(rb, d->b_runs, 0, d->metric, &d->b_total_mad_us);
	d->total_threshold_us = threshold(min_delta_us, d->a_total_mad_us, d->b_total_mad_us);
	d->total_flagged = i64_abs(i64_sub(d->b_total_us, d->a_total_us)) > d->total_threshold_us;
	{
		int64_t mad;

		d->a_wall_us = median_of(ra, d->a_runs, 1, METRIC_WALL, &mad);
		d->b_wall_us = median_of(rb, d->b_runs, 1, METRIC_WALL, &mad);
	}
	ret = 0;
out:
	free(s.v);
	free(ra);
	free(rb);
	return ret;
}

const struct diff_entry *diff_find(const struct diff *d, const char *name)
{
	if (!d || !d->nr)
		return NULL;
	return bsearch(name, d->entries, d->nr, sizeof(*d->entries), cmp_entry_name);
}

size_t diff_regressions(const struct diff *d)
{
	size_t i, n = d->total_flagged && d->b_total_us > d->a_total_us;

	for (i = 0; i < d->nr; i++)
		if (d->entries[i].flagged && d->entries[i].delta_us > 0)
			n++;
	return n;
}

void diff_report(const struct diff *d, const char *a_name, const char *b_name, size_t top, struct buf *out)
{
	size_t n;
	const struct diff_entry **quiet = diff_select(d, DIFF_QUIET, &n);

	buf_addf(out, "coldstart diff: %s (%zu run%s) -> %s (%zu run%s)\n", a_name, d->a_runs,
		 d->a_runs == 1 ? "" : "s", b_name, d->b_runs, d->b_runs == 1 ? "" : "s");
	if (d->metric == METRIC_CPU)
		buf_adds(
			out,
			"compared in CPU time of the importing thread (a CPU limit makes wall time the scheduler's)\n");
	buf_adds(out, d->metric == METRIC_CPU ? "import total (CPU): " : "import total: ");
	buf_add_duration(out, d->a_total_us);
	buf_adds(out, " -> ");
	buf_add_duration(out, d->b_total_us);
	buf_adds(out, " (");
	add_signed(out, i64_sub(d->b_total_us, d->a_total_us));
	buf_adds(out, ", threshold ");
	buf_add_duration(out, d->total_threshold_us);
	buf_adds(out, ")");
	if (d->total_flagged)
		buf_adds(out, d->b_total_us > d->a_total_us ? "  REGRESSION" : "  improvement");
	else
		buf_adds(out, "  within noise");
	buf_addch(out, '\n');
	if (d->a_wall_us != UNKNOWN && d->b_wall_us != UNKNOWN) {
		buf_adds(out, "wall time: ");
		buf_add_duration(out, d->a_wall_us);
		buf_adds(out, " -> ");
		buf_add_duration(out, d->b_wall_us);
		buf_adds(out, " (");
		add_signed(out, i64_sub(d->b_wall_us, d->a_wall_us));
		buf_adds(out, ", not judged)\n");
	}
	if (d->a_runs > 1 || d->b_runs > 1) {
		buf_adds(out, "noise: medians across runs; a change is flagged when it exceeds 3 x 1.4826 x MAD\n"
			      "(at least the typical module's MAD) and --min-delta (");
		buf_add_duration(out, d->min_delta_us);
		buf_addf(out, ")%s\n",
			 d->a_runs >= SEPARATION_MIN_RUNS && d->b_runs >= SEPARATION_MIN_RUNS
				 ? ", and the runs separate (90% of run pairs agree)"
				 : "");
	} else {
		buf_adds(out, "noise: single runs; a change is flagged when it exceeds --min-delta (");
		buf_add_duration(out, d->min_delta_us);
		buf_adds(out, ")\n");
	}
	report_list(d, 0, "slower (flagged)", top, out);
	report_list(d, 1, "faster (flagged)", top, out);
	report_list(d, 2, "new modules", top, out);
	report_list(d, 3, "removed modules", top, out);
	if (n)
		buf_addf(out, "\n%zu other module%s changed within the noise threshold\n", n, n == 1 ? "" : "s");
	buf_addf(out, "\n%zu regression%s flagged\n", diff_regressions(d), diff_regressions(d) == 1 ? "" : "s");
	free(quiet);
}

static void add_argv(struct buf *out, const struct strvec *v)
{
	size_t i;

	for (i = 0; i < v->nr; i++)
		buf_addf(out, "%s%s", i ? " " : "", v->v[i]);
}

static bool same_str(const char *x, const char *y)
{
	return (!x && !y) || (x && y && !strcmp(x, y));
}

void diff_mismatches(const struct profile *a, const struct profile *b, struct strvec *out)
{
	struct buf x = BUF_INIT, y = BUF_INIT, msg = BUF_INIT;

	limits_describe(&a->limits, &x);
	limits_describe(&b->limits, &y);
	if (strcmp(x.buf, y.buf)) {
		buf_addf(&msg, "the profiles ran under different limits: %s, then %s", x.buf, y.buf);
		strvec_push(out, msg.buf);
	}
	if (!same_str(a->python, b->python) || !same_str(a->python_version, b->python_version)) {
		buf_reset(&msg);
		buf_addf(&msg, "the profiles ran different interpreters: %s (Python %s), then %s (Python %s)",
			 a->python ? a->python : "unknown", a->python_version ? a->python_version : "?",
			 b->python ? b->python : "unknown", b->python_version ? b->python_version : "?");
		strvec_push(out, msg.buf);
	}
	buf_reset(&x);
	buf_reset(&y);
	add_argv(&x, &a->target);
	add_argv(&y, &b->target);
	if (strcmp(x.buf, y.buf)) {
		buf_reset(&msg);
		buf_addf(&msg, "the profiles ran different targets: '%s', then '%s'", x.buf, y.buf);
		strvec_push(out, msg.buf);
	}
	buf_release(&x);
	buf_release(&y);
	buf_release(&msg);
}

void diff_release(struct diff *d)
{
	size_t i;

	for (i = 0; i < d->nr; i++)
		free(d->entries[i].name);
	free(d->entries);
	d->entries = NULL;
	d->nr = d->alloc = 0;
}
