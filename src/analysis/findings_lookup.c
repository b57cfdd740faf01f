/*
 * The rules on finding modules and failed imports (see findings_lookup.h).
 */
#include "analysis/findings_lookup.h"

#include <stdlib.h>
#include <string.h>

static int cmp_i64_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* What finding modules cost one process, from the tracer's find phases (nested imports not counted). */
struct finder_facts {
	int64_t find_ns, failed_ns, top_ns; /* all lookups, failed ones, the FINDER_TOP slowest */
	/*
	 * Of top_ns, at most how much the importing thread was off the CPU
	 * (each slowest lookup's find phase, capped by its import's wall time
	 * less its CPU time); UNKNOWN without CPU times.
	 */
	int64_t top_off_ns;
	int64_t median_ns;
	size_t imports, failed;
	int32_t top[FINDER_TOP]; /* the slowest lookups */
	size_t nr_top;
	const char *path;
	size_t entries;
};

static void finder_facts(const struct proc *pr, struct finder_facts *ff)
{
	int64_t *v = xmalloc(st_mult(pr->nr_nodes + 1, sizeof(*v)));
	size_t e, k;
	int32_t i;

	memset(ff, 0, sizeof(*ff));
	for (i = 0; i < (int32_t)pr->nr_nodes; i++) {
		int64_t f = pr->timing[i].find_ns;
		size_t at;

		if (f < 0 || pr->nodes[i].kind == KIND_TOOL)
			continue;
		v[ff->imports++] = f;
		ff->find_ns = i64_add(ff->find_ns, f);
		if (pr->nodes[i].flags & NODE_FAILED) {
			ff->failed++;
			ff->failed_ns = i64_add(ff->failed_ns, f);
		}
		/* Keep the slowest, largest first. */
		for (at = ff->nr_top; at > 0 && pr->timing[ff->top[at - 1]].find_ns < f; at--)
			if (at < FINDER_TOP)
				ff->top[at] = ff->top[at - 1];
		if (at < FINDER_TOP) {
			ff->top[at] = i;
			if (ff->nr_top < FINDER_TOP)
				ff->nr_top++;
		}
	}
	if (ff->imports) {
		qsort(v, ff->imports, sizeof(*v), cmp_i64_desc);
		ff->median_ns = v[ff->imports / 2];
	}
	for (k = 0; k < ff->nr_top; k++) {
		const struct imp_timing *t = &pr->timing[ff->top[k]];

		ff->top_ns = i64_add(ff->top_ns, t->find_ns);
		if (ff->top_off_ns >= 0 && t->start_ns >= 0 && t->end_ns >= t->start_ns && t->cpu_ns >= 0) {
			int64_t off = t->end_ns - t->start_ns - t->cpu_ns;

			ff->top_off_ns = i64_add(ff->top_off_ns, off < 0 ? 0 : off < t->find_ns ? off : t->find_ns);
		} else {
			ff->top_off_ns = UNKNOWN;
		}
	}
	for (e = 0; e < pr->nr_events; e++)
		if (!strcmp(proc_str(pr, pr->events[e].name), "sys.path")) {
			ff->path = proc_str(pr, pr->events[e].detail);
			ff->entries = strtoul(ff->path, NULL, 10);
		}
	free(v);
}

/* What slow-finders makes of one process's finder facts. */
struct finder_verdict {
	struct finder_facts ff;
	int64_t total, find_us;
	bool share, long_path, failing, slow_each, few;
};

/* Whether finding modules is a finding in pr; v gets the facts either way. */
static bool finder_verdict(const struct proc *pr, struct finder_verdict *v)
{
	struct finder_facts *ff = &v->ff;

	finder_facts(pr, ff);
	v->total = proc_import_total_us(pr, true);
	v->find_us = ff->find_ns / 1000;
	v->share = ff->imports >= FINDER_MIN_LOOKUPS && v->find_us >= FINDER_MIN_US && v->total > 0 &&
		   i64_mul(v->find_us, 100) >= i64_mul(v->total, FINDER_SHARE_PCT);
	v->long_path = ff->entries >= FINDER_PATH_ENTRIES;
	v->failing = v->share && i64_mul(ff->failed_ns, 100) >= i64_mul(ff->find_ns, FINDER_FAILED_PCT);
	v->slow_each = v->share && ff->median_ns / 1000 >= FINDER_SLOW_LOOKUP_US;
	v->few = v->share && i64_mul(ff->top_ns, 100) >= i64_mul(ff->find_ns, FINDER_FEW_PCT);
	return v->long_path || v->failing || v->slow_each || v->few;
}

/*
 * "; in pid 12 (master)", or for several processes whose figures the
 * evidence gives for the first: "; figures of pid 12 (master); the same in
 * all 3 processes: ...".
 */
static void add_held_in(struct buf *ev, const struct run *r, const struct proc_set *s)
{
	if (s->nr > 1) {
		buf_adds(ev, "; figures of ");
		finding_add_who(ev, &r->procs[s->v[0]]);
		buf_adds(ev, "; the same in ");
	} else {
		buf_adds(ev, "; in ");
	}
	findings_add_procs(ev, r, s);
}

/*
 * What the slowest lookups' CPU time says: a thread off the CPU for most of
 * them was blocked (the file system) or, on a busy machine, waiting for a
 * CPU, which one profile cannot tell from a slow finder; one on the CPU was
 * a finder computing.
 */
static void add_off_cpu(struct buf *fix, const struct finder_facts *ff)
{
	if (ff->top_off_ns < 0 || ff->top_ns <= 0)
		return;
	buf_adds(fix, ". Their imports were off the CPU for up to ");
	buf_add_duration(fix, ff->top_off_ns / 1000);
	buf_adds(fix, " of their ");
	buf_add_duration(fix, ff->top_ns / 1000);
	if (i64_mul(ff->top_off_ns, 2) >= ff->top_ns)
		buf_adds(fix, ": blocked on I/O (a slow file system) or, on a busy machine, waiting for a CPU; "
			      "profile again to see whether the same lookups are slow");
	else
		buf_adds(fix, ": the lookups themselves computed (a finder or path hook in Python)");
}

/*
 * slow-finders: finding modules costs a large share of a process's import
 * time, and for a reason the measurement shows: a long sys.path, failing
 * optional imports, lookups slow across the board, or a few very slow ones.
 * Finder time that is just the number of imports times an ordinary lookup
 * is not a finding (heavy-import is about importing less).  The find phase
 * excludes the imports made inside it (a parent package imported first, a
 * finder's own imports).  Every process where it holds is named; the
 * figures are the first one's (the target's when it holds there).  Wall
 * time only: under a CPU limit the phases, which have no CPU times of their
 * own, would measure the scheduler.
 */
static void rule_finders(struct profile *p)
{
	const struct run *r = findings_main_run(p);
	const struct proc *pr = NULL;
	const struct finder_facts *ff;
	struct finder_verdict v, first;
	struct proc_set procs = PROC_SET_INIT;
	struct buf ev = BUF_INIT, fix = BUF_INIT, title = BUF_INIT;
	size_t k, pi;

	if (!r || profile_metric(p) == METRIC_CPU)
		return;
	for (pi = 0; pi < r->nr_procs; pi++) {
		if (!r->procs[pi].timing || finding_helper_process(&r->procs[pi]) || !finder_verdict(&r->procs[pi], &v))
			continue;
		if (!pr) {
			pr = &r->procs[pi];
			first = v;
		}
		proc_set_add(&procs, pi);
	}
	if (!pr)
		return;
	ff = &first.ff;
	buf_adds(&ev, "finding modules took ");
	buf_add_duration(&ev, first.find_us);
	if (first.total > 0)
		buf_addf(&ev, " (%lld%% of ", (long long)(i64_mul(first.find_us, 100) / first.total));
	buf_add_duration(&ev, first.total);
	buf_addf(&ev, " of imports) across %zu lookups, a median of ", ff->imports);
	buf_add_duration(&ev, ff->median_ns / 1000);
	buf_addf(&ev, " each; %zu failed lookups took ", ff->failed);
	buf_add_duration(&ev, ff->failed_ns / 1000);
	buf_adds(&ev, "; the slowest: ");
	for (k = 0; k < ff->nr_top; k++) {
		buf_addf(&ev, "%s'%s' ", k ? ", " : "", node_name(pr, ff->top[k]));
		buf_add_duration(&ev, pr->timing[ff->top[k]].find_ns / 1000);
	}
	if (ff->path)
		buf_addf(&ev, "; sys.path has %s", ff->path);
	add_held_in(&ev, r, &procs);
	if (first.long_path)
		buf_addf(&fix,
			 "sys.path has %zu entries and every top-level import that is not a built-in tries "
			 "them in order: drop unused entries and .pth files, install dependencies into one "
			 "site-packages (or one directory / zipapp), and put the directories most imports "
			 "come from first",
			 ff->entries);
	if (first.failing)
		buf_addf(&fix,
			 "%s%zu imports failed and a failed lookup tries every path entry: install the "
			 "optional dependencies, or stop probing for them at import (see failed-imports)",
			 fix.len ? "; " : "", ff->failed);
	if (first.few) {
		buf_addf(&fix,
			 "%sa few lookups take most of the time (%s'%s' first): look for a meta-path finder "
			 "or path hook that is slow for them (an import hook, a namespace package spread over "
			 "many sys.path entries, a network or overlay file system)",
			 fix.len ? "; " : "", "", node_name(pr, ff->top[0]));
		add_off_cpu(&fix, ff);
	}
	if (first.slow_each && !first.long_path)
		buf_addf(&fix,
			 "%severy lookup is slow (a median of %lld us): check for a slow file system under "
			 "sys.path or an import hook on sys.meta_path that runs before the standard finders",
			 fix.len ? "; " : "", (long long)(ff->median_ns / 1000));
	buf_adds(&title, first.share ? "finders take a large share of import time" : "sys.path is long");
	finding_add_in(p, r, &procs, "slow-finders",
		       first.share && i64_mul(first.find_us, 100) >= i64_mul(first.total, FINDER_WARN_PCT) ? "warning"
													   : "info",
		       NULL, first.find_us, title.buf, ev.buf, fix.buf);
	proc_set_release(&procs);
	buf_release(&ev);
	buf_release(&fix);
	buf_release(&title);
}

/* A module whose import failed, in each process where it did. */
struct failed {
	const char *name;
	size_t times;
};

/*
 * Whether node i of pr failed inside an import that failed too: "import
 * org.python.core" with no org fails three times over (org, org.python,
 * org.python.core), one failure the user wrote once, and the outer import's
 * time holds the inner ones'.
 */
static bool failed_inside_failed(const struct proc *pr, int32_t i)
{
	int32_t a;

	for (a = pr->nodes[i].parent; a >= 0; a = pr->nodes[a].parent)
		if (pr->nodes[a].flags & NODE_FAILED)
			return true;
	return false;
}

/*
 * failed-imports: the imports that raised and whose error was caught, each
 * module once (with how often), over every process where it cost time.  A
 * failure inside a failing import is part of it; under a CPU limit the cost
 * is CPU time (a throttle landing inside a failed lookup is not its cost).
 */
static void rule_failed(struct profile *p)
{
	const struct run *r = findings_main_run(p);
	enum metric m = profile_metric(p);
	struct buf ev = BUF_INIT, title = BUF_INIT;
	struct proc_set procs = PROC_SET_INIT;
	struct failed *v = NULL;
	int64_t cost = 0, us;
	size_t nr = 0, alloc = 0, pi, k, times = 0;
	int32_t i;

	if (!r)
		return;
	for (pi = 0; pi < r->nr_procs; pi++) {
		const struct proc *pr = &r->procs[pi];

		/* Only the tracer sees failed imports: without a trace there is nothing to find. */
		if (!pr->timing || finding_helper_process(pr))
			continue;
		for (i = pr->first_root; i >= 0; i = proc_preorder_next(pr, i)) {
			const struct imp_node *n = &pr->nodes[i];
			const char *nm = node_name(pr, i);

			if (!(n->flags & NODE_FAILED) || (n->flags & NODE_STARTUP) || n->kind == KIND_TOOL ||
			    !strcmp(nm, "sitecustomize") || !strcmp(nm, "usercustomize") || failed_inside_failed(pr, i))
				continue;
			for (k = 0; k < nr && strcmp(v[k].name, nm); k++)
				;
			if (k == nr) {
				ALLOC_GROW(v, nr + 1, alloc);
				v[nr++] = (struct failed){ nm, 0 };
			}
			v[k].times++;
			times++;
			proc_set_add(&procs, pi);
			us = node_cum_in(pr, i, m);
			if (us > 0)
				cost = i64_add(cost, us);
		}
	}
	if (!nr || cost < FAILED_MIN_US)
		goto out;
	for (k = 0; k < nr && k < FINDINGS_LIST_MAX; k++) {
		buf_addf(&ev, "%s'%s'", k ? ", " : "", v[k].name);
		if (v[k].times > 1)
			buf_addf(&ev, " (%zu times)", v[k].times);
	}
	if (nr > k)
		buf_addf(&ev, " and %zu more", nr - k);
	buf_adds(&ev, " raised while being imported and the error was caught; together ");
	buf_add_duration(&ev, cost);
	if (m == METRIC_CPU)
		buf_adds(&ev, " of CPU (under the CPU limit, CPU time: the wall time is the scheduler's as much as "
			      "the code's)");
	buf_adds(&ev, procs.nr > 1 ? " over " : " in ");
	findings_add_procs(&ev, r, &procs);
	buf_addf(&title, "%zu failed import%s cost time at start-up", times, times == 1 ? "" : "s");
	finding_add_in(p, r, &procs, "failed-imports", "info", NULL, cost, title.buf, ev.buf,
		       "install the optional dependency, or stop probing for it at import (decide once, "
		       "e.g. from configuration, and import it where it is used)");
out:
	free(v);
	proc_set_release(&procs);
	buf_release(&ev);
	buf_release(&title);
}

static const struct finding_rule lookup_rules[] = {
	{ .id = "slow-finders", .run = rule_finders },
	{ .id = "failed-imports", .run = rule_failed },
};

const struct finding_rules findings_lookup_rules = { lookup_rules, ARRAY_SIZE(lookup_rules) };
