/*
 * The heavy-import rule (see findings_heavy.h).
 */
#include "analysis/findings_heavy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/finding_serving.h"

struct heavy {
	size_t proc;
	int32_t node;
	int64_t us;
	int64_t total; /* its process's import time */
	bool done; /* reported with another process's */
};

static int cmp_heavy(const void *a, const void *b)
{
	const struct heavy *x = a, *y = b;

	return x->us < y->us ? 1 : x->us > y->us ? -1 : 0;
}

/* The percentage of its process's import time h takes. */
static int64_t heavy_pct(const struct heavy *h)
{
	return i64_mul(h->us, 100) / h->total;
}

/*
 * One finding for a module that is heavy in h[k]'s process (the costliest)
 * and in the other processes where it is heavy too (two workers import the
 * same app): every pid is named, the target's first.
 */
static void heavy_finding(struct profile *p, const struct run *r, struct heavy *h, size_t nr, size_t k, enum metric m)
{
	struct buf ev = BUF_INIT, title = BUF_INIT, fix = BUF_INIT, who = BUF_INIT;
	struct proc_set procs = PROC_SET_INIT;
	const struct proc *pr = &r->procs[h[k].proc];
	const char *nm = node_name(pr, h[k].node), *role = finding_role(pr), *cpu = m == METRIC_CPU ? "CPU " : "";
	int64_t pct = heavy_pct(&h[k]), top = pct;
	bool own = pr->nodes[h[k].node].kind == KIND_APP, one_role = true;
	size_t j;

	proc_set_add(&procs, h[k].proc);
	for (j = k + 1; j < nr; j++) {
		const struct proc *o = &r->procs[h[j].proc];

		if (h[j].done || strcmp(node_name(o, h[j].node), nm))
			continue;
		h[j].done = true;
		proc_set_add(&procs, h[j].proc);
		if (heavy_pct(&h[j]) > top)
			top = heavy_pct(&h[j]);
		if (strcmp(finding_role(o), role))
			one_role = false;
	}
	findings_add_procs(&who, r, &procs);
	if (r->nr_procs == 1 || (procs.nr == 1 && procs.v[0] == 0))
		buf_addf(&title, "'%s' takes %lld%% of the target's import %stime", nm, (long long)pct, cpu);
	else if (procs.nr == 1)
		buf_addf(&title, "'%s' takes %lld%% of the import %stime of %s", nm, (long long)pct, cpu, who.buf);
	else {
		buf_addf(&title, "'%s' takes %s%lld%% of the import %stime of ", nm, top > pct ? "up to " : "",
			 (long long)top, cpu);
		if (procs.nr == r->nr_procs && procs.nr == 2)
			buf_adds(&title, "both ");
		else
			buf_addf(&title, "%s%zu ", procs.nr == r->nr_procs ? "all " : "", procs.nr);
		buf_addf(&title, "%s%s", one_role ? role : "process", one_role && !ends_with(role, "s") ? "s" : "es");
	}
	buf_addf(&ev, "'%s' %s ", nm, own ? "runs its own module code for" : "costs");
	buf_add_duration(&ev, h[k].us);
	buf_adds(&ev, *cpu ? " of CPU of the " : " of the ");
	buf_add_duration(&ev, h[k].total);
	buf_adds(&ev, *cpu ? " of CPU its process spent importing after interpreter start-up (under the CPU limit, "
			     "CPU time: the wall time is the scheduler's as much as the code's)"
			   : " its process spent importing after interpreter start-up");
	if (procs.nr > 1) {
		buf_addf(&ev, " in pid %ld (%s), where it costs most; heavy in ", pr->pid, role);
		buf_add(&ev, who.buf, who.len);
		buf_adds(&ev, "; import chain ");
	} else {
		buf_addf(&ev, "; in %s; import chain ", who.buf);
	}
	proc_chain(pr, h[k].node, " -> ", &ev);
	if (own)
		buf_addf(&fix,
			 "move the work done at module scope of '%s' into functions called when it is "
			 "needed, or compute it at build time",
			 nm);
	else if (!finding_serving_fix(&fix, p, nm))
		buf_addf(&fix,
			 "if start-up does not need it, import '%s' inside the function that uses it "
			 "(or defer it with coldstart's lazy loader); otherwise look for a lighter "
			 "module that does the same",
			 nm);
	finding_add_in(p, r, &procs, "heavy-import", top >= 25 ? "warning" : "info", nm, h[k].us, title.buf, ev.buf,
		       fix.buf);
	proc_set_release(&procs);
	buf_release(&ev);
	buf_release(&title);
	buf_release(&fix);
	buf_release(&who);
}

/*
 * The outermost imports that are not the app's own code and take a large
 * share of their process's import time; the app's own modules are
 * descended into (and reported for their self time when that alone is
 * large).  Every process counts by its own imports (a fork's tree starts at
 * the fork), the target first; imports that began after the target was
 * ready are not on the start-up path and get no advice.
 */
static void collect_heavy(const struct run *r, size_t pi, enum metric m, int64_t ready_ns, struct heavy **h, size_t *nr,
			  size_t *alloc)
{
	const struct proc *pr = &r->procs[pi];
	int64_t total = proc_import_total_in(pr, false, m);
	int32_t i;

	if (total <= 0 || finding_helper_process(pr))
		return;
	for (i = pr->first_root; i >= 0;) {
		const struct imp_node *n = &pr->nodes[i];
		int64_t cum = node_cum_in(pr, i, m), self = node_self_in(pr, i, m);
		bool big = i64_mul(cum, 100) >= i64_mul(total, HEAVY_SHARE_PCT) && cum >= HEAVY_MIN_US;
		bool descend = false;

		if (!(n->flags & (NODE_STARTUP | NODE_GC)) && n->kind != KIND_TOOL && big &&
		    !node_after_ready(pr, i, ready_ns) && !finding_machinery_import(r, pr, i)) {
			descend = n->kind == KIND_APP;
			if (!descend ||
			    (i64_mul(self, 100) >= i64_mul(total, HEAVY_SHARE_PCT) && self >= HEAVY_MIN_US)) {
				ALLOC_GROW(*h, *nr + 1, *alloc);
				(*h)[*nr] = (struct heavy){ pi, i, descend ? self : cum, total, false };
				(*nr)++;
			}
		}
		i = proc_walk_next(pr, i, descend);
	}
}

static void rule_heavy(struct profile *p)
{
	const struct run *r = findings_main_run(p);
	enum metric m = profile_metric(p);
	struct heavy *h = NULL;
	size_t nr = 0, alloc = 0, k, shown = 0, pi;
	int64_t ready_ns;

	if (!r || !r->nr_procs)
		return;
	ready_ns = run_ready_ns(r);
	for (pi = 0; pi < r->nr_procs; pi++)
		collect_heavy(r, pi, m, ready_ns, &h, &nr, &alloc);
	if (nr)
		qsort(h, nr, sizeof(*h), cmp_heavy);
	for (k = 0; k < nr && shown < FINDINGS_LIST_MAX; k++) {
		if (h[k].done)
			continue;
		heavy_finding(p, r, h, nr, k, m);
		shown++;
	}
	free(h);
}

/*
 * A "gc" event's pause in metric m: the wall microseconds after the
 * generation, or the CPU microseconds after them (traces from before the
 * CPU was written have none: -1).
 */
static long long gc_event_us(const char *d, enum metric m)
{
	long long gen, wall, cpu;
	int end = 0; /* set only when the whole "us of CPU" matched: "7 collected" is no CPU time */
	int n = sscanf(d, "generation %lld, %lld us, %lld us of CPU%n", &gen, &wall, &cpu, &end);

	if (n < 2)
		return -1;
	return m == METRIC_WALL ? wall : end > 0 ? cpu : -1;
}

/* The longest single collection of pr in metric m recorded as an event (1 ms or more of wall), SIZE_MAX. */
static size_t longest_gc_event(const struct proc *pr, enum metric m)
{
	size_t e, best = SIZE_MAX;
	long long us, best_us = -1;

	for (e = 0; e < pr->nr_events; e++) {
		if (strcmp(proc_str(pr, pr->events[e].name), "gc"))
			continue;
		us = gc_event_us(proc_str(pr, pr->events[e].detail), m);
		if (us > best_us) {
			best_us = us;
			best = e;
		}
	}
	return best;
}

/*
 * gc-pauses: the garbage collector's pauses during a process's imports (the
 * "[gc]" nodes) take a noticeable share of its import time.  Start-up
 * allocates what lives as long as the process (modules, classes,
 * functions): collections scan it again and again and free little.  Under a
 * CPU limit in CPU time, as heavy-import: a throttled period that began
 * during a pause would otherwise make the collector look like most of it.
 */
static void rule_gc(struct profile *p)
{
	const struct run *r = findings_main_run(p);
	enum metric m = profile_metric(p);
	const char *cpu = m == METRIC_CPU ? " of CPU" : "";
	size_t pi;

	if (!r)
		return;
	for (pi = 0; pi < r->nr_procs; pi++) {
		const struct proc *pr = &r->procs[pi];
		int64_t total = proc_import_total_in(pr, false, m);
		struct gc_total g;
		struct buf ev = BUF_INIT, title = BUF_INIT, fix = BUF_INIT;
		bool throttled;
		struct proc_set one = PROC_SET_INIT;
		size_t e;

		if (total <= 0 || finding_helper_process(pr))
			continue;
		proc_gc_total(pr, false, m, &g);
		if (g.us < GC_MIN_US || i64_mul(g.us, 100) < i64_mul(total, GC_SHARE_PCT))
			continue;
		buf_addf(&title, "garbage collection takes %.0f%% of the imports' %stime",
			 100.0 * (double)g.us / (double)total, *cpu ? "CPU " : "");
		buf_adds(&ev, "the collector paused the imports for ");
		buf_add_duration(&ev, g.us);
		buf_addf(&ev, "%s of the ", cpu);
		buf_add_duration(&ev, total);
		buf_addf(&ev, "%s its process spent importing after interpreter start-up", cpu);
		if (*cpu) {
			buf_adds(&ev, " (under the CPU limit, CPU time: the pauses took ");
			buf_add_duration(&ev, proc_gc_wall_us(pr, g.us, &throttled));
			buf_adds(&ev,
				 throttled ? " of wall, throttled periods that began in them included)" : " of wall)");
		}
		buf_addf(&ev, ", during %zu import%s, the most in '%s' (", g.imports, g.imports == 1 ? "" : "s",
			 node_name(pr, g.most));
		buf_add_duration(&ev, g.most_us);
		buf_adds(&ev, ")");
		e = longest_gc_event(pr, m);
		if (e != SIZE_MAX) {
			buf_addf(&ev, "; the longest pause: %s", proc_str(pr, pr->events[e].detail));
			if (pr->events[e].node >= 0)
				buf_addf(&ev, " while importing '%s'", node_name(pr, pr->events[e].node));
		}
		buf_adds(&ev, "; in ");
		finding_add_who(&ev, pr);
		buf_adds(&fix,
			 "the objects start-up makes (modules, classes, functions) live as long as the process, so "
			 "collections during the imports scan them again and again and free little: call "
			 "gc.disable() before the heavy imports and gc.enable() after them (or raise the first "
			 "threshold for the imports with gc.set_threshold()), then gc.freeze() so later full "
			 "collections skip what start-up made");
		if (pr->role && !strcmp(pr->role, "master"))
			buf_adds(&fix, "; in this pre-fork server call gc.freeze() before the workers are forked, so "
				       "that no worker's collection touches (and copies) the inherited pages");
		proc_set_add(&one, pi);
		finding_add_in(p, r, &one, "gc-pauses", "info", NULL, g.us, title.buf, ev.buf, fix.buf);
		proc_set_release(&one);
		buf_release(&ev);
		buf_release(&title);
		buf_release(&fix);
	}
}

static const struct finding_rule heavy_rules[] = {
	{ .id = "heavy-import", .run = rule_heavy },
	{ .id = "gc-pauses", .run = rule_gc },
};

const struct finding_rules findings_heavy_rules = { heavy_rules, ARRAY_SIZE(heavy_rules) };
