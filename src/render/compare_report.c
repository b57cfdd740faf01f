/*
 * The figures of a comparison and the three ways it is shown (see
 * compare_report.h); the statistics themselves are compare.c's.
 */
#include "render/compare_report.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "iset.h"
#include "render/fit.h"
#include "render/report.h"
#include "render/report_run.h"
#include "model/runlimits.h"

#define ALPHA COMPARE_ALPHA

static const char *const metric_key[] = {
	[M_WALL] = "wall_us",	[M_IMPORTS] = "imports_us",	[M_CPU] = "cpu_us",
	[M_READY] = "ready_us", [M_LISTENING] = "listening_us",
};

static const char *const compare_metric_name[] = {
	[M_WALL] = "wall", [M_IMPORTS] = "imports", [M_CPU] = "CPU", [M_READY] = "ready", [M_LISTENING] = "listen",
};

static void sample_add(struct sample *s, int64_t v)
{
	if (v == UNKNOWN)
		return;
	s->v = xrealloc(s->v, st_mult(s->nr + 1, sizeof(*s->v)));
	s->v[s->nr++] = v;
}

static int64_t run_metric(const struct run *r, enum compare_metric m)
{
	switch (m) {
	case M_WALL: return r->wall_us;
	case M_IMPORTS: return run_import_total_us(r, 1);
	case M_CPU: return r->user_us == UNKNOWN || r->sys_us == UNKNOWN ? UNKNOWN : r->user_us + r->sys_us;
	case M_READY: return r->ready_us;
	case M_LISTENING: return r->listening_us;
	default: return UNKNOWN;
	}
}

/* Whether metric m is part of the comparison: readiness with --ready, listening where it differs. */
static bool metric_shown(const struct comparison *c, size_t m)
{
	return (m != M_READY || c->ready) && (m != M_LISTENING || (c->ready && c->listening));
}

/* Whether measured run r failed, as profile's exit status counts it; how in out. */
static bool run_failed(const struct comparison *c, const struct profile *p, const struct run *r, struct buf *out)
{
	buf_reset(out);
	if ((r->status == RUN_EXITED && r->exit_code) ||
	    (r->status != RUN_EXITED && r->status != RUN_STOPPED && r->status != RUN_NOT_RUN))
		describe_status(p, r, out);
	else if (c->ready && r->ready_us == UNKNOWN)
		buf_adds(out, "never ready");
	return out->len > 0;
}

/* The summaries of every variant's measured runs and each one against A. */
static void compare_runs(struct comparison *c)
{
	struct buf how = BUF_INIT;
	size_t j, m, i;

	for (j = 0; j < c->nr; j++) {
		struct compare_side *v = &c->v[j];

		for (i = 0; i < v->p->nr_runs; i++) {
			if (v->p->runs[i].warmup)
				continue;
			for (m = 0; m < M__COUNT; m++)
				sample_add(&v->metric[m], run_metric(&v->p->runs[i], (enum compare_metric)m));
			if (v->p->runs[i].listening_us != UNKNOWN &&
			    v->p->runs[i].listening_us != v->p->runs[i].ready_us)
				c->listening = true;
			if (run_failed(c, v->p, &v->p->runs[i], &how) && !v->nr_failed++)
				v->failure = buf_detach(&how, NULL);
			if (v->p->runs[i].cold.asked && !cold_figures_took(&v->p->runs[i].cold))
				v->nr_not_cold++;
		}
		v->outlier = xcalloc(v->metric[M_WALL].nr + 1, sizeof(*v->outlier));
		v->nr_outliers = mark_outliers(v->metric[M_WALL].v, v->metric[M_WALL].nr, v->outlier);
		for (m = 0; m < M__COUNT; m++) {
			int64_t *copy = xmalloc(st_mult(v->metric[m].nr + 1, sizeof(*copy)));

			if (v->metric[m].nr) /* a variant whose runs all failed has none: v is NULL */
				memcpy(copy, v->metric[m].v, v->metric[m].nr * sizeof(*copy));
			summarize(copy, v->metric[m].nr, &v->metric[m].s);
			free(copy);
		}
	}
	for (m = 0; m < M__COUNT; m++) {
		double *p = xcalloc(c->nr, sizeof(*p));
		const struct sample *a = &c->v[0].metric[m];

		if (!metric_shown(c, m)) {
			free(p);
			continue;
		}
		for (j = 1; j < c->nr; j++) {
			struct compare_side *v = &c->v[j];
			const struct sample *b = &v->metric[m];

			p[j - 1] = 1;
			if (!a->nr || !b->nr)
				continue;
			v->vs.ratio[m] = a->s.median > 0 ? (double)b->s.median / (double)a->s.median : 0;
			mann_whitney(a->v, a->nr, b->v, b->nr, &v->vs.mw[m]);
			p[j - 1] = v->vs.mw[m].p;
		}
		holm_adjust(p, c->nr - 1);
		for (j = 1; j < c->nr; j++)
			c->v[j].vs.p_adj[m] = p[j - 1];
		free(p);
	}
	buf_release(&how);
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return a < b ? -1 : a > b;
}

static int64_t median_of(const int64_t *v, size_t n)
{
	int64_t *copy, med;

	if (!n)
		return 0;
	copy = xmalloc(st_mult(n, sizeof(*copy)));
	memcpy(copy, v, n * sizeof(*copy));
	qsort(copy, n, sizeof(*copy), cmp_i64);
	med = n % 2 ? copy[n / 2] : (copy[n / 2 - 1] + copy[n / 2]) / 2;
	free(copy);
	return med;
}

/* The row of module name, added when new (rows: row indexes, sized by the caller for every name). */
static size_t module_row(struct comparison *c, struct iset *rows, const char *name)
{
	size_t i = (size_t)hash_str(name) & (rows->cap - 1), k;

	while (rows->slot[i] >= 0 && strcmp(c->rows[rows->slot[i]].name, name))
		i = (i + 1) & (rows->cap - 1);
	if (rows->slot[i] >= 0)
		return (size_t)rows->slot[i];
	ALLOC_GROW(c->rows, c->nr_rows + 1, c->alloc_rows);
	c->rows[c->nr_rows].name = xstrdup(name);
	c->rows[c->nr_rows].v = xcalloc(c->nr, sizeof(int64_t *));
	for (k = 0; k < c->nr; k++)
		c->rows[c->nr_rows].v[k] = xcalloc(c->v[k].metric[M_WALL].nr + c->v[k].p->nr_runs + 1, sizeof(int64_t));
	c->rows[c->nr_rows].median = xcalloc(c->nr, sizeof(int64_t));
	c->rows[c->nr_rows].present = xcalloc(c->nr, sizeof(size_t));
	rows->slot[i] = (int32_t)c->nr_rows;
	rows->used++;
	return c->nr_rows++;
}

static int cmp_diff(const void *x, const void *y)
{
	const struct module_diff *a = x, *b = y;
	int64_t da = a->delta < 0 ? -a->delta : a->delta, db = b->delta < 0 ? -b->delta : b->delta;

	return da > db ? -1 : da < db;
}

/* Every module's self time per measured run (0 where a run did not import it), and the differences with A. */
static void compare_modules(struct comparison *c)
{
	size_t nr_slots = 1024, j, i, k, total = 0;
	struct iset rows;
	size_t *runs = xcalloc(c->nr, sizeof(*runs));

	for (j = 0; j < c->nr; j++)
		for (i = 0; i < c->v[j].p->nr_runs; i++)
			if (!c->v[j].p->runs[i].warmup && c->v[j].p->runs[i].nr_procs)
				total += c->v[j].p->runs[i].procs[0].nr_nodes;
	while (nr_slots < total * 2)
		nr_slots *= 2;
	iset_init(&rows, nr_slots);
	for (j = 0; j < c->nr; j++) {
		const struct profile *p = c->v[j].p;

		for (i = 0; i < p->nr_runs; i++) {
			const struct run *r = &p->runs[i];
			const struct proc *pr;

			if (r->warmup)
				continue;
			if (r->nr_procs) {
				pr = &r->procs[0];
				for (k = 0; k < pr->nr_nodes; k++) {
					struct module_row *row;
					size_t ri;

					if (pr->nodes[k].kind == KIND_TOOL || pr->nodes[k].self_us == UNKNOWN)
						continue;
					ri = module_row(c, &rows, node_name(pr, (int32_t)k));
					row = &c->rows[ri];
					if (!row->v[j][runs[j]])
						row->present[j]++;
					row->v[j][runs[j]] += pr->nodes[k].self_us > 0 ? pr->nodes[k].self_us : 0;
				}
			}
			runs[j]++;
		}
	}
	for (i = 0; i < c->nr_rows; i++)
		for (j = 0; j < c->nr; j++)
			c->rows[i].median[j] = median_of(c->rows[i].v[j], runs[j]);
	c->diffs = xcalloc(c->nr, sizeof(*c->diffs));
	c->nr_tested = xcalloc(c->nr, sizeof(*c->nr_tested));
	for (j = 1; j < c->nr; j++) {
		struct module_diff *d = xcalloc(c->nr_rows + 1, sizeof(*d));
		double *p = xcalloc(c->nr_rows + 1, sizeof(*p));
		size_t nt = 0;

		for (i = 0; i < c->nr_rows; i++) {
			const struct module_row *row = &c->rows[i];

			d[i].row = i;
			d[i].delta = row->median[j] - row->median[0];
			d[i].p_adj = 1;
			if (runs[0] && runs[j] && (row->present[0] || row->present[j])) {
				mann_whitney(row->v[0], runs[0], row->v[j], runs[j], &d[i].mw);
				d[i].tested = true;
				p[nt++] = d[i].mw.p;
			}
		}
		holm_adjust(p, nt);
		for (i = 0, k = 0; i < c->nr_rows; i++)
			if (d[i].tested)
				d[i].p_adj = p[k++];
		qsort(d, c->nr_rows, sizeof(*d), cmp_diff);
		c->diffs[j] = d;
		c->nr_tested[j] = nt;
		free(p);
	}
	iset_release(&rows);
	free(runs);
}

void comparison_release(struct comparison *c)
{
	size_t i, j, m;

	for (j = 0; j < c->nr; j++) {
		free(c->v[j].outlier);
		c->v[j].outlier = NULL;
		free(c->v[j].failure);
		c->v[j].failure = NULL;
		c->v[j].nr_failed = 0;
		c->v[j].nr_not_cold = 0;
		for (m = 0; m < M__COUNT; m++) {
			free(c->v[j].metric[m].v);
			c->v[j].metric[m].v = NULL;
		}
	}
	for (i = 0; i < c->nr_rows; i++) {
		for (j = 0; j < c->nr; j++)
			free(c->rows[i].v[j]);
		free(c->rows[i].v);
		free(c->rows[i].median);
		free(c->rows[i].present);
		free(c->rows[i].name);
	}
	free(c->rows);
	if (c->diffs)
		for (j = 0; j < c->nr; j++)
			free(c->diffs[j]);
	free(c->diffs);
	free(c->nr_tested);
	c->rows = NULL;
	c->diffs = NULL;
	c->nr_tested = NULL;
	c->nr_rows = c->alloc_rows = 0;
}

void comparison_analyze(struct comparison *c)
{
	compare_runs(c);
	compare_modules(c);
}

/* "1.23x slower", "1.10x faster", "same" from the ratio of medians. */
static void add_ratio(struct buf *out, double ratio)
{
	if (ratio <= 0)
		buf_adds(out, "?");
	else if (fabs(ratio - 1) < 0.005)
		buf_adds(out, "same");
	else if (ratio > 1)
		buf_addf(out, "%.2fx slower", ratio);
	else
		buf_addf(out, "%.2fx faster", 1 / ratio);
}

/* What a p-value says, in words: significant, cannot be with so few runs, or within noise. */
static void add_verdict(struct buf *out, const struct mw_result *mw, double p_adj)
{
	if (p_adj < ALPHA)
		buf_adds(out, "significant");
	else if (mw->exact && mw->p_min >= ALPHA)
		buf_adds(out, "cannot be significant"); /* the table's end says why: too few runs */
	else
		buf_adds(out, "not significant");
}

static void add_p(struct buf *out, double p)
{
	if (p < 0.0001)
		buf_adds(out, "<0.0001");
	else
		buf_addf(out, "%.4f", p);
}

static void add_signed_duration(struct buf *out, int64_t us)
{
	buf_addch(out, us < 0 ? '-' : '+');
	buf_add_duration(out, us < 0 ? -us : us);
}

static void rtrim_spaces(struct buf *out)
{
	while (out->len && out->buf[out->len - 1] == ' ')
		buf_setlen(out, out->len - 1);
}

/* s, then spaces up to width columns (counting UTF-8 characters, not bytes). */
static void add_padded(struct buf *out, const char *s, int width)
{
	int n = (int)fit_cols(s);

	buf_adds(out, s);
	if (n < width)
		buf_addf(out, "%*s", width - n, "");
}

/* "41.2 ms ± 0.5 ms" of a summary. */
static void add_median(struct buf *out, const struct summary *s, const char *pm)
{
	if (!s->n) {
		buf_adds(out, "-");
		return;
	}
	buf_add_duration(out, s->median);
	buf_addf(out, " %s ", pm);
	buf_add_duration(out, s->mad);
}

static void add_range(struct buf *out, const struct summary *s, const char *dots)
{
	if (!s->n) {
		buf_adds(out, "-");
		return;
	}
	buf_add_duration(out, s->min);
	buf_addf(out, " %s ", dots);
	buf_add_duration(out, s->max);
}

static size_t measured_runs(const struct compare_side *v)
{
	return v->metric[M_WALL].nr;
}

/* The modules whose self time differs most between variant j and A, up to --top. */
static void table_modules(const struct comparison *c, size_t j, struct buf *out)
{
	const struct module_diff *d = c->diffs[j];
	size_t shown = 0, significant = 0, i;

	buf_addf(out, "\nmodules that differ most, %s against A (self time, median of the measured runs):\n",
		 c->v[j].id);
	/* 80 columns: a name of 34, three figures and p. */
	buf_addf(out, "  %-34s %10s %10s %11s %9s\n", "module", "A", c->v[j].id, "difference", "p");
	for (i = 0; i < c->nr_rows && shown < (size_t)c->top; i++) {
		const struct module_row *row = &c->rows[d[i].row];
		struct buf name = BUF_INIT, x = BUF_INIT;

		if (!d[i].delta)
			break;
		significant += d[i].p_adj < ALPHA;
		if (strlen(row->name) > 34)
			buf_addf(&name, "…%s", row->name + strlen(row->name) - 33);
		else
			buf_adds(&name, row->name);
		buf_adds(out, "  ");
		add_padded(out, name.buf, 34);
		buf_reset(&x);
		if (row->present[0])
			buf_add_duration(&x, row->median[0]);
		else
			buf_adds(&x, "absent");
		buf_addf(out, " %10s", x.buf);
		buf_reset(&x);
		if (row->present[j])
			buf_add_duration(&x, row->median[j]);
		else
			buf_adds(&x, "absent");
		buf_addf(out, " %10s", x.buf);
		buf_reset(&x);
		add_signed_duration(&x, d[i].delta);
		buf_addf(out, " %11s ", x.buf);
		buf_reset(&x);
		if (d[i].tested)
			add_p(&x, d[i].p_adj);
		buf_addf(out, "%8s%s\n", x.buf, d[i].p_adj < ALPHA ? " *" : "");
		buf_release(&name);
		buf_release(&x);
		shown++;
	}
	if (!shown)
		buf_adds(out, "  (no module's median differs)\n");
	else if (significant)
		buf_addf(out, "  * significant at 5%% after Holm's adjustment over the %zu modules compared\n",
			 c->nr_tested[j]);
	else
		buf_addf(out, "  none significant at 5%% after Holm's adjustment over the %zu modules compared\n",
			 c->nr_tested[j]);
}

void compare_render_table(const struct comparison *c, struct buf *out)
{
	size_t j, i, m;

	buf_addf(out, "coldstart compare: %zu %s, %d measured runs each, interleaved", c->nr, c->what, c->runs);
	buf_addf(out, ",\n  after %d warm-up round%s%s\n", c->warmup, c->warmup == 1 ? "" : "s",
		 c->cold ? ", page cache evicted before each run (--cold)" : "");
	for (j = 0; j < c->nr; j++)
		buf_addf(out, "  %s  %s\n", c->v[j].id, c->v[j].label);
	for (j = 0; j < c->nr; j++)
		if (c->v[j].nr_failed)
			buf_addf(out,
				 "  ! %s failed in %zu of %zu measured runs (%s): its figures are of failed runs\n",
				 c->v[j].id, c->v[j].nr_failed, measured_runs(&c->v[j]), c->v[j].failure);
	for (j = 0; j < c->nr; j++)
		if (c->v[j].nr_not_cold)
			buf_addf(out,
				 "  ! %s: %zu of %zu measured runs were not cold (the eviction did not take; "
				 "docs/cold.md)\n",
				 c->v[j].id, c->v[j].nr_not_cold, measured_runs(&c->v[j]));
	buf_addch(out, '\n');
	for (m = 0; m < M__COUNT; m++) {
		if (!metric_shown(c, m))
			continue;
		buf_addf(out, "  %-8s ", compare_metric_name[m]);
		add_padded(out, "median ± MAD", 24);
		buf_addch(out, ' ');
		add_padded(out, m == M_WALL ? "min … max" : "min … max", 26);
		buf_adds(out, m == M_WALL ? " outliers" : "");
		rtrim_spaces(out);
		buf_addch(out, '\n');
		for (j = 0; j < c->nr; j++) {
			const struct compare_side *v = &c->v[j];
			struct buf a = BUF_INIT, b = BUF_INIT;

			add_median(&a, &v->metric[m].s, "±");
			add_range(&b, &v->metric[m].s, "…");
			buf_addf(out, "  %-8s ", v->id);
			add_padded(out, a.buf, 24);
			buf_addch(out, ' ');
			add_padded(out, b.buf, 26);
			if (m == M_WALL && v->nr_outliers) {
				bool first = true;

				buf_addf(out, " %zu (run", v->nr_outliers);
				for (i = 0; i < v->metric[M_WALL].nr; i++)
					if (v->outlier[i]) {
						buf_addf(out, "%s %zu", first ? "" : ",", i + 1);
						first = false;
					}
				buf_addch(out, ')');
			}
			rtrim_spaces(out);
			buf_addch(out, '\n');
			buf_release(&a);
			buf_release(&b);
		}
	}
	buf_addch(out, '\n');
	for (j = 1; j < c->nr; j++) {
		const struct compare_side *v = &c->v[j];
		bool first = true;

		for (m = 0; m < M__COUNT; m++) {
			if (!metric_shown(c, m) || !v->metric[m].nr || !c->v[0].metric[m].nr)
				continue;
			if (first)
				buf_addf(out, "  %s vs A   %-8s ", v->id, compare_metric_name[m]);
			else
				buf_addf(out, "           %-8s ", compare_metric_name[m]);
			first = false;
			add_ratio(out, v->vs.ratio[m]);
			buf_adds(out, " (");
			add_signed_duration(out, v->metric[m].s.median - c->v[0].metric[m].s.median);
			buf_adds(out, "), p ");
			add_p(out, v->vs.p_adj[m]);
			buf_adds(out, ": ");
			add_verdict(out, &v->vs.mw[m], v->vs.p_adj[m]);
			buf_addch(out, '\n');
		}
	}
	for (j = 1; j < c->nr; j++)
		if (c->top && c->nr_rows)
			table_modules(c, j, out);
	buf_addf(out, "\ntest: Mann-Whitney U, two-sided, %s;\n  p adjusted (Holm) for the %zu comparison%s with A\n",
		 measured_runs(&c->v[0]) * 2 <= COMPARE_EXACT_MAX ? "exact" : "normal approximation", c->nr - 1,
		 c->nr == 2 ? "" : "s");
	for (j = 1; j < c->nr; j++)
		if (c->v[j].vs.mw[M_WALL].exact && c->v[j].vs.mw[M_WALL].p_min >= ALPHA) {
			buf_addf(out,
				 "with %zu and %zu runs the exact test cannot go below p = %.2g, whatever the times:\n"
				 "  use -n 5 or more\n",
				 measured_runs(&c->v[0]), measured_runs(&c->v[j]), c->v[j].vs.mw[M_WALL].p_min);
			break;
		}
}

/* Markdown cells must not break the table: a '|' is escaped, newlines become spaces. */
static void md_cell(struct buf *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			buf_adds(out, "\\|");
		else if (*s == '\n')
			buf_addch(out, ' ');
		else
			buf_addch(out, *s);
	}
}

void compare_render_markdown(const struct comparison *c, struct buf *out)
{
	size_t j, i, m;

	buf_addf(out, "### coldstart compare: %zu %s\n\n", c->nr, c->what);
	buf_adds(out, "| | variant | wall (median ± MAD) | min … max | imports | CPU |");
	if (c->ready)
		buf_adds(out, " ready |");
	buf_adds(out, " vs A | p |\n|---|---|---:|---:|---:|---:|");
	if (c->ready)
		buf_adds(out, "---:|");
	buf_adds(out, "---|---:|\n");
	for (j = 0; j < c->nr; j++) {
		const struct compare_side *v = &c->v[j];

		buf_addf(out, "| %s | ", v->id);
		md_cell(out, v->label);
		buf_adds(out, " | ");
		add_median(out, &v->metric[M_WALL].s, "±");
		buf_adds(out, " | ");
		add_range(out, &v->metric[M_WALL].s, "…");
		for (m = M_IMPORTS; m < M__COUNT; m++) {
			if (!metric_shown(c, m))
				continue;
			buf_adds(out, " | ");
			if (v->metric[m].nr)
				buf_add_duration(out, v->metric[m].s.median);
			else
				buf_adds(out, "-");
		}
		buf_adds(out, " | ");
		if (j) {
			bool sig = v->vs.p_adj[M_WALL] < ALPHA;

			buf_adds(out, sig ? "**" : "");
			add_ratio(out, v->vs.ratio[M_WALL]);
			buf_adds(out, sig ? "**" : "");
			buf_adds(out, " | ");
			add_p(out, v->vs.p_adj[M_WALL]);
		} else {
			buf_adds(out, "baseline | ");
		}
		buf_adds(out, " |\n");
	}
	for (j = 0; j < c->nr; j++)
		if (c->v[j].nr_failed)
			buf_addf(out,
				 "\n**%s failed in %zu of %zu measured runs** (%s): its figures are of failed runs.\n",
				 c->v[j].id, c->v[j].nr_failed, measured_runs(&c->v[j]), c->v[j].failure);
	for (j = 0; j < c->nr; j++)
		if (c->v[j].nr_not_cold)
			buf_addf(out, "\n%s: %zu of %zu measured runs were not cold (the eviction did not take).\n",
				 c->v[j].id, c->v[j].nr_not_cold, measured_runs(&c->v[j]));
	for (j = 1; j < c->nr; j++) {
		const struct module_diff *d = c->diffs[j];
		size_t shown = 0;

		if (!c->top || !c->nr_rows)
			continue;
		buf_addf(out, "\n<details><summary>Modules that differ most, %s against A (self time)</summary>\n\n",
			 c->v[j].id);
		buf_addf(out, "| module | A | %s | difference | p |\n|---|---:|---:|---:|---:|\n", c->v[j].id);
		for (i = 0; i < c->nr_rows && shown < (size_t)c->top && d[i].delta; i++, shown++) {
			const struct module_row *row = &c->rows[d[i].row];

			buf_adds(out, "| `");
			md_cell(out, row->name);
			buf_adds(out, "` | ");
			if (row->present[0])
				buf_add_duration(out, row->median[0]);
			else
				buf_adds(out, "absent");
			buf_adds(out, " | ");
			if (row->present[j])
				buf_add_duration(out, row->median[j]);
			else
				buf_adds(out, "absent");
			buf_adds(out, " | ");
			add_signed_duration(out, d[i].delta);
			buf_adds(out, " | ");
			if (d[i].tested)
				add_p(out, d[i].p_adj);
			buf_adds(out, d[i].p_adj < ALPHA ? " **\\***" : "");
			buf_adds(out, " |\n");
		}
		buf_adds(out, "\n</details>\n");
	}
	buf_addf(out,
		 "\n%d measured runs each, interleaved, after %d warm-up round%s%s. Mann-Whitney U test, "
		 "two-sided, Holm-adjusted; **bold** and \\* mark p < 0.05.\n",
		 c->runs, c->warmup, c->warmup == 1 ? "" : "s", c->cold ? "; page cache evicted before each run" : "");
}

static json_t *json_i64(int64_t v)
{
	return v == UNKNOWN ? json_null() : json_integer((json_int_t)v);
}

static json_t *json_summary(const struct sample *s)
{
	json_t *o = json_object(), *values = json_array();
	size_t i;

	for (i = 0; i < s->nr; i++)
		json_array_append_new(values, json_integer((json_int_t)s->v[i]));
	json_object_set_new(o, "n", json_integer((json_int_t)s->s.n));
	json_object_set_new(o, "median", s->s.n ? json_integer(s->s.median) : json_null());
	json_object_set_new(o, "mad", s->s.n ? json_integer(s->s.mad) : json_null());
	json_object_set_new(o, "min", s->s.n ? json_integer(s->s.min) : json_null());
	json_object_set_new(o, "max", s->s.n ? json_integer(s->s.max) : json_null());
	json_object_set_new(o, "values", values);
	return o;
}

static json_t *json_test(const struct mw_result *mw, double p_adj)
{
	json_t *o = json_object();

	json_object_set_new(o, "u", json_real(mw->u));
	json_object_set_new(o, "p", json_real(mw->p));
	json_object_set_new(o, "p_adjusted", json_real(p_adj));
	json_object_set_new(o, "exact", json_boolean(mw->exact));
	json_object_set_new(o, "significant", json_boolean(p_adj < ALPHA));
	if (mw->exact)
		json_object_set_new(o, "p_min", json_real(mw->p_min));
	return o;
}

char *compare_render_json(const struct comparison *c)
{
	json_t *root = json_object(), *vars = json_array(), *cmps = json_array();
	struct buf lim = BUF_INIT;
	size_t j, i, m;
	char *text;

	json_object_set_new(root, "format", json_string("coldstart-compare"));
	json_object_set_new(root, "version", json_integer(1));
	json_object_set_new(root, "tool_version", json_string(COLDSTART_VERSION));
	json_object_set_new(root, "created", json_string(c->v[0].p->created ? c->v[0].p->created : ""));
	json_object_set_new(root, "runs", json_integer(c->runs));
	json_object_set_new(root, "warmup", json_integer(c->warmup));
	json_object_set_new(root, "cold", json_boolean(c->cold));
	json_object_set_new(root, "interleaved", json_true());
	json_object_set_new(root, "test", json_string("mann-whitney-u"));
	json_object_set_new(root, "alternative", json_string("two-sided"));
	json_object_set_new(root, "adjustment", json_string("holm"));
	json_object_set_new(root, "alpha", json_real(ALPHA));
	for (j = 0; j < c->nr; j++) {
		const struct compare_side *v = &c->v[j];
		json_t *jv = json_object(), *target = json_array(), *runs = json_array(), *metrics = json_object();
		size_t k = 0;

		json_object_set_new(jv, "id", json_string(v->id));
		json_object_set_new(jv, "label", json_string(v->label));
		json_object_set_new(jv, "python", v->p->python ? json_string(v->p->python) : json_null());
		json_object_set_new(jv, "python_version",
				    v->p->python_version ? json_string(v->p->python_version) : json_null());
		for (i = 0; i < v->p->target.nr; i++)
			json_array_append_new(target, json_string(v->p->target.v[i]));
		json_object_set_new(jv, "target", target);
		buf_reset(&lim);
		limits_describe(&v->p->limits, &lim);
		json_object_set_new(jv, "limits", json_string(lim.buf));
		for (m = 0; m < M__COUNT; m++)
			if (metric_shown(c, m))
				json_object_set_new(metrics, metric_key[m], json_summary(&v->metric[m]));
		json_object_set_new(jv, "metrics", metrics);
		json_object_set_new(jv, "failed_runs", json_integer((json_int_t)v->nr_failed));
		json_object_set_new(jv, "failure", v->failure ? json_string(v->failure) : json_null());
		json_object_set_new(jv, "not_cold_runs",
				    c->cold ? json_integer((json_int_t)v->nr_not_cold) : json_null());
		for (i = 0; i < v->p->nr_runs; i++) {
			const struct run *r = &v->p->runs[i];
			json_t *jr = json_object();

			json_object_set_new(jr, "warmup", json_boolean(r->warmup));
			json_object_set_new(jr, "status", json_string(run_status_name(r->status)));
			json_object_set_new(jr, "exit_code", json_integer(r->exit_code));
			for (m = 0; m < M__COUNT; m++)
				if (metric_shown(c, m))
					json_object_set_new(jr, metric_key[m],
							    json_i64(run_metric(r, (enum compare_metric)m)));
			json_object_set_new(jr, "cold",
					    r->cold.asked ? json_boolean(cold_figures_took(&r->cold)) : json_null());
			if (!r->warmup) {
				json_object_set_new(jr, "outlier",
						    json_boolean(r->wall_us != UNKNOWN && v->outlier[k]));
				if (r->wall_us != UNKNOWN)
					k++;
			}
			json_array_append_new(runs, jr);
		}
		json_object_set_new(jv, "runs", runs);
		json_array_append_new(vars, jv);
	}
	json_object_set_new(root, "variants", vars);
	for (j = 1; j < c->nr; j++) {
		const struct compare_side *v = &c->v[j];
		json_t *jc = json_object(), *mods = json_array();

		json_object_set_new(jc, "a", json_string("A"));
		json_object_set_new(jc, "b", json_string(v->id));
		for (m = 0; m < M__COUNT; m++) {
			json_t *jm;

			if (!metric_shown(c, m) || !v->metric[m].nr || !c->v[0].metric[m].nr)
				continue;
			jm = json_test(&v->vs.mw[m], v->vs.p_adj[m]);
			json_object_set_new(jm, "ratio", json_real(v->vs.ratio[m]));
			json_object_set_new(jm, "difference_us",
					    json_integer(v->metric[m].s.median - c->v[0].metric[m].s.median));
			json_object_set_new(jc, metric_key[m], jm);
		}
		for (i = 0; i < c->nr_rows; i++) {
			const struct module_diff *d = &c->diffs[j][i];
			const struct module_row *row = &c->rows[d->row];
			json_t *jm;

			if (!d->tested)
				continue;
			jm = d->tested ? json_test(&d->mw, d->p_adj) : json_object();
			json_object_set_new(jm, "module", json_string(row->name));
			json_object_set_new(jm, "a_self_us", json_integer(row->median[0]));
			json_object_set_new(jm, "b_self_us", json_integer(row->median[j]));
			json_object_set_new(jm, "difference_us", json_integer(d->delta));
			json_object_set_new(jm, "a_present", json_integer((json_int_t)row->present[0]));
			json_object_set_new(jm, "b_present", json_integer((json_int_t)row->present[j]));
			json_array_append_new(mods, jm);
		}
		json_object_set_new(jc, "modules", mods);
		json_array_append_new(cmps, jc);
	}
	json_object_set_new(root, "comparisons", cmps);
	text = json_dumps(root, JSON_INDENT(1) | JSON_ENSURE_ASCII);
	json_decref(root);
	buf_release(&lim);
	return text;
}
