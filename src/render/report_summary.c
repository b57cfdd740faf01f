/*
 * The three lines a text report opens with: what ran and under which limits;
 * wall, ready and first response; the import total and the worst finding.
 * The sections below them hold the detail.
 */
#include "render/report_summary.h"

#include <stdlib.h>
#include <string.h>

#include "render/fit.h"
#include "render/report_run.h"
#include "model/stats.h"

/* How bad a finding is, for choosing the one the summary names. */
static int severity_rank(const char *severity)
{
	if (!severity)
		return 0;
	if (!strcmp(severity, "error"))
		return 3;
	if (!strcmp(severity, "warning"))
		return 2;
	return !strcmp(severity, "info");
}

/* The finding of the highest severity, the costliest among those; NULL when none. */
static const struct finding *worst_finding(const struct profile *p)
{
	const struct finding *w = NULL;
	size_t i;

	for (i = 0; i < p->nr_findings; i++) {
		const struct finding *f = &p->findings[i];
		int d = w ? severity_rank(f->severity) - severity_rank(w->severity) : 1;

		if (d > 0 || (!d && f->cost_us != UNKNOWN && (w->cost_us == UNKNOWN || f->cost_us > w->cost_us)))
			w = f;
	}
	return w;
}

/* The target as a shell would take it back: words with spaces or quotes quoted. */
static void add_target(struct buf *out, const struct profile *p)
{
	size_t i;

	for (i = 0; i < p->target.nr; i++) {
		const char *w = p->target.v[i];

		if (i)
			buf_addch(out, ' ');
		if (*w && !w[strcspn(w, " \t'\"\\$`;&|<>()*?")]) {
			buf_adds(out, w);
			continue;
		}
		buf_addch(out, '\'');
		for (; *w; w++) {
			if (*w == '\'')
				buf_adds(out, "'\\''");
			else
				buf_addch(out, *w);
		}
		buf_addch(out, '\'');
	}
}

/* The limits in few words: "0.1 CPU, 128.0 MiB (preset fn)"; the Run section has them in full. */
static void add_limits(struct buf *out, const struct limits *lim)
{
	size_t start = out->len;

	if (lim->cpus > 0)
		buf_addf(out, "%.3g CPU", lim->cpus);
	if (lim->memory > 0) {
		buf_adds(out, out->len > start ? ", " : "");
		buf_add_bytes(out, lim->memory);
	}
	if (lim->pids > 0)
		buf_addf(out, "%s%ld pids", out->len > start ? ", " : "", lim->pids);
	if (lim->cpuset)
		buf_addf(out, "%scpus %s", out->len > start ? ", " : "", lim->cpuset);
	if (out->len == start)
		buf_adds(out, "no limits");
	if (lim->preset)
		buf_addf(out, " (preset %s)", lim->preset);
}

/* Line 1: "coldstart: TARGET · Python 3.11.2 · 0.1 CPU, 128.0 MiB (preset fn)". */
static void line_what(const struct profile *p, size_t width, const char *bold, const char *reset, struct buf *out)
{
	struct buf target = BUF_INIT, tail = BUF_INIT;
	size_t room;

	add_target(&target, p);
	if (p->python_version)
		buf_addf(&tail, " · Python %s", p->python_version);
	buf_adds(&tail, " · ");
	add_limits(&tail, &p->limits);
	if (!target.len)
		buf_adds(&target, "(no target)");
	buf_addf(out, "%scoldstart:%s ", bold, reset);
	if (width == FIT_UNLIMITED) {
		buf_addf(out, "%s%s\n", target.buf, tail.buf);
	} else {
		/* The target gets what the rest leaves, but never less than 24 columns of it. */
		size_t used = fit_cols("coldstart: "), want = fit_cols(target.buf);

		room = width > used + fit_cols(tail.buf) ? width - used - fit_cols(tail.buf) : 0;
		if (room < want && room < 24)
			room = want < 24 ? want : 24;
		fit_add_command(out, target.buf, room);
		used += room < want ? room : want;
		fit_add_head(out, tail.buf, width > used ? width - used : 1);
		buf_addch(out, '\n');
	}
	buf_release(&target);
	buf_release(&tail);
}

/* The median wall time of the unconstrained runs over that of the measured ones, or 0. */
static double limits_ratio(const struct profile *p)
{
	int64_t *v = xmalloc(st_mult(p->nr_runs ? p->nr_runs : 1, sizeof(*v)));
	struct summary base, meas;
	size_t i, n = 0;

	for (i = 0; i < p->nr_runs; i++)
		if (p->runs[i].baseline && p->runs[i].wall_us > 0)
			v[n++] = p->runs[i].wall_us;
	summarize(v, n, &base);
	n = 0;
	for (i = 0; i < p->nr_runs; i++)
		if (!p->runs[i].warmup && p->runs[i].wall_us > 0)
			v[n++] = p->runs[i].wall_us;
	summarize(v, n, &meas);
	free(v);
	if (!base.n || !meas.n || base.median <= 0)
		return 0;
	return (double)meas.median / (double)base.median;
}

/* Appends part after " · " when it still fits width (its first part always). */
static void add_part(struct buf *line, const char *part, size_t width)
{
	size_t have = fit_cols(line->buf);

	if (!line->len)
		buf_adds(line, part);
	else if (width == FIT_UNLIMITED || have + 3 + fit_cols(part) <= width)
		buf_addf(line, " · %s", part);
}

/*
 * "listening 12 ms" where the target's listener accepted a connection at
 * another time than it became ready (an http:// answer that came later).
 */
static void add_listening(const struct run *r, size_t width, struct buf *line)
{
	struct buf l = BUF_INIT, rd = BUF_INIT;

	if (r->listening_us == UNKNOWN)
		return;
	buf_add_duration(&l, r->listening_us);
	buf_add_duration(&rd, r->ready_us);
	if (strcmp(l.buf, rd.buf)) {
		buf_reset(&rd);
		buf_addf(&rd, "listening %s", l.buf);
		add_part(line, rd.buf, width);
	}
	buf_release(&l);
	buf_release(&rd);
}

/*
 * Line 2: the one number that matters in bold (time to ready for a server,
 * the import total for anything else), then the other times, as many as fit.
 */
static void line_times(const struct profile *p, const struct run *r, size_t width, const char *bold, const char *reset,
		       struct buf *out)
{
	int64_t imports = run_import_total_us(r, 1) - (r->nr_procs ? tool_us(&r->procs[0]) : 0);
	double ratio = limits_ratio(p);
	struct buf line = BUF_INIT, part = BUF_INIT;

	if (r->status == RUN_OOM)
		add_part(&line, "killed by the memory limit", width);
	else if (r->status == RUN_TIMEOUT)
		add_part(&line, "timed out", width);
	else if (r->status == RUN_SIGNALED)
		buf_addf(&line, "killed by signal %d", r->term_signal);
	else if (r->status == RUN_EXITED && r->exit_code)
		buf_addf(&line, "exit status %d", r->exit_code);
	else if (r->status == RUN_STOPPED && r->ready_us == UNKNOWN) {
		/* Stopped by the probe without readiness: --ready-timeout, or the probe failed. */
		buf_addf(&part, "%snever ready%s", bold, reset);
		add_part(&line, part.buf, width);
		buf_reset(&part);
		if (r->listening_us != UNKNOWN) {
			buf_adds(&part, "listening ");
			buf_add_duration(&part, r->listening_us);
			buf_adds(&part, ", no accepted answer");
			add_part(&line, part.buf, width);
			buf_reset(&part);
		}
	}
	if (r->ready_us != UNKNOWN) {
		buf_addf(&part, "%sready ", bold);
		buf_add_duration(&part, r->ready_us);
		buf_adds(&part, reset);
		add_part(&line, part.buf, width);
		buf_reset(&part);
		add_listening(r, width, &line);
		/* http's answer is its readiness (0); only Fn's first call comes after. */
		if (r->first_response_us > 0) {
			buf_adds(&part, "first response ");
			buf_add_duration(&part, r->first_response_us);
			add_part(&line, part.buf, width);
			buf_reset(&part);
		}
		buf_adds(&part, "imports ");
		buf_add_duration(&part, imports);
	} else {
		buf_addf(&part, "%simports ", bold);
		buf_add_duration(&part, imports);
		buf_adds(&part, reset);
		if (r->wall_us > 0)
			buf_addf(&part, " = %.0f%% of wall", 100.0 * (double)imports / (double)r->wall_us);
	}
	add_part(&line, part.buf, width);
	buf_reset(&part);
	if (r->wall_us != UNKNOWN) {
		buf_adds(&part, "wall ");
		buf_add_duration(&part, r->wall_us);
		add_part(&line, part.buf, width);
		buf_reset(&part);
	}
	if (ratio > 0) {
		buf_addf(&part, "%.1fx the unconstrained wall", ratio);
		add_part(&line, part.buf, width);
	}
	buf_addf(out, "%s\n", line.buf);
	buf_release(&line);
	buf_release(&part);
}

/* Line 3: the worst finding, or that there is none. */
static void line_worst(const struct profile *p, size_t width, struct buf *out)
{
	const struct finding *f = worst_finding(p);
	struct buf s = BUF_INIT;

	if (!f) {
		buf_adds(out, "no findings: no rule flagged this start-up\n");
		return;
	}
	buf_adds(&s, "worst: ");
	buf_adds(&s, f->title ? f->title : f->id);
	if (f->cost_us != UNKNOWN && (!f->title || !strstr(f->title, "("))) {
		buf_adds(&s, " (");
		buf_add_duration(&s, f->cost_us);
		buf_addch(&s, ')');
	}
	buf_addf(&s, " [%s]", f->id);
	fit_add_head(out, s.buf, width);
	buf_addch(out, '\n');
	buf_release(&s);
}

void report_summary(const struct profile *p, const struct report_opts *o, struct buf *out)
{
	const char *bold = style_of(o)->bold, *reset = style_of(o)->reset;
	size_t width = report_width(o);
	const struct run *r = p->nr_runs ? &p->runs[profile_median_run(p)] : NULL;

	line_what(p, width, bold, reset, out);
	if (!r) {
		buf_adds(out, "no runs in this profile\n");
		return;
	}
	line_times(p, r, width, bold, reset, out);
	line_worst(p, width, out);
}
