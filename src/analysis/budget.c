/*
 * Budget checks for CI (see budget.h).  Module times are cumulative: a
 * module's budget covers everything its import pulled in.  Under a CPU
 * limit they are the importing thread's CPU time (profile_metric); the
 * start-up budget stays wall time (importtime's rows from before the
 * tracer have no CPU time).
 */
#include "analysis/budget.h"

#include <stdlib.h>
#include <string.h>

#include "model/stats.h"

/*
 * Median across measured runs of a module's cumulative time, in each run the
 * process where it cost most (a pre-fork server's workers import the app,
 * not its master: every process counts, as for --forbid); UNKNOWN if never
 * imported.
 */
static int64_t module_median(const struct profile *p, const char *name, bool *seen)
{
	int64_t *v = xmalloc(st_mult(p->nr_runs ? p->nr_runs : 1, sizeof(*v)));
	struct summary s;
	size_t r, n = 0, pi;

	*seen = false;
	for (r = 0; r < p->nr_runs; r++) {
		const struct run *run = &p->runs[r];
		int64_t most = 0;

		if (run->warmup || !run->nr_procs)
			continue;
		for (pi = 0; pi < run->nr_procs; pi++) {
			int32_t i = proc_find(&run->procs[pi], name);
			int64_t cum;

			if (i < 0)
				continue;
			*seen = true;
			cum = node_cum_in(&run->procs[pi], i, profile_metric(p));
			/* A negative time fails closed (judge_budget): keep the most negative one. */
			if (cum < 0 || most < 0)
				most = cum < most ? cum : most;
			else if (cum > most)
				most = cum;
		}
		v[n++] = most;
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

static struct budget_verdict *add_verdict(struct budget_verdicts *out, const char *name, bool forbid)
{
	struct budget_verdict *v;

	ALLOC_GROW(out->v, out->nr + 1, out->alloc);
	v = &out->v[out->nr++];
	memset(v, 0, sizeof(*v));
	v->name = name;
	v->forbid = forbid;
	v->seen = true;
	buf_init(&v->text, 0);
	return v;
}

/* Whether module name (or a submodule: "xml" covers xml.dom) is in a tree of any measured run. */
static bool module_anywhere(const struct profile *p, const char *name)
{
	size_t len = strlen(name), r, pi, k;

	for (r = 0; r < p->nr_runs; r++) {
		if (p->runs[r].warmup)
			continue;
		for (pi = 0; pi < p->runs[r].nr_procs; pi++) {
			const struct proc *pr = &p->runs[r].procs[pi];

			for (k = 0; k < pr->nr_nodes; k++) {
				const char *n = node_name(pr, (int32_t)k);

				if (!strncmp(n, name, len) && (!n[len] || n[len] == '.'))
					return true;
			}
		}
	}
	return false;
}

static void judge_budget(const struct profile *p, const struct budget_item *it, struct budget_verdict *v)
{
	struct buf *t = &v->text;
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
	if (!seen) {
		buf_adds(t, "not imported (budget ");
		buf_add_duration(t, it->limit_us);
		buf_addch(t, ')');
	} else {
		buf_add_duration(t, got);
		if (got < 0) {
			buf_adds(t, " (negative: not a time that can pass)");
		} else {
			if (profile_metric(p) == METRIC_CPU && strcmp(it->name, "startup"))
				buf_adds(t, " of CPU");
			buf_adds(t, bad ? " > " : " <= ");
			buf_add_duration(t, it->limit_us);
		}
	}
	v->failed = bad;
	v->seen = seen;
	/* In no process of any measured run: maybe a typo (no submodule either); this budget cannot fail. */
	if (!seen)
		v->unknown = !module_anywhere(p, it->name);
}

static void judge_forbid(const struct profile *p, const char *name, struct budget_verdict *v)
{
	size_t len = strlen(name), r;
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
				buf_addf(&v->text, "%s imported via ", n);
				proc_chain(pr, k, " > ", &v->text);
				if (pi)
					buf_addf(&v->text, " (process %zu%s)", pi + 1, pr->argv ? ", a child" : "");
				break;
			}
		}
	}
	if (!found)
		buf_adds(&v->text, "not imported");
	v->failed = found;
	v->seen = found;
}

int budget_judge(const struct profile *p, const struct budget *b, struct budget_verdicts *out, struct buf *err)
{
	size_t i;

	if (!measured_runs(p)) {
		buf_addf(err, "budget: the profile holds no measured run to check");
		return -1;
	}
	for (i = 0; i < b->nr; i++)
		judge_budget(p, &b->items[i], add_verdict(out, b->items[i].name, false));
	for (i = 0; i < b->forbid.nr; i++)
		judge_forbid(p, b->forbid.v[i], add_verdict(out, b->forbid.v[i], true));
	for (i = 0; i < out->nr; i++) {
		out->failed += out->v[i].failed;
		out->unknown += out->v[i].unknown;
	}
	return 0;
}

void budget_verdicts_release(struct budget_verdicts *vs)
{
	size_t i;

	for (i = 0; i < vs->nr; i++)
		buf_release(&vs->v[i].text);
	free(vs->v);
	memset(vs, 0, sizeof(*vs));
}

void budget_warning(const struct budget_verdict *v, struct buf *out)
{
	buf_addf(out,
		 "budget '%s': no module of that name was imported in any measured run, so it cannot fail "
		 "(a typo? a module of another process?)",
		 v->name);
}

int budget_check(const struct profile *p, const struct budget *b, struct buf *explain)
{
	struct budget_verdicts vs = BUDGET_VERDICTS_INIT;
	struct buf err = BUF_INIT;
	size_t i;
	int ret;

	if (budget_judge(p, b, &vs, &err) < 0) {
		buf_addf(explain, "%s\n", err.buf);
		buf_release(&err);
		return -1;
	}
	for (i = 0; i < vs.nr; i++) {
		const struct budget_verdict *v = &vs.v[i];

		buf_addf(explain, "%s %-4s %s: %s\n", v->forbid ? "forbid" : "budget", v->failed ? "FAIL" : "ok",
			 v->name, v->text.buf);
	}
	for (i = 0; i < vs.nr; i++) {
		if (!vs.v[i].unknown)
			continue;
		buf_adds(explain, "warning: ");
		budget_warning(&vs.v[i], explain);
		buf_addch(explain, '\n');
	}
	ret = vs.failed ? 1 : 0;
	budget_verdicts_release(&vs);
	buf_release(&err);
	return ret;
}
