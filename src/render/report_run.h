/*
 * The run-level parts of the text report (report_run.c): how the run ended,
 * its times and imports, the processes, the spread of repeated runs, what
 * the limits cost, the findings and the warnings.  report.c and
 * report_summary.c put them together.
 */
#ifndef COLDSTART_REPORT_RUN_H
#define COLDSTART_REPORT_RUN_H

#include "model/profile.h"
#include "render/report_style.h"

/* How run r ended, as the report's status line says it ("exited with status 1", ...). */
void describe_status(const struct profile *p, const struct run *r, struct buf *out);
/* "  while importing a -> b" for the import a process died in; nothing when none was open. */
void describe_open(const struct proc *pr, struct buf *out);
/* "  LABEL  median  (min, max, MAD)" of v[0..n), flagged when unstable; bytes: v in KiB. */
void summary_line(struct buf *out, const char *label, int64_t *v, size_t n, const struct style *st, bool bytes);
/* "  unconstrained   wall ..., imports ... -> 4.1x slower wall ...": nothing without baseline runs. */
void render_baseline(const struct profile *p, struct buf *out, const struct style *st);
/* "What to fix": at most o->top findings, then how many more. */
void render_findings(const struct profile *p, const struct report_opts *o, struct buf *out, const struct style *st);
/* "Warnings": at most o->top, then how many more. */
void render_warnings(const struct profile *p, const struct report_opts *o, struct buf *out, const struct style *st);

/* The time coldstart's own bootstrap and tracer took in pr (KIND_TOOL nodes), left out of import totals. */
int64_t tool_us(const struct proc *pr);
/* The median run's status, times, cgroup figures and imports, under "Run". */
void render_run_summary(const struct profile *p, const struct run *r, const struct view *v, struct buf *out,
			const struct style *st);
/* Every Python process of the run, at most o->top rows: pid, parent, role, lifetime, its own imports. */
void render_processes(const struct run *r, const struct view *v, const struct report_opts *o, struct buf *out,
		      const struct style *st);
/* "Runs": medians and spreads of the measured runs' figures. */
void render_runs_stats(const struct profile *p, struct buf *out, const struct style *st);
/* "Modules across runs": at most o->top modules by median cumulative time. */
void render_module_stats(const struct profile *p, const struct report_opts *o, struct buf *out, const struct style *st);

#endif
