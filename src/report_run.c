/*
 * The run-level parts of the text report (see report_int.h): how the run
 * ended, the spread of repeated runs, what the limits cost, the findings
 * and the warnings.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"
#include "stats.h"

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
void describe_open(const struct proc *pr, struct buf *out)
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

void summary_line(struct buf *out, const char *label, int64_t *v, size_t n, const struct style *st,
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

void render_findings(const struct profile *p, const struct report_opts *o, struct buf *out,
			    const struct style *st)
{
	size_t i, shown = (size_t)o->top < p->nr_findings ? (size_t)o->top : p->nr_findings;

	if (!p->nr_findings || !shown)
		return;
	heading(out, st, "What to fix");
	for (i = 0; i < shown; i++) {
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
