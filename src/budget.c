/*
 * Budget checks for CI (see budget.h).  Module times are cumulative: a
 * module's budget covers everything its import pulled in.  Under a CPU
 * limit they are the importing thread's CPU time (profile_metric); the
 * start-up budget stays wall time (importtime's rows from before the
 * tracer have no CPU time).
 */
#include "budget.h"

#include <stdlib.h>
#include <string.h>

#include "stats.h"

/* Median across measured runs of a module's cumulative time; UNKNOWN if never imported. */
static int64_t module_median(const struct profile *p, const char *name, bool *seen)
{
	int64_t *v = xmalloc(st_mult(p->nr_runs ? p->nr_runs : 1, sizeof(*v)));
	struct summary s;
	size_t r, n = 0;

	*seen = false;
	for (r = 0; r < p->nr_runs; r++) {
		const struct run *run = &p->runs[r];
		int32_t i;

		if (run->warmup || !run->nr_procs)
			continue;
		i = proc_find(&run->procs[0], name);
		if (i >= 0)
			*seen = true;
		v[n++] = i >= 0 ? node_cum_in(&run->procs[0], i, profile_metric(p)) : 0;
	}
	summarize(v, n, &s);
	free(v);
	return s.median;
}

/* The most negative time among the roots a total counts, or 0. */
static int64_t negative_root(const struct proc *pr, bool include_startup)
{
	int64_t worst = 0;
	int32_t i;

	for (i = pr->first_root; i >= 0; i = pr->nodes[i].next_sibling)
		if ((include_startup || !(pr->nodes[i].flags & NODE_STARTUP)) && pr->nodes[i].cum_us < worst)
			worst = pr->nodes[i].cum_us;
	return worst;
}

/*
 * Median across measured runs of the main process's import total.  A total
 * leaves negative roots out, so one of them in any run makes the gate's
 * figure that negative time: a total it undercounts must not pass.
 */
static int64_t total_median(const struct profile *p, bool include_startup, bool startup_only)
{
	int64_t *v = xmalloc(st_mult(p->nr_runs ? p->nr_runs : 1, sizeof(*v)));
	int64_t worst = 0;
	struct summary s;
	size_t r, n = 0;

	for (r = 0; r < p->nr_runs; r++) {
		const struct run *run = &p->runs[r];
		int64_t neg;

		if (run->warmup || !run->nr_procs)
			continue;
		neg = negative_root(&run->procs[0], include_startup);
		if (neg < worst)
			worst = neg;
		if (startup_only) {
			int64_t all = proc_import_total_us(&run->procs[0], true);

			/* A saturated total says nothing about its parts: fail closed. */
			v[n++] = all == INT64_MAX ? INT64_MAX : all - proc_import_total_us(&run->procs[0], false);
		} else {
			v[n++] = proc_import_total_in(&run->procs[0], include_startup, profile_metric(p));
		}
	}
	summarize(v, n, &s);
	free(v);
	return worst < 0 ? worst : s.median;
}

static size_t measured_runs(const struct profile *p)
{
	size_t r, n = 0;

	for (r = 0; r < p->nr_runs; r++)
		if (!p->runs[r].warmup && p->runs[r].nr_procs)
			n++;
	return n;
}

void budget_init(struct budget *b)
{
	memset(b, 0, sizeof(*b));
	strvec_init(&b->forbid);
}

void budget_release(struct budget *b)
{
	size_t i;

	for (i = 0; i < b->nr; i++)
		free(b->items[i].name);
	free(b->items);
	strvec_clear(&b->forbid);
	budget_init(b);
}

int budget_add(struct budget *b, const char *spec, struct buf *err)
{
	const char *eq = strrchr(spec, '=');
	int64_t us;

	if (!eq || eq == spec || !eq[1]) {
		buf_addf(err, "budget '%s' is not NAME=DURATION (e.g. total=300ms, numpy=50ms)", spec);
		return -1;
	}
	if (parse_duration_us(eq + 1, &us) < 0) {
		buf_addf(err, "budget '%s': '%s' is not a duration such as 300ms, 1.5s or 800us", spec, eq + 1);
		return -1;
	}
	ALLOC_GROW(b->items, b->nr + 1, b->alloc);
	b->items[b->nr].name = xstrndup(spec, (size_t)(eq - spec));
	b->items[b->nr].limit_us = us;
	b->nr++;
	return 0;
}

void budget_forbid(struct budget *b, const char *module)
{
	strvec_push(&b->forbid, module);
}

int budget_check(const struct profile *p, const struct budget *b, struct buf *explain)
{
	size_t i, r;
	int failed = 0;

	if (!measured_runs(p)) {
		buf_addf(explain, "budget: the profile holds no measured run to check\n");
		return -1;
	}
	for (i = 0; i < b->nr; i++) {
		const struct budget_item *it = &b->items[i];
		int64_t got;
		bool seen = true, bad;

		if (!strcmp(it->name, "total"))
			got = total_median(p, true, false);
		else if (!strcmp(it->name, "target"))
			got = total_median(p, false, false);
		else if (!strcmp(it->name, "startup"))
			got = total_median(p, true, true);
		else
			got = module_median(p, it->name, &seen);
		/*
		 * A gate fails closed: a negative time (a damaged or crafted
		 * profile; importtime has printed negative numbers) proves
		 * nothing, and a saturated sum is as large as it says.
		 */
		bad = seen && (got > it->limit_us || got < 0);
		buf_addf(explain, "budget %-4s %s: ", bad ? "FAIL" : "ok", it->name);
		if (!seen)
			buf_adds(explain, "not imported");
		else
			buf_add_duration(explain, got);
		if (seen && got < 0) {
			buf_adds(explain, " (negative: not a time that can pass)");
		} else {
			if (seen && profile_metric(p) == METRIC_CPU && strcmp(it->name, "startup"))
				buf_adds(explain, " of CPU");
			buf_adds(explain, bad ? " > " : " <= ");
			buf_add_duration(explain, it->limit_us);
		}
		buf_addch(explain, '\n');
		if (bad)
			failed = 1;
	}
	for (i = 0; i < b->forbid.nr; i++) {
		const char *name = b->forbid.v[i];
		size_t len = strlen(name);
		bool found = false;

		/* "xml" forbids xml.dom too; every process of every measured run counts. */
		for (r = 0; r < p->nr_runs && !found; r++) {
			const struct run *run = &p->runs[r];
			size_t pi;

			if (run->warmup)
				continue;
			for (pi = 0; pi < run->nr_procs && !found; pi++) {
				const struct proc *pr = &run->procs[pi];
				int32_t k;

				/* In import order, so the first import of it is the one named. */
				for (k = pr->first_root; k >= 0; k = proc_preorder_next(pr, k)) {
					const char *n = node_name(pr, k);

					if (strncmp(n, name, len) || (n[len] && n[len] != '.'))
						continue;
					found = true;
					buf_addf(explain, "forbid FAIL %s: %s imported via ", name, n);
					proc_chain(pr, k, " > ", explain);
					if (pi)
						buf_addf(explain, " (process %zu%s)", pi + 1,
							 pr->argv ? ", a child" : "");
					buf_addch(explain, '\n');
					break;
				}
			}
		}
		if (!found)
			buf_addf(explain, "forbid ok   %s: not imported\n", name);
		else
			failed = 1;
	}
	return failed;
}
