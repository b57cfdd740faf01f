/*
 * The text report: summary of the run(s), where import time went (top
 * modules by cumulative and by self, with their chains, packages), findings,
 * an optional pruned tree, and warnings.
 */
#include "render/report.h"
#include "render/timeline_report.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/classify.h"
#include "sys/cold.h"
#include "analysis/elf_report.h"
#include "render/fit.h"
#include "render/report_run.h"
#include "render/report_summary.h"
#include "model/stats.h"

static void add_kib_col(struct buf *out, int64_t kib, int width)
{
	struct buf d = BUF_INIT;

	if (kib == UNKNOWN)
		buf_adds(&d, "-");
	else
		buf_add_bytes(&d, i64_mul(kib, 1024));
	buf_addf(out, "%*s", width, d.buf);
	buf_release(&d);
}

static int cmp_desc(int64_t a, int64_t b)
{
	return a < b ? 1 : a > b ? -1 : 0;
}

/* What the node comparisons below sort by: the process and the metric (qsort_r's argument). */
struct node_order {
	const struct proc *pr;
	enum metric m;
};

/*
 * Ties are broken by the other time, then the name, then the depth, so a
 * report reads the same whatever order the nodes are stored in (a profile
 * read back from JSON is in pre-order, a fresh one in importtime's order).
 */
static int cmp_ties(const struct node_order *o, int32_t a, int32_t b, bool by_self)
{
	const struct imp_node *x = &o->pr->nodes[a];
	const struct imp_node *y = &o->pr->nodes[b];
	int c = by_self ? cmp_desc(node_cum_in(o->pr, a, o->m), node_cum_in(o->pr, b, o->m))
			: cmp_desc(node_self_in(o->pr, a, o->m), node_self_in(o->pr, b, o->m));

	if (!c)
		c = strcmp(node_name(o->pr, a), node_name(o->pr, b));
	if (!c)
		c = x->depth < y->depth ? -1 : x->depth > y->depth;
	return c;
}

static int cmp_cum(const void *a, const void *b, void *arg)
{
	const struct node_order *o = arg;
	int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
	int c = cmp_desc(node_cum_in(o->pr, i, o->m), node_cum_in(o->pr, j, o->m));

	return c ? c : cmp_ties(o, i, j, false);
}

static int cmp_self(const void *a, const void *b, void *arg)
{
	const struct node_order *o = arg;
	int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
	int c = cmp_desc(node_self_in(o->pr, i, o->m), node_self_in(o->pr, j, o->m));

	return c ? c : cmp_ties(o, i, j, true);
}

/* Whether node a ranks below node b in the table (the heap's order). */
static bool ranks_below(const struct node_order *o, int32_t a, int32_t b, bool by_self)
{
	return (by_self ? cmp_self(&a, &b, (void *)o) : cmp_cum(&a, &b, (void *)o)) > 0;
}

/*
 * The n largest nodes by self or cumulative time, largest first, among those
 * accepted by keep; a bounded min-heap, so a million nodes cost O(N log n).
 */
static size_t top_nodes(const struct proc *pr, enum metric m, bool by_self, bool (*keep)(const struct proc *, int32_t),
			int32_t *out, size_t n)
{
	struct node_order o = { pr, m };
	size_t have = 0, i;

	if (!n)
		return 0;
	for (i = 0; i < pr->nr_nodes; i++) {
		int32_t x = (int32_t)i;
		size_t k;

		if (!keep(pr, x))
			continue;
		if (have == n) {
			if (!ranks_below(&o, out[0], x, by_self))
				continue;
			out[0] = x;
		} else {
			/* Sift up. */
			k = have++;
			out[k] = x;
			while (k && ranks_below(&o, out[k], out[(k - 1) / 2], by_self)) {
				int32_t t = out[k];

				out[k] = out[(k - 1) / 2];
				out[(k - 1) / 2] = t;
				k = (k - 1) / 2;
			}
			continue;
		}
		/* Sift the replaced root down. */
		for (k = 0;;) {
			size_t l = 2 * k + 1, r = l + 1, mid = k;
			int32_t t;

			if (l < have && ranks_below(&o, out[l], out[mid], by_self))
				mid = l;
			if (r < have && ranks_below(&o, out[r], out[mid], by_self))
				mid = r;
			if (mid == k)
				break;
			t = out[k];
			out[k] = out[mid];
			out[mid] = t;
			k = mid;
		}
	}
	qsort_r(out, have, sizeof(*out), by_self ? cmp_self : cmp_cum, &o);
	return have;
}

/*
 * Modules worth a row: imported (not a cached row), not coldstart's own
 * bootstrap, not the collector's pauses (a phase of their own, shown apart).
 */
static bool keep_imported(const struct proc *pr, int32_t i)
{
	return !(pr->nodes[i].flags & (NODE_CACHED | NODE_GC)) && pr->nodes[i].kind != KIND_TOOL;
}

/* The same, where the table's metric was measured. */
static bool keep_cpu(const struct proc *pr, int32_t i)
{
	return keep_imported(pr, i) && pr->timing && pr->timing[i].cpu_ns >= 0;
}

static bool keep_timed(const struct proc *pr, int32_t i)
{
	return pr->timing[i].start_ns >= 0 && !(pr->nodes[i].flags & (NODE_CACHED | NODE_GC)) &&
	       pr->nodes[i].kind != KIND_TOOL;
}

/*
 * "  via a > … > y" after a table row that starts at out->buf[line_start]:
 * the chain of node i's ancestors within what is left of width, or none
 * when too little is left to say anything.
 */
static void add_via(struct buf *out, const struct proc *pr, int32_t i, size_t line_start, size_t width,
		    const struct style *st)
{
	size_t used = fit_cols(out->buf + line_start) + 6;

	if (pr->nodes[i].parent < 0)
		return;
	/* Too little room for at least "… > PARENT" whole: under the row, where the chain has the width. */
	if (width != FIT_UNLIMITED &&
	    (used + 24 > width || used + 4 + fit_cols(node_name(pr, pr->nodes[i].parent)) > width)) {
		/* Too little room after the name: the chain on a line of its own, under the table. */
		buf_addf(out, "\n%12s%svia ", "", st->dim);
		used = 16;
	} else {
		buf_addf(out, "  %svia ", st->dim);
	}
	fit_add_chain(out, pr, i, width == FIT_UNLIMITED ? FIT_UNLIMITED : width - used);
	buf_adds(out, st->reset);
}

/* The module column of a table row begun at out->buf[line_start]: the name within what is left of width. */
static void add_name_col(struct buf *out, const char *name, size_t line_start, size_t width)
{
	size_t used = fit_cols(out->buf + line_start);

	if (width == FIT_UNLIMITED || used + 16 > width)
		buf_adds(out, name);
	else
		fit_add(out, name, width - used);
}

static void render_top(const struct proc *pr, const struct view *v, const struct report_opts *o, struct buf *out,
		       const struct style *st, bool by_self)
{
	bool cpu = v->m == METRIC_CPU;
	int32_t *idx;
	size_t n, i;

	if (!pr->nr_nodes || o->top <= 0)
		return;
	idx = xmalloc(st_mult((size_t)o->top, sizeof(*idx)));
	n = top_nodes(pr, v->m, by_self, cpu ? keep_cpu : keep_imported, idx, (size_t)o->top);
	if (cpu)
		heading(out, st,
			by_self ? "Top modules by self CPU time (the importing thread's)"
				: "Top modules by cumulative CPU time (the importing thread's)");
	else
		heading(out, st, by_self ? "Top modules by self time" : "Top modules by cumulative time");
	if (cpu)
		buf_addf(out, "  %10s %10s %10s %10s %10s  %s\n", "CPU cum", "CPU self", "wall cum", "wall self",
			 "starts at", "module (import chain)");
	else if (pr->timing)
		buf_addf(out, "  %10s %10s %10s %10s  %s\n", "cumulative", "self", "starts at", "RSS +",
			 "module (import chain)");
	else
		buf_addf(out, "  %10s %10s  %s\n", "cumulative", "self", "module (import chain)");
	for (i = 0; i < n && i < (size_t)o->top; i++) {
		const struct imp_node *nd = &pr->nodes[idx[i]];
		size_t line_start = out->len;

		buf_adds(out, "  ");
		if (cpu) {
			add_dur_col(out, node_cum_in(pr, idx[i], METRIC_CPU), 10);
			buf_addch(out, ' ');
			add_dur_col(out, node_self_in(pr, idx[i], METRIC_CPU), 10);
			buf_addch(out, ' ');
		}
		add_dur_col(out, nd->cum_us, 10);
		buf_addch(out, ' ');
		add_dur_col(out, nd->self_us, 10);
		if (pr->timing) {
			const struct imp_timing *t = &pr->timing[idx[i]];

			buf_addch(out, ' ');
			add_dur_col(out, t->start_ns >= 0 ? t->start_ns / 1000 : UNKNOWN, 10);
			if (!cpu) {
				buf_addch(out, ' ');
				add_kib_col(out,
					    t->rss_start_kb >= 0 && t->rss_end_kb >= 0 ? t->rss_end_kb - t->rss_start_kb
										       : UNKNOWN,
					    10);
			}
		}
		buf_addf(out, "  %s%s%s", st->bold, node_name(pr, idx[i]), st->reset);
		if (nd->kind == KIND_STARTUP)
			buf_adds(out, " [start-up]");
		if (node_after_ready(pr, idx[i], v->ready_ns))
			buf_adds(out, " [after ready]");
		if (nd->flags & NODE_FAILED)
			buf_addf(out, " %s[failed]%s", st->red, st->reset);
		if (nd->flags & NODE_INCONSISTENT)
			buf_addf(out, " %s[inconsistent]%s", st->yellow, st->reset);
		if (nd->flags & NODE_TRACE_ONLY)
			buf_adds(out, " [no importtime row]");
		if (nd->flags & NODE_OPEN)
			buf_addf(out, " %s[unfinished]%s", st->red, st->reset);
		add_via(out, pr, idx[i], line_start, report_width(o), st);
		buf_addch(out, '\n');
	}
	free(idx);
}

/* Where the slowest imports spent their time, from the tracer's phases. */
static void render_phases(const struct proc *pr, const struct view *v, const struct report_opts *o, struct buf *out,
			  const struct style *st)
{
	int32_t *idx;
	size_t n, i;

	if (!pr->timing || !pr->nr_nodes || o->top <= 0)
		return;
	idx = xmalloc(st_mult((size_t)o->top, sizeof(*idx)));
	n = top_nodes(pr, v->m, true, keep_timed, idx, (size_t)o->top);
	if (!n) {
		free(idx);
		return;
	}
	heading(out, st,
		"Phases of the slowest imports (tracer, wall time of the module's own work: find = finders, load = .pyc read / compile / dlopen, exec = module body; nested imports are not counted; gc = the garbage collector's pauses during it, not in self)");
	buf_addf(out, "  %10s %10s %10s %10s %10s %10s  %s\n", "self", "find", "load", "exec", "compile", "gc",
		 "module");
	for (i = 0; i < n && i < (size_t)o->top; i++) {
		const struct imp_timing *t = &pr->timing[idx[i]];
		const struct imp_node *nd = &pr->nodes[idx[i]];
		size_t line_start = out->len;

		buf_adds(out, "  ");
		add_dur_col(out, nd->self_us, 10);
		buf_addch(out, ' ');
		add_dur_col(out, t->find_ns >= 0 ? t->find_ns / 1000 : UNKNOWN, 10);
		buf_addch(out, ' ');
		add_dur_col(out, t->load_ns >= 0 ? t->load_ns / 1000 : UNKNOWN, 10);
		buf_addch(out, ' ');
		add_dur_col(out, t->exec_ns >= 0 ? t->exec_ns / 1000 : UNKNOWN, 10);
		buf_addch(out, ' ');
		add_dur_col(out, t->compile_ns >= 0 ? t->compile_ns / 1000 : UNKNOWN, 10);
		buf_addch(out, ' ');
		if (node_gc_in(pr, idx[i], METRIC_WALL) > 0)
			add_dur_col(out, node_gc_in(pr, idx[i], METRIC_WALL), 10);
		else
			buf_addf(out, "%10s", "-");
		buf_adds(out, "  ");
		add_name_col(out, node_name(pr, idx[i]), line_start, report_width(o));
		if (nd->flags & NODE_NATIVE)
			buf_adds(out, " [native]");
		if (nd->flags & NODE_COMPILED)
			buf_addf(out, " %s[compiled]%s", st->yellow, st->reset);
		if (nd->flags & NODE_FAILED)
			buf_addf(out, " %s[failed]%s", st->red, st->reset);
		buf_addch(out, '\n');
	}
	free(idx);
}

static void render_packages(const struct proc *pr, const struct view *v, const struct report_opts *o, struct buf *out,
			    const struct style *st)
{
	size_t nr, i;
	struct pkg_total *t = proc_package_totals(pr, v->m, &nr);

	heading(out, st, v->m == METRIC_CPU ? "By top-level package (CPU time)" : "By top-level package");
	buf_addf(out, "  %10s %10s %8s  %s\n", "cumulative", "self", "modules", "package");
	for (i = 0; i < nr && i < (size_t)o->top; i++) {
		buf_adds(out, "  ");
		add_dur_col(out, t[i].cum_us, 10);
		buf_addch(out, ' ');
		add_dur_col(out, t[i].self_us, 10);
		if (!strcmp(t[i].name, GC_NODE_NAME))
			buf_addf(out, " %8s  %s (the garbage collector's pauses during imports)\n", "-", t[i].name);
		else
			buf_addf(out, " %8zu  %s [%s]\n", t[i].modules, t[i].name, kind_name(t[i].kind));
	}
	pkg_totals_free(t, nr);
}

static void render_tree(const struct proc *pr, const struct view *v, const struct report_opts *o, struct buf *out,
			const struct style *st)
{
	int32_t i = pr->first_root;
	size_t hidden = 0;

	heading(out, st,
		v->m == METRIC_CPU ? "Import tree (CPU cumulative, CPU self)" : "Import tree (cumulative, self)");
	if (o->threshold_us > 0 || o->max_depth >= 0) {
		buf_adds(out, "  pruned:");
		if (o->threshold_us > 0) {
			buf_adds(out, " subtrees under ");
			buf_add_duration(out, o->threshold_us);
		}
		if (o->max_depth >= 0)
			buf_addf(out, " deeper than %d", o->max_depth);
		buf_addch(out, '\n');
	}
	while (i >= 0) {
		const struct imp_node *nd = &pr->nodes[i];
		int64_t cum = node_cum_in(pr, i, v->m);
		bool show = (cum >= o->threshold_us || (cum == UNKNOWN && nd->cum_us >= o->threshold_us)) &&
			    (o->max_depth < 0 || (int)nd->depth <= o->max_depth);
		uint32_t d;

		if (show) {
			buf_adds(out, "  ");
			add_dur_col(out, cum, 10);
			buf_addch(out, ' ');
			add_dur_col(out, node_self_in(pr, i, v->m), 10);
			buf_adds(out, "  ");
			for (d = 0; d < nd->depth && d < 200; d++)
				buf_adds(out, "  ");
			if (nd->depth >= 200)
				buf_addf(out, "(+%u levels) ", nd->depth - 200);
			buf_adds(out, node_name(pr, i));
			if (nd->flags & NODE_GC)
				buf_adds(out, " (garbage collector pauses)");
			if (nd->flags & NODE_CACHED)
				buf_adds(out, " (cached)");
			if (nd->kind == KIND_TOOL)
				buf_adds(out, " [coldstart]");
			if (node_after_ready(pr, i, v->ready_ns))
				buf_adds(out, " [after ready]");
			if (nd->flags & NODE_FAILED)
				buf_addf(out, " %s[failed]%s", st->red, st->reset);
			if (nd->flags & NODE_TRACE_ONLY)
				buf_adds(out, " [no importtime row]");
			buf_addch(out, '\n');
		} else {
			hidden++;
		}
		/* Pre-order, skipping the children of hidden nodes. */
		i = proc_walk_next(pr, i, show);
	}
	if (hidden)
		buf_addf(out, "  %s(%zu subtrees hidden by the pruning options)%s\n", st->dim, hidden, st->reset);
}

static void render_proc(const struct proc *pr, const struct view *v, const struct report_opts *o, struct buf *out,
			const struct style *st)
{
	render_top(pr, v, o, out, st, false);
	render_top(pr, v, o, out, st, true);
	render_phases(pr, v, o, out, st);
	render_packages(pr, v, o, out, st);
	if (o->tree)
		render_tree(pr, v, o, out, st);
}

static void render_all(const struct profile *p, const struct report_opts *o, struct buf *out)
{
	const struct style *st = style_of(o);
	size_t ri = p->nr_runs ? profile_median_run(p) : 0;
	const struct run *r = p->nr_runs ? &p->runs[ri] : NULL;
	struct view v = { METRIC_WALL, UNKNOWN };
	size_t measured = 0, i;

	for (i = 0; i < p->nr_runs; i++)
		if (!p->runs[i].warmup)
			measured++;
	heading(out, st, "Run");
	buf_addf(out, "  coldstart       %s\n", p->tool_version ? p->tool_version : "unknown version");
	if (p->target.nr) {
		buf_adds(out, "  target          ");
		for (i = 0; i < p->target.nr; i++)
			buf_addf(out, "%s%s", i ? " " : "", p->target.v[i]);
		buf_addch(out, '\n');
	}
	buf_addf(out, "  interpreter     %s", p->python ? p->python : "unknown");
	if (p->python_version)
		buf_addf(out, " (Python %s)", p->python_version);
	if (p->python_launcher)
		buf_addf(out, ", a %s: it runs %s", p->python_launcher,
			 p->python_executable ? p->python_executable : "the interpreter");
	buf_addch(out, '\n');
	if (limits_any(&p->limits) || p->limits.backend) {
		buf_adds(out, "  limits          ");
		limits_describe(&p->limits, out);
		buf_addch(out, '\n');
	}
	if (!r) {
		buf_adds(out, "  no runs in this profile\n");
		return;
	}
	if (measured > 1) {
		size_t k = 0;

		/* Counted among the measured runs, as the exports' --run is not: baseline and warm-ups aside. */
		for (i = 0; i < ri; i++)
			k += !p->runs[i].warmup;
		buf_addf(out, "  run shown       #%zu of %zu measured (the median by wall time; run %zu of the JSON)\n",
			 k + 1, measured, ri + 1);
	}
	if (r->cold.asked) {
		buf_adds(out, "  cold start      ");
		cold_describe(&r->cold, out);
		buf_addch(out, '\n');
	}
	v.m = profile_metric(p);
	v.ready_ns = run_ready_ns(r);
	render_run_summary(p, r, &v, out, st);
	render_baseline(p, out, st);
	if (measured > 1) {
		render_runs_stats(p, out, st);
		render_module_stats(p, o, out, st);
	}
	if (r->nr_procs > 1)
		render_processes(r, &v, o, out, st);
	if (r->nr_procs) {
		render_proc(&r->procs[0], &v, o, out, st);
		for (i = 1; i < r->nr_procs && o->all_processes; i++) {
			const struct proc *pr = &r->procs[i];
			struct buf title = BUF_INIT;

			buf_addf(&title, "Process %zu", i + 1);
			if (pr->pid >= 0)
				buf_addf(&title, " (pid %ld", pr->pid);
			if (pr->pid >= 0 && pr->role)
				buf_addf(&title, ", %s", pr->role);
			if (pr->pid >= 0)
				buf_addch(&title, ')');
			if (pr->argv)
				buf_addf(&title, ": %s", pr->argv);
			heading(out, st, title.buf);
			render_proc(pr, &v, o, out, st);
			buf_release(&title);
		}
		if (r->nr_procs > 1 && !o->all_processes)
			buf_addf(out, "\n  %s(the other processes' imports: --all-processes)%s\n", st->dim, st->reset);
	}
	timeline_report_section(p, r, o->top, o->all_processes, out);
	elf_report_section(p, (size_t)o->top, out);
	render_findings(p, o, out, st);
	render_warnings(p, o, out, st);
}

void report_render(const struct profile *p, const struct report_opts *o, struct buf *out)
{
	struct buf raw = BUF_INIT;

	report_summary(p, o, &raw);
	render_all(p, o, &raw);
	fit_reflow(out, raw.buf, report_width(o));
	buf_release(&raw);
}
