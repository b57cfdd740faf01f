/*
 * The `startup-plan` finding: what a start-up plan could take off the first
 * response, read from a traced profile with a measured first response.
 */
#include "analysis/plan_finding.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/findings.h"

#define PLAN_LIST_MAX 8

struct candidate {
	int32_t node;
	int64_t cum_us;
};

static int cmp_candidate(const void *a, const void *b)
{
	int64_t x = ((const struct candidate *)a)->cum_us, y = ((const struct candidate *)b)->cum_us;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* A library module whose body could wait: pure Python, not the app's, not start-up, done in time. */
static bool deferrable(const struct proc *pr, int32_t i, int64_t until_ns)
{
	const struct imp_node *n = &pr->nodes[i];
	const struct imp_timing *t = &pr->timing[i];

	if (n->flags & (NODE_STARTUP | NODE_NATIVE | NODE_FAILED | NODE_OPEN | NODE_CACHED | NODE_GC))
		return false;
	if (n->kind != KIND_STDLIB && n->kind != KIND_THIRDPARTY)
		return false;
	return t->end_ns != UNKNOWN && t->end_ns <= until_ns;
}

/*
 * How to record a plan for this target: a server probed on its socket
 * (runs[].listening_us is known) is planned with the same probe around its
 * command; an Fn function (a first call answered after ready) with --fn.
 */
static void plan_advice(const struct profile *p, const struct run *r, struct buf *fix)
{
	size_t k;

	if (r->listening_us < 0) {
		buf_adds(fix, "record a start-up plan from sample requests and apply it: `coldstart plan --fn func.py "
			      "handler --request req.json --verify`, then `coldstart-fdk --plan coldstart-plan.json "
			      "func.py handler` (or COLDSTART_PLAN=...; docs/plan.md)");
		return;
	}
	buf_adds(fix, "record a start-up plan while the server answers sample requests: `coldstart plan --ready "
		      "http://127.0.0.1:PORT/PATH --request req.json --verify --");
	/* A script, -m or -c ran under the interpreter; a command is its own. */
	if (p->target.nr && p->python &&
	    (!strcmp(p->target.v[0], "-m") || !strcmp(p->target.v[0], "-c") || ends_with(p->target.v[0], ".py")))
		buf_addf(fix, " %s", p->python);
	for (k = 0; k < p->target.nr; k++)
		buf_addf(fix, " %s", p->target.v[k]);
	buf_adds(fix, "`, then start it with COLDSTART_PLAN=coldstart-plan.json and coldstart's bootstrap on "
		      "PYTHONPATH (docs/plan.md)");
}

/*
 * Whether the target applies a start-up plan already: coldstart's applier
 * (the module coldstart.plan) ran in its first process.  Under a plan the
 * modules it defers are in the tree too, each with its stand-in's cost.
 */
static bool applies_plan(const struct proc *pr)
{
	for (int32_t i = 0; i < (int32_t)pr->nr_nodes; i++)
		if (!strcmp(node_name(pr, i), "coldstart.plan"))
			return true;
	return false;
}

static void rule_startup_plan(struct profile *p)
{
	const struct run *r = findings_main_run(p);
	enum metric m = profile_metric(p);
	const struct proc *pr;
	struct candidate *c = NULL;
	size_t nr = 0, alloc = 0, k, count = 0;
	struct buf title = BUF_INIT, ev = BUF_INIT, when = BUF_INIT, d = BUF_INIT, fix = BUF_INIT;
	struct proc_set target = PROC_SET_INIT;
	int64_t until_ns, total = 0, self;
	int32_t i;
	bool planned;

	if (!r || !r->nr_procs || r->ready_us < 0 || r->first_response_us < 0)
		return;
	pr = &r->procs[0];
	if (!pr->timing)
		return;
	/* Node times count from the process start, which is the exec. */
	until_ns = (r->ready_us + r->first_response_us) * 1000;
	for (i = 0; i < (int32_t)pr->nr_nodes; i++) {
		int32_t up = pr->nodes[i].parent;

		if (!deferrable(pr, i, until_ns))
			continue;
		self = node_self_in(pr, i, m);
		total += self > 0 ? self : 0;
		count++;
		if (up >= 0 && deferrable(pr, up, until_ns))
			continue;
		ALLOC_GROW(c, nr + 1, alloc);
		c[nr].node = i;
		c[nr].cum_us = node_cum_in(pr, i, m);
		nr++;
	}
	if (total < HEAVY_MIN_US)
		goto out;
	qsort(c, nr, sizeof(*c), cmp_candidate);
	buf_add_duration(&d, total);
	buf_add_duration(&when, r->ready_us + r->first_response_us);
	planned = applies_plan(pr);
	if (planned)
		buf_addf(&title, "%s%s of library imports still ran before the first response under a start-up plan",
			 d.buf, m == METRIC_CPU ? " of CPU" : "");
	else
		buf_addf(&title,
			 "%s%s of library imports ran before the first response; `coldstart plan` would defer the "
			 "ones it does not use",
			 d.buf, m == METRIC_CPU ? " of CPU" : "");
	proc_set_add(&target, 0);
	buf_addf(&ev, "%zu pure-Python stdlib and third-party modules finished importing in ", count);
	findings_add_procs(&ev, r, &target);
	buf_addf(&ev, " before the first response (at %s after exec); the outermost, biggest first%s: ", when.buf,
		 m == METRIC_CPU ? ", by CPU time (under the CPU limit the wall time is the scheduler's as much as "
				   "the code's)"
				 : "");
	for (k = 0; k < nr && k < PLAN_LIST_MAX; k++) {
		buf_reset(&d);
		buf_add_duration(&d, c[k].cum_us);
		buf_addf(&ev, "%s%s (%s)", k ? ", " : "", node_name(pr, c[k].node), d.buf);
	}
	if (nr > PLAN_LIST_MAX)
		buf_addf(&ev, " and %zu more", nr - PLAN_LIST_MAX);
	if (planned)
		buf_adds(&fix, "the plan runs these at once: modules its sample requests used, or kept eager for a "
			       "reason it records (each module's `reasons` in the plan file; a module it defers "
			       "shows here with its stand-in's cost only); sample requests closer to the real first "
			       "call, or `coldstart why MODULE PROFILE` for what imports one, show what more can "
			       "wait (docs/plan.md)");
	else
		plan_advice(p, r, &fix);
	finding_add_in(p, r, &target, "startup-plan", "info", NULL, total, title.buf, ev.buf, fix.buf);
out:
	proc_set_release(&target);
	free(c);
	buf_release(&title);
	buf_release(&ev);
	buf_release(&when);
	buf_release(&d);
	buf_release(&fix);
}

static const struct finding_rule plan_rules[] = {
	{ .id = "startup-plan", .run = rule_startup_plan },
};

const struct finding_rules plan_finding_rules = { plan_rules, ARRAY_SIZE(plan_rules) };
