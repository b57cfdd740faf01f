/*
 * The figures of a comparison (see compare_figures.h); the statistics
 * themselves are compare.c's.
 */
#include "render/compare_figures.h"

#include <stdlib.h>
#include <string.h>

#include "iset.h"
#include "render/report_run.h"

static void sample_add(struct sample *s, int64_t v)
{
	if (v == UNKNOWN)
		return;
	s->v = xrealloc(s->v, st_mult(s->nr + 1, sizeof(*s->v)));
	s->v[s->nr++] = v;
}

int64_t compare_run_metric(const struct run *r, enum compare_metric m)
{
	switch (m) {
	case M_WALL: return r->wall_us;
	case M_IMPORTS: return run_import_total_us(r, 1);
	case M_CPU: return r->user_us == UNKNOWN || r->sys_us == UNKNOWN ? UNKNOWN : r->user_us + r->sys_us;
	case M_READY: return r->ready_us;
	case M_LISTENING: return r->listening_us;
	case M_REQ_MEDIAN: return r->requests_median_us;
	case M_REQ_P95: return r->requests_p95_us;
	default: return UNKNOWN;
	}
}

bool compare_metric_shown(const struct comparison *c, size_t m)
{
	if (m == M_REQ_MEDIAN || m == M_REQ_P95)
		return c->requests > 0;
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
				sample_add(&v->metric[m], compare_run_metric(&v->p->runs[i], (enum compare_metric)m));
			if (v->p->runs[i].listening_us != UNKNOWN &&
			    v->p->runs[i].listening_us != v->p->runs[i].ready_us)
				c->listening = true;
			if (run_failed(c, v->p, &v->p->runs[i], &how) && !v->nr_failed++)
				v->failure = buf_detach(&how, NULL);
			if (v->p->runs[i].cold.asked && !cold_figures_took(&v->p->runs[i].cold))
				v->nr_not_cold++;
			v->cold |= v->p->runs[i].cold.asked;
			v->requests_asked += v->p->runs[i].requests_asked;
			v->requests_failed += v->p->runs[i].requests_asked - v->p->runs[i].requests_ok;
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

		if (!compare_metric_shown(c, m)) {
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
		c->v[j].requests_asked = c->v[j].requests_failed = 0;
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
