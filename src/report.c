/*
 * The text report: summary of the run(s), where import time went (top
 * modules by cumulative and by self, with their chains, packages), findings,
 * an optional pruned tree, and warnings.
 */
#include "report.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cold.h"
#include "elf_report.h"
#include "stats.h"


struct style {
	const char *bold, *dim, *red, *yellow, *green, *reset;
};

static const struct style plain = { "", "", "", "", "", "" };
static const struct style ansi = { "\033[1m", "\033[2m", "\033[31m", "\033[33m", "\033[32m", "\033[0m" };

static const struct style *style_of(const struct report_opts *o)
{
	return o->color ? &ansi : &plain;
}

static void heading(struct buf *out, const struct style *st, const char *title)
{
	buf_addf(out, "\n%s%s%s\n", st->bold, title, st->reset);
}

static void add_dur_col(struct buf *out, int64_t us, int width)
{
	struct buf d = BUF_INIT;

	if (us == UNKNOWN)
		buf_adds(&d, "-");
	else
		buf_add_duration(&d, us);
	buf_addf(out, "%*s", width, d.buf);
	buf_release(&d);
}

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

static void add_dur(struct buf *out, int64_t us)
{
	if (us == UNKNOWN)
		buf_adds(out, "unknown");
	else
		buf_add_duration(out, us);
}

static int cmp_desc(int64_t a, int64_t b)
{
	return a < b ? 1 : a > b ? -1 : 0;
}

static const struct proc *sort_proc;
static enum metric sort_metric;

/*
 * Ties are broken by the other time, then the name, then the depth, so a
 * report reads the same whatever order the nodes are stored in (a profile
 * read back from JSON is in pre-order, a fresh one in importtime's order).
 */
static int cmp_ties(int32_t a, int32_t b, bool by_self)
{
	const struct imp_node *x = &sort_proc->nodes[a];
	const struct imp_node *y = &sort_proc->nodes[b];
	int c = by_self ? cmp_desc(node_cum_in(sort_proc, a, sort_metric), node_cum_in(sort_proc, b, sort_metric))
			: cmp_desc(node_self_in(sort_proc, a, sort_metric), node_self_in(sort_proc, b, sort_metric));

	if (!c)
		c = strcmp(node_name(sort_proc, a), node_name(sort_proc, b));
	if (!c)
		c = x->depth < y->depth ? -1 : x->depth > y->depth;
	return c;
}

static int cmp_cum(const void *a, const void *b)
{
	int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
	int c = cmp_desc(node_cum_in(sort_proc, i, sort_metric), node_cum_in(sort_proc, j, sort_metric));

	return c ? c : cmp_ties(i, j, false);
}

static int cmp_self(const void *a, const void *b)
{
	int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
	int c = cmp_desc(node_self_in(sort_proc, i, sort_metric), node_self_in(sort_proc, j, sort_metric));

	return c ? c : cmp_ties(i, j, true);
}

/* Whether node a ranks below node b in the table (the heap's order). */
static bool ranks_below(int32_t a, int32_t b, bool by_self)
{
	return (by_self ? cmp_self(&a, &b) : cmp_cum(&a, &b)) > 0;
}

/*
 * The n largest nodes by self or cumulative time, largest first, among those
 * accepted by keep; a bounded min-heap, so a million nodes cost O(N log n).
 */
static size_t top_nodes(const struct proc *pr, enum metric m, bool by_self,
			bool (*keep)(const struct proc *, int32_t), int32_t *out, size_t n)
{
	size_t have = 0, i;

	if (!n)
		return 0;
	sort_proc = pr;
	sort_metric = m;
	for (i = 0; i < pr->nr_nodes; i++) {
		int32_t x = (int32_t)i;
		size_t k;

		if (!keep(pr, x))
			continue;
		if (have == n) {
			if (!ranks_below(out[0], x, by_self))
				continue;
			out[0] = x;
		} else {
			/* Sift up. */
			k = have++;
			out[k] = x;
			while (k && ranks_below(out[k], out[(k - 1) / 2], by_self)) {
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

			if (l < have && ranks_below(out[l], out[mid], by_self))
				mid = l;
			if (r < have && ranks_below(out[r], out[mid], by_self))
				mid = r;
			if (mid == k)
				break;
			t = out[k];
			out[k] = out[mid];
			out[mid] = t;
			k = mid;
		}
	}
	sort_proc = pr;
	sort_metric = m;
	qsort(out, have, sizeof(*out), by_self ? cmp_self : cmp_cum);
	return have;
}

/* Modules worth a row: imported (not a cached row), not coldstart's own bootstrap. */
static bool keep_imported(const struct proc *pr, int32_t i)
{
	return !(pr->nodes[i].flags & NODE_CACHED) && pr->nodes[i].kind != KIND_TOOL;
}

/* The same, where the table's metric was measured. */
static bool keep_cpu(const struct proc *pr, int32_t i)
{
	return keep_imported(pr, i) && pr->timing && pr->timing[i].cpu_ns >= 0;
}

static bool keep_timed(const struct proc *pr, int32_t i)
{
	return pr->timing[i].start_ns >= 0 && !(pr->nodes[i].flags & NODE_CACHED) && pr->nodes[i].kind != KIND_TOOL;
}

void describe_status(const struct profile *p, const struct run *r, struct buf *out)
{
	switch (r->status) {
	case RUN_EXITED:
		buf_addf(out, "exited with status %d", r->exit_code);
		if (r->exit_code == 78)
			buf_adds(out, " (EX_CONFIG: configuration rejected at start-up)");
		break;
	case RUN_SIGNALED:
		buf_addf(out, "killed by signal %d (%s)", r->term_signal, strsignal(r->term_signal));
		break;
	case RUN_OOM:
		buf_adds(out, "OOM: killed by the memory limit");
		if (p->limits.memory > 0) {
			buf_adds(out, " of ");
			buf_add_bytes(out, p->limits.memory);
		}
		break;
	case RUN_TIMEOUT:
		buf_adds(out, "timed out: killed by --timeout");
		break;
	case RUN_STOPPED:
		buf_adds(out, "stopped by coldstart after the readiness probe");
		break;
	case RUN_NOT_RUN:
		buf_adds(out, "not run (parsed from a log)");
		break;
	}
}

/* The import that was in progress when the process died, from open nodes. */
static void describe_open(const struct proc *pr, struct buf *out)
{
	int32_t deepest = -1;
	size_t i;

	for (i = 0; i < pr->nr_nodes; i++)
		if ((pr->nodes[i].flags & NODE_OPEN) &&
		    (deepest < 0 || pr->nodes[i].depth >= pr->nodes[deepest].depth))
			deepest = (int32_t)i;
	if (deepest < 0)
		return;
	buf_adds(out, "  while importing ");
	proc_chain(pr, deepest, " -> ", out);
	buf_addch(out, '\n');
}

static void summary_line(struct buf *out, const char *label, int64_t *v, size_t n, const struct style *st,
			 bool bytes)
{
	struct summary s;

	summarize(v, n, &s);
	if (!s.n)
		return;
	buf_addf(out, "  %-16s", label);
	if (bytes) {
		buf_add_bytes(out, i64_mul(s.median, 1024));
		buf_adds(out, "  (min ");
		buf_add_bytes(out, i64_mul(s.min, 1024));
		buf_adds(out, ", max ");
		buf_add_bytes(out, i64_mul(s.max, 1024));
		buf_adds(out, ", MAD ");
		buf_add_bytes(out, i64_mul(s.mad, 1024));
		buf_adds(out, ")");
	} else {
		add_dur(out, s.median);
		buf_adds(out, "  (min ");
		add_dur(out, s.min);
		buf_adds(out, ", max ");
		add_dur(out, s.max);
		buf_adds(out, ", MAD ");
		add_dur(out, s.mad);
		buf_adds(out, ")");
	}
	if (summary_unstable(&s))
		buf_addf(out, "  %sunstable: spread above 10%% of the median%s", st->yellow, st->reset);
	buf_addch(out, '\n');
}

static void render_runs_stats(const struct profile *p, struct buf *out, const struct style *st)
{
	int64_t *v = xmalloc(st_mult(p->nr_runs, sizeof(*v)));
	size_t i, n;
	size_t measured = 0, warm = 0;

	for (i = 0; i < p->nr_runs; i++) {
		if (!p->runs[i].warmup)
			measured++;
		else if (!p->runs[i].baseline)
			warm++;
	}
	heading(out, st, "Runs");
	buf_addf(out, "  %zu measured run%s", measured, measured == 1 ? "" : "s");
	if (warm)
		buf_addf(out, " after %zu warm-up run%s", warm, warm == 1 ? "" : "s");
	buf_adds(out, "; median, min, max and median absolute deviation\n");
#define COLLECT(expr)                                                  \
	do {                                                           \
		n = 0;                                                 \
		for (i = 0; i < p->nr_runs; i++)                       \
			if (!p->runs[i].warmup)                        \
				v[n++] = (expr);                       \
	} while (0)
	COLLECT(p->runs[i].wall_us);
	summary_line(out, "wall", v, n, st, false);
	COLLECT(run_import_total_us(&p->runs[i], 1));
	summary_line(out, "imports", v, n, st, false);
	if (profile_metric(p) == METRIC_CPU) {
		COLLECT(p->runs[i].nr_procs ? proc_import_total_in(&p->runs[i].procs[0], true, METRIC_CPU) : UNKNOWN);
		summary_line(out, "import CPU", v, n, st, false);
	}
	COLLECT(p->runs[i].user_us);
	summary_line(out, "user CPU", v, n, st, false);
	COLLECT(p->runs[i].sys_us);
	summary_line(out, "sys CPU", v, n, st, false);
	COLLECT(p->runs[i].maxrss_kb);
	summary_line(out, "max RSS", v, n, st, true);
	COLLECT(p->runs[i].ready_us);
	summary_line(out, "ready", v, n, st, false);
	COLLECT(p->runs[i].first_response_us);
	summary_line(out, "first response", v, n, st, false);
	COLLECT(p->runs[i].cg.has ? p->runs[i].cg.throttled_us : UNKNOWN);
	summary_line(out, "throttled", v, n, st, false);
	COLLECT(p->runs[i].cg.has && p->runs[i].cg.memory_peak >= 0 ? p->runs[i].cg.memory_peak / 1024 : UNKNOWN);
	summary_line(out, "peak memory", v, n, st, true);
#undef COLLECT
	{
		size_t bad = 0;

		for (i = 0; i < p->nr_runs; i++)
			if (!p->runs[i].warmup && p->runs[i].status != RUN_EXITED && p->runs[i].status != RUN_STOPPED)
				bad++;
			else if (!p->runs[i].warmup && p->runs[i].status == RUN_EXITED && p->runs[i].exit_code)
				bad++;
		if (bad)
			buf_addf(out, "  %s%zu run%s did not end cleanly (see the JSON for each)%s\n", st->yellow, bad,
				 bad == 1 ? "" : "s", st->reset);
	}
	free(v);
}

static void render_module_stats(const struct profile *p, const struct report_opts *o, struct buf *out,
				const struct style *st)
{
	size_t nr, i, shown = 0;
	struct module_stats *m = profile_module_stats(p, &nr);

	heading(out, st, profile_metric(p) == METRIC_CPU ? "Modules across runs (by median cumulative CPU time)"
							 : "Modules across runs (by median cumulative)");
	buf_addf(out, "  %10s %10s %10s %10s  %s\n", "median", "min", "max", "MAD", "module");
	for (i = 0; i < nr && shown < (size_t)o->top; i++) {
		if (!m[i].cum.n)
			continue; /* not measured in this metric (importtime's rows before the tracer) */
		shown++;
		buf_adds(out, "  ");
		add_dur_col(out, m[i].cum.median, 10);
		buf_addch(out, ' ');
		add_dur_col(out, m[i].cum.min, 10);
		buf_addch(out, ' ');
		add_dur_col(out, m[i].cum.max, 10);
		buf_addch(out, ' ');
		add_dur_col(out, m[i].cum.mad, 10);
		buf_addf(out, "  %s", m[i].name);
		if (summary_unstable(&m[i].cum))
			buf_addf(out, "  %s(unstable)%s", st->yellow, st->reset);
		buf_addch(out, '\n');
	}
	module_stats_free(m, nr);
}

/* What every table of one report shares: the metric, readiness. */
struct view {
	enum metric m;
	int64_t ready_ns; /* UNKNOWN without --ready */
};

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
		heading(out, st, by_self ? "Top modules by self CPU time (the importing thread's)"
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
				add_kib_col(out, t->rss_start_kb >= 0 && t->rss_end_kb >= 0 ? t->rss_end_kb - t->rss_start_kb
											 : UNKNOWN, 10);
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
		if (nd->parent >= 0) {
			buf_addf(out, "  %svia ", st->dim);
			proc_chain(pr, nd->parent, " > ", out);
			buf_adds(out, st->reset);
		}
		buf_addch(out, '\n');
	}
	free(idx);
}

/* Where the slowest imports spent their time, from the tracer's phases. */
static void render_phases(const struct proc *pr, const struct view *v, const struct report_opts *o,
			  struct buf *out, const struct style *st)
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
	heading(out, st, "Phases of the slowest imports (tracer, wall time of the module's own work: find = finders, load = .pyc read / compile / dlopen, exec = module body; nested imports are not counted)");
	buf_addf(out, "  %10s %10s %10s %10s %10s  %s\n", "self", "find", "load", "exec", "compile", "module");
	for (i = 0; i < n && i < (size_t)o->top; i++) {
		const struct imp_timing *t = &pr->timing[idx[i]];
		const struct imp_node *nd = &pr->nodes[idx[i]];

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
		buf_addf(out, "  %s", node_name(pr, idx[i]));
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

static void render_packages(const struct proc *pr, const struct view *v, const struct report_opts *o,
			    struct buf *out, const struct style *st)
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
		buf_addf(out, " %8zu  %s [%s]\n", t[i].modules, t[i].name, kind_name(t[i].kind));
	}
	pkg_totals_free(t, nr);
}

static void render_tree(const struct proc *pr, const struct view *v, const struct report_opts *o,
			struct buf *out, const struct style *st)
{
	int32_t i = pr->first_root;
	size_t hidden = 0;

	heading(out, st, v->m == METRIC_CPU ? "Import tree (CPU cumulative, CPU self)" : "Import tree (cumulative, self)");
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

static void render_findings(const struct profile *p, struct buf *out, const struct style *st)
{
	size_t i;

	if (!p->nr_findings)
		return;
	heading(out, st, "What to fix");
	for (i = 0; i < p->nr_findings; i++) {
		const struct finding *f = &p->findings[i];
		const char *col = f->severity && !strcmp(f->severity, "error") ? st->red
				  : f->severity && !strcmp(f->severity, "warning") ? st->yellow : "";

		buf_addf(out, "  %s[%s]%s %s%s%s", col, f->id, st->reset, st->bold, f->title ? f->title : "",
			 st->reset);
		if (f->cost_us != UNKNOWN) {
			buf_adds(out, " (");
			buf_add_duration(out, f->cost_us);
			buf_adds(out, ")");
		}
		buf_addch(out, '\n');
		if (f->evidence)
			buf_addf(out, "      evidence: %s\n", f->evidence);
		if (f->fix)
			buf_addf(out, "      fix: %s\n", f->fix);
	}
}

static void render_proc(const struct proc *pr, const struct view *v, const struct report_opts *o,
			struct buf *out, const struct style *st)
{
	render_top(pr, v, o, out, st, false);
	render_top(pr, v, o, out, st, true);
	render_phases(pr, v, o, out, st);
	render_packages(pr, v, o, out, st);
	if (o->tree)
		render_tree(pr, v, o, out, st);
}

/* The time in coldstart's own bootstrap (KIND_TOOL) of a process: the tracer's overhead at start-up. */
static int64_t tool_us(const struct proc *pr)
{
	int64_t total = 0;
	int32_t i;

	for (i = pr->first_root; i >= 0;) {
		bool tool = pr->nodes[i].kind == KIND_TOOL;

		if (tool && pr->nodes[i].self_us > 0)
			total += pr->nodes[i].self_us;
		i = proc_walk_next(pr, i, true);
	}
	return total;
}

/*
 * Import time of pr in metric m before and after the ready time (outermost
 * imports), coldstart's bootstrap left out as in the totals.
 */
static void ready_split(const struct proc *pr, enum metric m, int64_t ready_ns, int64_t *before, int64_t *after)
{
	int64_t tool = m == METRIC_WALL ? tool_us(pr) : 0;
	int32_t i;

	*before = -tool;
	*after = 0;
	for (i = pr->first_root; i >= 0; i = pr->nodes[i].next_sibling) {
		int64_t v = node_cum_in(pr, i, m);

		if (v <= 0)
			continue;
		if (node_after_ready(pr, i, ready_ns))
			*after += v;
		else
			*before += v;
	}
}

static void add_lifetime_share(struct buf *out, int64_t total, int64_t life)
{
	if (total >= 0 && life > 0)
		buf_addf(out, " = %.0f%% of its lifetime (", 100.0 * (double)total / (double)life);
	else
		return;
	add_dur(out, life);
	buf_addch(out, ')');
}

/*
 * Every Python process of the run, the target first: how it came to be, how
 * long it lived and what its own imports cost.  Each tree holds only the
 * imports its own process made, so these never add up to the run's.
 */
static void render_processes(const struct run *r, const struct view *v, struct buf *out, const struct style *st)
{
	size_t i;
	bool ready = v->ready_ns >= 0;

	heading(out, st, "Processes (each tree holds only the imports its own process made)");
	buf_addf(out, "  %8s %8s %-16s %10s %10s %8s", "pid", "ppid", "role", "lifetime",
		 v->m == METRIC_CPU ? "imports" : "imports", "modules");
	if (v->m == METRIC_CPU)
		buf_addf(out, " %10s", "import CPU");
	if (ready)
		buf_addf(out, " %12s %12s", "before ready", "after ready");
	buf_adds(out, "  argv\n");
	for (i = 0; i < r->nr_procs; i++) {
		const struct proc *pr = &r->procs[i];
		size_t modules = 0, k;
		struct buf argv = BUF_INIT;

		for (k = 0; k < pr->nr_nodes; k++)
			modules += !(pr->nodes[k].flags & NODE_CACHED) && pr->nodes[k].kind != KIND_TOOL;
		buf_adds(out, "  ");
		if (pr->pid > 0)
			buf_addf(out, "%8ld %8ld", pr->pid, pr->ppid);
		else
			buf_addf(out, "%8s %8s", "-", "-");
		buf_addf(out, " %-16s ", pr->role ? pr->role : (pr->pid > 0 ? "?" : "no trace"));
		add_dur_col(out, proc_lifetime_us(pr), 10);
		buf_addch(out, ' ');
		add_dur_col(out, proc_import_total_us(pr, true) - tool_us(pr), 10);
		buf_addf(out, " %8zu", modules);
		if (v->m == METRIC_CPU) {
			buf_addch(out, ' ');
			add_dur_col(out, proc_import_total_in(pr, true, METRIC_CPU), 10);
		}
		if (ready) {
			int64_t before, after;

			ready_split(pr, v->m, v->ready_ns, &before, &after);
			buf_addch(out, ' ');
			add_dur_col(out, pr->timing ? before : UNKNOWN, 12);
			buf_addch(out, ' ');
			add_dur_col(out, pr->timing ? after : UNKNOWN, 12);
		}
		if (pr->argv) {
			buf_add(&argv, pr->argv, strlen(pr->argv) > 70 ? 67 : strlen(pr->argv));
			if (strlen(pr->argv) > 70)
				buf_adds(&argv, "...");
		}
		buf_addf(out, "  %s%s%s%s\n", st->dim, argv.len ? argv.buf : "-", pr->mixed ? " [mixed rows]" : "",
			 st->reset);
		buf_release(&argv);
	}
}

/*
 * Under a CPU limit: what the imports cost in CPU against their wall time,
 * and the throttling that explains the difference.
 */
static void render_cpu_limit(const struct profile *p, const struct run *r, const struct proc *pr,
			     struct buf *out)
{
	int64_t cpu = proc_import_total_in(pr, true, METRIC_CPU), wall = 0;
	int32_t i;

	for (i = pr->first_root; i >= 0;) {
		bool timed = pr->timing[i].cpu_ns >= 0;

		if (timed && pr->nodes[i].cum_us > 0)
			wall += pr->nodes[i].cum_us;
		i = proc_walk_next(pr, i, !timed);
	}
	buf_adds(out, "  CPU limit       per-module times below are the importing thread's CPU time (wall beside it): ");
	add_dur(out, cpu);
	buf_adds(out, " of CPU took ");
	add_dur(out, wall);
	buf_adds(out, " of wall");
	if (r->cg.has && r->cg.nr_periods > 0) {
		buf_addf(out, "; the cgroup was throttled in %lld of %lld periods of %s", (long long)r->cg.nr_throttled,
			 (long long)r->cg.nr_periods, "100 ms");
		if (r->cg.throttled_us >= 0) {
			buf_adds(out, " for ");
			add_dur(out, r->cg.throttled_us);
			if (r->wall_us > 0 && r->cg.throttled_us > r->wall_us)
				buf_adds(out, " (summed over the CPUs its threads were queued on, hence above the wall time)");
		}
		buf_adds(out, ": the CPU quota, not the code, is most of the difference");
	}
	(void)p;
	buf_addch(out, '\n');
}

static void render_run_summary(const struct profile *p, const struct run *r, const struct view *v,
			       struct buf *out, const struct style *st)
{
	const struct proc *pr = r->nr_procs ? &r->procs[0] : NULL;
	size_t modules = 0, startup = 0, i;
	int64_t total = pr ? proc_import_total_us(pr, true) : 0;
	int64_t target_total = pr ? proc_import_total_us(pr, false) : 0;
	int64_t tool = pr ? tool_us(pr) : 0;

	buf_adds(out, "  status          ");
	describe_status(p, r, out);
	buf_addch(out, '\n');
	if (r->status == RUN_OOM && pr)
		describe_open(pr, out);
	if (r->wall_us != UNKNOWN) {
		buf_adds(out, "  wall            ");
		add_dur(out, r->wall_us);
		buf_adds(out, "\n  CPU             user ");
		add_dur(out, r->user_us);
		buf_adds(out, ", sys ");
		add_dur(out, r->sys_us);
		buf_adds(out, "\n  max RSS         ");
		if (r->maxrss_kb >= 0)
			buf_add_bytes(out, i64_mul(r->maxrss_kb, 1024));
		else
			buf_adds(out, "unknown");
		buf_addch(out, '\n');
	}
	if (r->ready_us != UNKNOWN || r->first_response_us != UNKNOWN) {
		buf_adds(out, "  ready           ");
		add_dur(out, r->ready_us);
		buf_adds(out, " after exec; first response ");
		add_dur(out, r->first_response_us);
		buf_adds(out, " after ready\n");
	}
	if (r->cg.has) {
		buf_adds(out, "  cgroup          CPU ");
		add_dur(out, r->cg.cpu_usage_us);
		buf_addf(out, ", throttled in %lld of %lld periods (", (long long)r->cg.nr_throttled,
			 (long long)r->cg.nr_periods);
		add_dur(out, r->cg.throttled_us);
		buf_adds(out, "), peak memory ");
		if (r->cg.memory_peak >= 0)
			buf_add_bytes(out, r->cg.memory_peak);
		else
			buf_adds(out, "unknown");
		buf_addf(out, ", OOM kills %lld\n", (long long)r->cg.oom_kills);
	}
	if (!pr)
		return;
	for (i = 0; i < pr->nr_nodes; i++) {
		if (pr->nodes[i].flags & NODE_CACHED || pr->nodes[i].kind == KIND_TOOL)
			continue;
		modules++;
		if (pr->nodes[i].flags & NODE_STARTUP)
			startup++;
	}
	buf_addf(out, "  imports         %zu modules (%zu at interpreter start-up), ", modules, startup);
	add_dur(out, total - tool);
	buf_adds(out, " in total");
	if (r->nr_procs > 1)
		buf_addf(out, " in the target's own process (pid %ld)", pr->pid);
	if (pr->pid > 0)
		add_lifetime_share(out, total, proc_lifetime_us(pr));
	else if (r->wall_us > 0)
		buf_addf(out, " = %.0f%% of wall", 100.0 * (double)total / (double)r->wall_us);
	buf_adds(out, "\n                  start-up ");
	add_dur(out, total - target_total - tool);
	buf_adds(out, ", the target's own imports ");
	add_dur(out, target_total);
	if (v->ready_ns >= 0 && pr->timing) {
		int64_t before, after;

		ready_split(pr, METRIC_WALL, v->ready_ns, &before, &after);
		buf_adds(out, "; before ready ");
		add_dur(out, before);
		buf_adds(out, ", after ");
		add_dur(out, after);
	}
	buf_addch(out, '\n');
	if (pr->mixed)
		buf_addf(out, "  %smixed rows      this tree holds the imports of several processes: without the tracer "
			      "importtime's rows carry no pid (see the warnings); its numbers are not one "
			      "process's%s\n",
			 st->yellow, st->reset);
	if (v->m == METRIC_CPU && pr->timing)
		render_cpu_limit(p, r, pr, out);
	if (tool > 0) {
		buf_adds(out, "  coldstart       its bootstrap and tracer took ");
		add_dur(out, tool);
		buf_adds(out, " of the start-up (left out of the totals above)\n");
	}
}

/* Wall times (or import totals) of the unconstrained runs, or of the measured ones. */
static void summarize_runs(const struct profile *p, bool baseline, bool imports, struct summary *out)
{
	int64_t *v = xmalloc(st_mult(p->nr_runs ? p->nr_runs : 1, sizeof(*v)));
	size_t i, n = 0;

	for (i = 0; i < p->nr_runs; i++) {
		const struct run *r = &p->runs[i];

		if (baseline ? !r->baseline || r->wall_us <= 0 : r->warmup)
			continue;
		v[n++] = imports ? run_import_total_us(r, 1) : r->wall_us;
	}
	summarize(v, n, out);
	free(v);
}

/*
 * What the limits cost: the median of the measured runs against the median
 * of the unconstrained ones (as many, unless the profile is older or was
 * made otherwise: then the line says what it compares).
 */
static void render_baseline(const struct profile *p, struct buf *out, const struct style *st)
{
	struct summary wall, imports, base_wall, base_imports;

	summarize_runs(p, true, false, &base_wall);
	summarize_runs(p, true, true, &base_imports);
	summarize_runs(p, false, false, &wall);
	summarize_runs(p, false, true, &imports);
	if (!base_wall.n || !wall.n || base_wall.median <= 0)
		return;
	buf_adds(out, "  unconstrained   wall ");
	add_dur(out, base_wall.median);
	buf_adds(out, ", imports ");
	add_dur(out, base_imports.median);
	buf_addf(out, " -> %s%.1fx slower wall%s", st->bold, (double)wall.median / (double)base_wall.median, st->reset);
	if (imports.n && base_imports.median > 0)
		buf_addf(out, ", %.1fx slower imports", (double)imports.median / (double)base_imports.median);
	buf_adds(out, " under the limits");
	if (base_wall.n == wall.n && wall.n > 1)
		buf_addf(out, " (medians of %zu runs each)", wall.n);
	else if (base_wall.n == 1 && wall.n > 1)
		buf_addf(out, " (one unconstrained run against the median of %zu)", wall.n);
	else if (base_wall.n != wall.n)
		buf_addf(out, " (the median of %zu unconstrained runs against %zu)", base_wall.n, wall.n);
	buf_addch(out, '\n');
}

void report_opts_init(struct report_opts *o)
{
	o->top = 15;
	o->tree = false;
	o->max_depth = -1;
	o->threshold_us = 0;
	o->all_processes = false;
	o->color = false;
}

bool report_want_color(int fd)
{
	const char *nc = getenv("NO_COLOR");
	const char *term = getenv("TERM");

	if (nc && *nc)
		return false;
	if (term && !strcmp(term, "dumb"))
		return false;
	return isatty(fd);
}

void report_render(const struct profile *p, const struct report_opts *o, struct buf *out)
{
	const struct style *st = style_of(o);
	size_t ri = p->nr_runs ? profile_median_run(p) : 0;
	const struct run *r = p->nr_runs ? &p->runs[ri] : NULL;
	struct view v = { METRIC_WALL, UNKNOWN };
	size_t measured = 0, i;

	for (i = 0; i < p->nr_runs; i++)
		if (!p->runs[i].warmup)
			measured++;
	buf_addf(out, "%scoldstart %s%s", st->bold, p->tool_version ? p->tool_version : "", st->reset);
	if (p->target.nr) {
		buf_adds(out, " — ");
		for (i = 0; i < p->target.nr; i++)
			buf_addf(out, "%s%s", i ? " " : "", p->target.v[i]);
	}
	buf_addch(out, '\n');
	buf_addf(out, "  interpreter     %s", p->python ? p->python : "unknown");
	if (p->python_version)
		buf_addf(out, " (Python %s)", p->python_version);
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
		render_processes(r, &v, out, st);
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
	elf_report_section(p, out);
	render_findings(p, out, st);
	if (p->nr_warnings) {
		size_t shown = p->nr_warnings < 10 ? p->nr_warnings : 10;

		heading(out, st, "Warnings");
		for (i = 0; i < shown; i++) {
			if (p->warnings[i].line)
				buf_addf(out, "  line %ld: %s\n", p->warnings[i].line, p->warnings[i].msg);
			else
				buf_addf(out, "  %s\n", p->warnings[i].msg);
		}
		if (shown < p->nr_warnings)
			buf_addf(out, "  ... and %zu more (all of them are in the JSON)\n", p->nr_warnings - shown);
	}
}
