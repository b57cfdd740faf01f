/*
 * The "Start-up beyond imports" section of the text report
 * (timeline_report.h), from the processes' timelines.
 */
#include "render/timeline_report.h"

#include <stdlib.h>

#include "model/timeline.h"

static const char *end_phrase(enum tl_end e)
{
	switch (e) {
	case TL_END_READY: return "time to ready";
	case TL_END_FIRST_RESPONSE: return "to first response";
	case TL_END_EXIT: return "exec to exit";
	default: return "until killed";
	}
}

static void part(struct buf *out, const char *label, int64_t us, int64_t total, int64_t cpu_us)
{
	buf_adds(out, label);
	buf_addch(out, ' ');
	buf_add_duration(out, us);
	if (total > 0)
		buf_addf(out, " (%.0f%%", 100.0 * (double)us / (double)total);
	if (cpu_us >= 0) {
		buf_adds(out, total > 0 ? ", CPU " : " (CPU ");
		buf_add_duration(out, cpu_us);
	}
	if (total > 0 || cpu_us >= 0)
		buf_addch(out, ')');
}

static void render_split(const struct timeline *tl, struct buf *out)
{
	struct tl_split sp;

	timeline_split(tl, &sp);
	buf_addf(out, "  %-15s ", end_phrase(tl->end));
	buf_add_duration(out, sp.total_us);
	if (sp.total_cpu_us >= 0) {
		buf_adds(out, " wall, ");
		buf_add_duration(out, sp.total_cpu_us);
		buf_adds(out, " CPU of the main thread");
	}
	if (sp.wait_us * 20 >= sp.total_us && sp.wait_us > 0) {
		/* Runnable but not running: the quota's throttling, or other processes. */
		buf_adds(out, ", ");
		buf_add_duration(out, sp.wait_us);
		buf_adds(out, " of it waiting for a CPU");
	}
	buf_adds(out, "\n    ");
	part(out, "interpreter start-up", sp.startup_us, sp.total_us, sp.startup_cpu_us);
	buf_adds(out, "\n    ");
	part(out, "imports", sp.import_us, sp.total_us, sp.import_cpu_us);
	buf_adds(out, "\n    ");
	part(out, "other Python work", sp.other_us, sp.total_us, sp.other_cpu_us);
	buf_addch(out, '\n');
	if (sp.gc_us) {
		buf_adds(out, "    ");
		part(out, "garbage collection", sp.gc_us, sp.total_us, sp.gc_cpu_us);
		buf_addch(out, '\n');
	}
	if (sp.shutdown_us) {
		buf_adds(out, "    ");
		part(out, "interpreter shutdown", sp.shutdown_us, sp.total_us, sp.shutdown_cpu_us);
		buf_addch(out, '\n');
	}
}

static void render_functions(const struct timeline *tl, bool by_cpu, int top, struct buf *out)
{
	struct tl_func *f = xmalloc(st_mult(top > 0 ? (size_t)top : 1, sizeof(*f)));
	size_t n = timeline_top_functions(tl, by_cpu, f, top > 0 ? (size_t)top : 0), i;

	if (!n) {
		free(f);
		return;
	}
	buf_addf(out, "  %-52s %9s %9s %9s\n",
		 by_cpu ? "functions outside imports, by CPU" : "functions outside imports", "total", "self", "CPU");
	for (i = 0; i < n; i++) {
		struct buf d = BUF_INIT, chain = BUF_INIT;
		const char *name = tl_str(tl, f[i].name);

		buf_addf(out, "  %-52s", name);
		buf_add_duration(&d, f[i].total_us);
		buf_addf(out, " %9s", d.buf);
		buf_reset(&d);
		buf_add_duration(&d, f[i].self_us);
		buf_addf(out, " %9s", d.buf);
		buf_reset(&d);
		buf_add_duration(&d, f[i].total_cpu_us);
		buf_addf(out, " %9s\n", d.buf);
		timeline_chain(tl, tl->nodes[f[i].node].parent, 3, &chain);
		if (chain.len)
			buf_addf(out, "      from %s\n", chain.buf);
		buf_release(&d);
		buf_release(&chain);
	}
	free(f);
}

/* launcher_us: the time a launcher took before the interpreter's exec, where pr's timeline starts; UNKNOWN. */
static void render_one(const struct proc *pr, const char *what, const char *launcher, int64_t launcher_us, bool by_cpu,
		       int top, struct buf *out)
{
	const struct timeline *tl = pr->timeline;

	buf_addf(out, "\nStart-up beyond imports (%s", what);
	if (pr->pid > 0)
		buf_addf(out, ", pid %ld", pr->pid);
	buf_addf(out, "; sampled every ");
	buf_add_duration(out, tl->interval_us);
	buf_adds(out, ")\n");
	if (launcher_us >= 0) {
		buf_addf(out, "  %-15s ", "launcher");
		buf_add_duration(out, launcher_us);
		buf_addf(out, " (%s) before the interpreter's exec, where this timeline starts\n",
			 launcher ? launcher : "a command that exec'd the interpreter");
	}
	render_split(tl, out);
	render_functions(tl, by_cpu, top, out);
}

void timeline_report_section(const struct profile *p, const struct run *r, int top, bool all_processes, struct buf *out)
{
	/*
	 * Under a CPU limit wall time measures the scheduler as much as the
	 * code: functions are ranked by the CPU time they used.
	 */
	bool by_cpu = p->limits.cpus > 0 || r->cg.nr_throttled > 0;
	size_t i;

	for (i = 0; i < r->nr_procs; i++) {
		if (!r->procs[i].timeline)
			continue;
		if (i && !all_processes)
			break;
		render_one(&r->procs[i], i ? "another process" : "the target's process", p->python_launcher,
			   i ? UNKNOWN : r->launcher_us, by_cpu, top, out);
	}
}
