/*
 * Robust summaries of repeated runs.  Module lookups go through a small
 * open-addressing hash so hundreds of runs of thousands of modules stay fast.
 */
#include "model/stats.h"

#include <stdlib.h>
#include <string.h>

#include "iset.h"

/* The hash of module i's name, for the table of profile_module_stats (ctx: the modules). */
static uint64_t module_hash_at(const void *ctx, int32_t i)
{
	return hash_str(((const struct module_stats *)ctx)[i].name);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_stats(const void *a, const void *b)
{
	const struct module_stats *x = a, *y = b;

	if (x->cum.median != y->cum.median)
		return x->cum.median < y->cum.median ? 1 : -1;
	return strcmp(x->name, y->name);
}

void summarize(int64_t *v, size_t nr, struct summary *out)
{
	size_t i, n = 0;
	int64_t *dev;

	memset(out, 0, sizeof(*out));
	out->median = out->min = out->max = out->mad = UNKNOWN;
	for (i = 0; i < nr; i++)
		if (v[i] != UNKNOWN)
			v[n++] = v[i];
	out->n = n;
	if (!n)
		return;
	qsort(v, n, sizeof(*v), cmp_i64);
	out->min = v[0];
	out->max = v[n - 1];
	out->median = n % 2 ? v[n / 2] : i64_mid(v[n / 2 - 1], v[n / 2]);
	dev = xmalloc(st_mult(n, sizeof(*dev)));
	for (i = 0; i < n; i++)
		dev[i] = i64_abs(i64_sub(v[i], out->median));
	qsort(dev, n, sizeof(*dev), cmp_i64);
	out->mad = n % 2 ? dev[n / 2] : i64_mid(dev[n / 2 - 1], dev[n / 2]);
	free(dev);
}

int summary_unstable(const struct summary *s)
{
	return s->n >= 3 && s->median > 0 && i64_mul(s->mad, 10) > s->median;
}

int64_t run_import_total_us(const struct run *r, int include_startup)
{
	return r->nr_procs ? proc_import_total_us(&r->procs[0], include_startup) : UNKNOWN;
}

size_t profile_median_run(const struct profile *p)
{
	int64_t *v = xmalloc(st_mult(p->nr_runs ? p->nr_runs : 1, sizeof(*v)));
	struct summary s;
	size_t i, n = 0, best = 0;
	int64_t best_d = INT64_MAX;

	for (i = 0; i < p->nr_runs; i++)
		if (!p->runs[i].warmup)
			v[n++] = p->runs[i].wall_us;
	summarize(v, n, &s);
	free(v);
	for (i = 0; i < p->nr_runs; i++) {
		int64_t d;

		if (p->runs[i].warmup && n)
			continue;
		d = i64_abs(i64_sub(p->runs[i].wall_us, s.median));
		if (d < best_d) {
			best_d = d;
			best = i;
		}
	}
	return best;
}

struct module_stats *profile_module_stats(const struct profile *p, size_t *nr)
{
	enum metric metric = profile_metric(p);
	struct module_stats *m = NULL;
	struct iset table; /* indexes into m, by name */
	size_t nm = 0, alloc = 0, runs = 0, i, r;
	int64_t **cum = NULL, **self = NULL;
	size_t *present = NULL;

	for (r = 0; r < p->nr_runs; r++)
		if (!p->runs[r].warmup)
			runs++;
	iset_init(&table, 1024);
	for (r = 0; r < p->nr_runs; r++) {
		const struct run *run = &p->runs[r];
		const struct proc *pr;

		if (run->warmup || !run->nr_procs)
			continue;
		pr = &run->procs[0];
		for (i = 0; i < pr->nr_nodes; i++) {
			const char *name = node_name(pr, (int32_t)i);
			uint64_t h;
			size_t k, idx;

			if (pr->nodes[i].flags & (NODE_CACHED | NODE_GC))
				continue;
			if (table.used * 2 >= table.cap)
				iset_grow(&table, module_hash_at, m);
			h = hash_str(name);
			for (k = h & (table.cap - 1); table.slot[k] >= 0; k = (k + 1) & (table.cap - 1))
				if (!strcmp(m[table.slot[k]].name, name))
					break;
			if (table.slot[k] < 0) {
				ALLOC_GROW(m, nm + 1, alloc);
				cum = xrealloc(cum, st_mult(alloc, sizeof(*cum)));
				self = xrealloc(self, st_mult(alloc, sizeof(*self)));
				present = xrealloc(present, st_mult(alloc, sizeof(*present)));
				memset(&m[nm], 0, sizeof(m[nm]));
				m[nm].name = xstrdup(name);
				cum[nm] = xmalloc(st_mult(runs ? runs : 1, sizeof(int64_t)));
				self[nm] = xmalloc(st_mult(runs ? runs : 1, sizeof(int64_t)));
				present[nm] = 0;
				table.slot[k] = (int32_t)nm;
				table.used++;
				nm++;
			}
			idx = (size_t)table.slot[k];
			/* A module appears once per process; keep the first. */
			if (present[idx] < runs && (present[idx] == 0 || m[idx].present != r + 1)) {
				cum[idx][present[idx]] = node_cum_in(pr, (int32_t)i, metric);
				self[idx][present[idx]] = node_self_in(pr, (int32_t)i, metric);
				present[idx]++;
				m[idx].present = r + 1; /* last run seen, fixed below */
			}
		}
	}
	for (i = 0; i < nm; i++) {
		summarize(cum[i], present[i], &m[i].cum);
		summarize(self[i], present[i], &m[i].self);
		m[i].present = present[i];
		free(cum[i]);
		free(self[i]);
	}
	free(cum);
	free(self);
	free(present);
	iset_release(&table);
	if (nm)
		qsort(m, nm, sizeof(*m), cmp_stats);
	*nr = nm;
	return m;
}

void module_stats_free(struct module_stats *m, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		free(m[i].name);
	free(m);
}
