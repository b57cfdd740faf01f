/*
 * The run-level parts of the text report (see report_run.h): how the run
 * ended, its times and imports, the processes, the spread of repeated runs,
 * what the limits cost, the findings and the warnings.
 */
#include "render/report_run.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "model/stats.h"
#include "render/fit.h"

void describe_status(const struct profile *p, const struct run *r, struct buf *out)
{
	switch (r->status) {
	case RUN_EXITED:
		buf_addf(out, "exited with status %d", r->exit_code);
		if (r->exit_code == 78)
			buf_adds(out, " (EX_CONFIG: configuration rejected at start-up)");
		break;
	case RUN_SIGNALED: buf_addf(out, "killed by signal %d (%s)", r->term_signal, strsignal(r->term_signal)); break;
	case RUN_OOM:
		buf_adds(out, "OOM: killed by the memory limit");
		if (p->limits.memory > 0) {
			buf_adds(out, " of ");
			buf_add_bytes(out, p->limits.memory);
		}
		break;
	case RUN_TIMEOUT: buf_adds(out, "timed out: killed by --timeout"); break;
	case RUN_STOPPED: buf_adds(out, "stopped by coldstart after the readiness probe"); break;
	case RUN_NOT_RUN: buf_adds(out, "not run (parsed from a log)"); break;
	}
}

/* The import that was in progress when the process died, from open nodes. */
void describe_open(const struct proc *pr, struct buf *out)
{
	int32_t deepest = -1;
	size_t i;

	for (i = 0; i < pr->nr_nodes; i++)
		if ((pr->nodes[i].flags & NODE_OPEN) && (deepest < 0 || pr->nodes[i].depth >= pr->nodes[deepest].depth))
			deepest = (int32_t)i;
	if (deepest < 0)
		return;
	buf_adds(out, "  while importing ");
	proc_chain(pr, deepest, " -> ", out);
	buf_addch(out, '\n');
}

void summary_line(struct buf *out, const char *label, int64_t *v, size_t n, const struct style *st, bool bytes)
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
void render_baseline(const struct profile *p, struct buf *out, const struct style *st)
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

void render_runs_stats(const struct profile *p, struct buf *out, const struct style *st)
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
#define COLLECT(expr)                                                                                                  \
	do {                                                                                                           \
		n = 0;                                                                                                 \
		for (i = 0; i < p->nr_runs; i++)                                                                       \
			if (!p->runs[i].warmup)                                                                        \
				v[n++] = (expr);                                                                       \
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
	COLLECT(p->runs[i].listening_us);
	summary_line(out, "listening", v, n, st, false);
	COLLECT(p->runs[i].first_response_us > 0 ? p->runs[i].first_response_us : UNKNOWN);
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

void render_module_stats(const struct profile *p, const struct report_opts *o, struct buf *out, const struct style *st)
{
	size_t nr, i, shown = 0;
	struct module_stats *m = profile_module_stats(p, &nr);

	heading(out, st,
		profile_metric(p) == METRIC_CPU ? "Modules across runs (by median cumulative CPU time)"
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

/* The time in coldstart's own bootstrap (KIND_TOOL) of a process: the tracer's overhead at start-up. */
int64_t tool_us(const struct proc *pr)
{
	return proc_tool_us(pr);
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
void render_processes(const struct run *r, const struct view *v, const struct report_opts *o, struct buf *out,
		      const struct style *st)
{
	size_t i, width = report_width(o);
	bool ready = v->ready_ns >= 0;

	heading(out, st,
		ready ? "Processes (each tree holds only the imports its own process made; before and after: "
			"the imports begun before and after ready)"
		      : "Processes (each tree holds only the imports its own process made)");
	buf_addf(out, "  %7s %7s %-12s %9s %9s %7s", "pid", "ppid", "role", "lifetime", "imports", "modules");
	if (v->m == METRIC_CPU)
		buf_addf(out, " %10s", "import CPU");
	if (ready)
		buf_addf(out, " %9s %9s", "before", "after");
	/* As the rows below put it: after the columns, or under them. */
	if (width != FIT_UNLIMITED && fit_cols(strrchr(out->buf, '\n') + 1) + 26 > width)
		buf_addf(out, "\n%12sargv\n", "");
	else
		buf_adds(out, "  argv\n");
	for (i = 0; i < r->nr_procs && i < (size_t)o->top; i++) {
		const struct proc *pr = &r->procs[i];
		size_t modules = 0, k, line_start = out->len, used;
		struct buf argv = BUF_INIT;

		for (k = 0; k < pr->nr_nodes; k++)
			modules += !(pr->nodes[k].flags & (NODE_CACHED | NODE_GC)) && pr->nodes[k].kind != KIND_TOOL;
		buf_adds(out, "  ");
		if (pr->pid > 0)
			buf_addf(out, "%7ld %7ld ", pr->pid, pr->ppid);
		else
			buf_addf(out, "%7s %7s ", "-", "-");
		{
			struct buf role = BUF_INIT;

			fit_add_head(&role, pr->role ? pr->role : (pr->pid > 0 ? "?" : "no trace"), 12);
			buf_addf(out, "%s%*s ", role.buf, (int)(12 - fit_cols(role.buf)), "");
			buf_release(&role);
		}
		add_dur_col(out, proc_lifetime_us(pr), 9);
		buf_addch(out, ' ');
		add_dur_col(out, proc_import_total_us(pr, true) - tool_us(pr), 9);
		buf_addf(out, " %7zu", modules);
		if (v->m == METRIC_CPU) {
			buf_addch(out, ' ');
			add_dur_col(out, proc_import_total_in(pr, true, METRIC_CPU), 10);
		}
		if (ready) {
			int64_t before, after;

			ready_split(pr, v->m, v->ready_ns, &before, &after);
			buf_addch(out, ' ');
			add_dur_col(out, pr->timing ? before : UNKNOWN, 9);
			buf_addch(out, ' ');
			add_dur_col(out, pr->timing ? after : UNKNOWN, 9);
		}
		/* The command within what is left of the width; on a line of its own under the row when little is. */
		used = fit_cols(out->buf + line_start) + 2;
		if (width != FIT_UNLIMITED && used + 24 > width) {
			buf_addf(out, "\n%12s", "");
			used = 12;
		} else {
			buf_adds(out, "  ");
		}
		buf_adds(&argv, pr->argv ? pr->argv : "-");
		if (pr->mixed)
			buf_adds(&argv, " [mixed rows]");
		buf_adds(out, st->dim);
		fit_add_command(out, argv.buf, width == FIT_UNLIMITED ? FIT_UNLIMITED : width - used);
		buf_addf(out, "%s\n", st->reset);
		buf_release(&argv);
	}
	if (i < r->nr_procs)
		buf_addf(out, "  %s… and %zu more (--top %zu shows them all)%s\n", st->dim, r->nr_procs - i,
			 r->nr_procs, st->reset);
}

/*
 * Under a CPU limit: what the imports cost in CPU against their wall time,
 * and the throttling that explains the difference.
 */
static void render_cpu_limit(const struct profile *p, const struct run *r, const struct proc *pr, struct buf *out)
{
	int64_t cpu = proc_import_total_in(pr, true, METRIC_CPU), wall = 0;
	int32_t i;

	for (i = pr->first_root; i >= 0;) {
		bool timed = pr->timing[i].cpu_ns >= 0;

		if (timed && pr->nodes[i].cum_us > 0)
			wall += pr->nodes[i].cum_us;
		i = proc_walk_next(pr, i, !timed);
	}
	buf_adds(out,
		 "  CPU limit       per-module times below are the importing thread's CPU time (wall beside it): ");
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
				buf_adds(
					out,
					" (summed over the CPUs its threads were queued on, hence above the wall time)");
		}
		buf_adds(out, ": the CPU quota, not the code, is most of the difference");
	}
	(void)p;
	buf_addch(out, '\n');
}

/*
 * The collector's pauses during the target's imports: a phase of their own,
 * taken out of the self time of the imports they fell in ("[gc]" nodes).
 * Under a CPU limit in CPU time, as the module tables: a throttled period
 * that began in a pause is in its wall time, which is said beside.
 */
static void render_gc(const struct proc *pr, int64_t target_total, enum metric m, struct buf *out)
{
	struct gc_total g;
	bool cpu = m == METRIC_CPU;

	proc_gc_total(pr, false, m, &g);
	if (g.us <= 0)
		return;
	buf_adds(out, "  gc              ");
	add_dur(out, g.us);
	buf_addf(out, "%s garbage collector pauses during %zu import%s", cpu ? " of CPU in" : " of", g.imports,
		 g.imports == 1 ? "" : "s");
	if (cpu)
		target_total = proc_import_total_in(pr, false, METRIC_CPU);
	if (target_total > 0)
		buf_addf(out, " (%.0f%% of the target's own imports%s)", 100.0 * (double)g.us / (double)target_total,
			 cpu ? "' CPU time" : "");
	if (cpu) {
		bool throttled;

		buf_adds(out, ", ");
		add_dur(out, proc_gc_wall_us(pr, g.us, &throttled));
		buf_adds(out, throttled ? " of wall (throttled periods that began in them included)" : " of wall");
	}
	buf_adds(out, ", not counted in their self time; the most in '");
	buf_adds(out, node_name(pr, g.most));
	buf_adds(out, "' (");
	add_dur(out, g.most_us);
	buf_adds(out, ")\n");
}

void render_run_summary(const struct profile *p, const struct run *r, const struct view *v, struct buf *out,
			const struct style *st)
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
		/* The launcher's time is the wall's, but not the interpreter's lifetime. */
		if (r->launcher_us != UNKNOWN) {
			buf_addf(out, "\n  launcher        %s%s", p->python_launcher ? p->python_launcher : "",
				 p->python_launcher ? ": " : "");
			add_dur(out, r->launcher_us);
			buf_adds(out, " before the interpreter started (in the wall, not in its lifetime)");
		}
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
		buf_adds(out, " after exec");
		if (r->listening_us != UNKNOWN && r->listening_us != r->ready_us) {
			buf_adds(out, "; listening ");
			add_dur(out, r->listening_us);
			buf_adds(out, " after exec");
		}
		/* An http:// answer is readiness itself (0): only Fn's first call comes after. */
		if (r->first_response_us != 0) {
			buf_adds(out, "; first response ");
			add_dur(out, r->first_response_us);
			buf_adds(out, " after ready");
		}
		buf_addch(out, '\n');
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
		if (pr->nodes[i].flags & (NODE_CACHED | NODE_GC) || pr->nodes[i].kind == KIND_TOOL)
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
		buf_addf(out,
			 "  %smixed rows      this tree holds the imports of several processes: without the tracer "
			 "importtime's rows carry no pid (see the warnings); its numbers are not one "
			 "process's%s\n",
			 st->yellow, st->reset);
	render_gc(pr, target_total, v->m, out);
	if (v->m == METRIC_CPU && pr->timing)
		render_cpu_limit(p, r, pr, out);
	if (tool > 0) {
		buf_adds(out, "  coldstart       its bootstrap and tracer took ");
		add_dur(out, tool);
		buf_adds(out, " of the start-up (left out of the totals above)\n");
	}
}

void render_findings(const struct profile *p, const struct report_opts *o, struct buf *out, const struct style *st)
{
	size_t i, shown = (size_t)o->top < p->nr_findings ? (size_t)o->top : p->nr_findings;

	if (!p->nr_findings || !shown)
		return;
	heading(out, st, "What to fix");
	for (i = 0; i < shown; i++) {
		const struct finding *f = &p->findings[i];
		const char *col = f->severity && !strcmp(f->severity, "error")	   ? st->red
				  : f->severity && !strcmp(f->severity, "warning") ? st->yellow
										   : "";

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
	if (shown < p->nr_findings)
		buf_addf(out, "  %s… and %zu more finding%s (--top %zu shows them; all are in the JSON)%s\n", st->dim,
			 p->nr_findings - shown, p->nr_findings - shown == 1 ? "" : "s", p->nr_findings, st->reset);
}

void render_warnings(const struct profile *p, const struct report_opts *o, struct buf *out, const struct style *st)
{
	size_t i, shown = p->nr_warnings < (size_t)o->top ? p->nr_warnings : (size_t)o->top;

	if (!shown)
		return;
	heading(out, st, "Warnings");
	for (i = 0; i < shown; i++) {
		if (p->warnings[i].line)
			buf_addf(out, "  line %ld: %s\n", p->warnings[i].line, p->warnings[i].msg);
		else
			buf_addf(out, "  %s\n", p->warnings[i].msg);
	}
	if (shown < p->nr_warnings)
		buf_addf(out, "  … and %zu more (all of them are in the JSON)\n", p->nr_warnings - shown);
}
