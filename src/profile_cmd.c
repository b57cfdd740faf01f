/*
 * Outputs shared by the measuring commands: the report, the JSON profile,
 * exports and budget checks (see profile_cmd.h).
 */
#include "profile_cmd.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "budget.h"
#include "cgroup.h"
#include "builtin.h"
#include "export/export.h"

static int add_format(void *ctx, const char *format, const char *v)
{
	struct show_opts *so = ctx;

	profile_outputs_add(&so->outputs, format, v);
	return 0;
}

static int write_stdout(const char *s, size_t n)
{
	if (fwrite(s, 1, n, stdout) != n || fflush(stdout)) {
		error("cannot write to stdout: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static bool measured_imports(const struct profile *p)
{
	size_t i, j;

	for (i = 0; i < p->nr_runs; i++)
		for (j = 0; j < p->runs[i].nr_procs && !p->runs[i].warmup; j++)
			if (p->runs[i].procs[j].nr_nodes)
				return true;
	return false;
}

int profile_exit_status(const struct profile *p, bool ready, bool passthrough)
{
	const struct run *worst = NULL;
	size_t i;

	for (i = 0; i < p->nr_runs; i++) {
		const struct run *r = &p->runs[i];

		if ((r->status == RUN_EXITED && !r->exit_code) || r->status == RUN_STOPPED)
			continue;
		worst = r;
		break;
	}
	if (ready)
		for (i = 0; i < p->nr_runs; i++)
			if (p->runs[i].ready_us == UNKNOWN && p->runs[i].status != RUN_OOM &&
			    p->runs[i].status != RUN_TIMEOUT)
				return EXIT_NOT_READY;
	if (!worst)
		return passthrough || measured_imports(p) ? EXIT_OK : EXIT_NO_IMPORTS;
	if (passthrough)
		return worst->status == RUN_EXITED ? worst->exit_code
		       : worst->status == RUN_SIGNALED ? 128 + worst->term_signal
		       : worst->status == RUN_OOM ? 128 + SIGKILL : 124;
	switch (worst->status) {
	case RUN_EXITED: return EXIT_TARGET_FAILED;
	case RUN_SIGNALED: return EXIT_TARGET_SIGNALED;
	case RUN_OOM: return EXIT_TARGET_OOM;
	case RUN_TIMEOUT: return EXIT_TARGET_TIMEOUT;
	default: return EXIT_FAIL;
	}
}

void profile_outputs_init(struct profile_outputs *po)
{
	memset(po, 0, sizeof(*po));
	strvec_init(&po->budgets);
	strvec_init(&po->forbids);
}

void profile_outputs_release(struct profile_outputs *po)
{
	free(po->files);
	strvec_clear(&po->budgets);
	strvec_clear(&po->forbids);
	profile_outputs_init(po);
}

void profile_outputs_add(struct profile_outputs *po, const char *format, const char *path)
{
	ALLOC_GROW(po->files, po->nr_files + 1, po->alloc_files);
	po->files[po->nr_files].format = format;
	po->files[po->nr_files].path = path;
	po->nr_files++;
}

int profile_outputs_budget(struct profile_outputs *po, const char *spec, struct buf *err)
{
	struct budget b;

	budget_init(&b);
	if (budget_add(&b, spec, err) < 0) {
		budget_release(&b);
		return -1;
	}
	budget_release(&b);
	strvec_push(&po->budgets, spec);
	return 0;
}

void profile_outputs_forbid(struct profile_outputs *po, const char *module)
{
	strvec_push(&po->forbids, module);
}

static int parse_count(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int show_opt_output(void *ctx, const char *v, struct buf *err) { ((struct show_opts *)ctx)->output = v; return 0; }
int show_opt_json(void *ctx, const char *v, struct buf *err) { ((struct show_opts *)ctx)->json_stdout = true; return 0; }
int show_opt_no_report(void *ctx, const char *v, struct buf *err) { ((struct show_opts *)ctx)->no_report = true; return 0; }
int show_opt_tree(void *ctx, const char *v, struct buf *err) { ((struct show_opts *)ctx)->report.tree = true; return 0; }
int show_opt_all(void *ctx, const char *v, struct buf *err) { ((struct show_opts *)ctx)->report.all_processes = true; return 0; }
int show_opt_flamegraph(void *ctx, const char *v, struct buf *err) { return add_format(ctx, "svg", v); }
int show_opt_html(void *ctx, const char *v, struct buf *err) { return add_format(ctx, "html", v); }
int show_opt_speedscope(void *ctx, const char *v, struct buf *err) { return add_format(ctx, "speedscope", v); }
int show_opt_chrome(void *ctx, const char *v, struct buf *err) { return add_format(ctx, "chrome", v); }
int show_opt_folded(void *ctx, const char *v, struct buf *err) { return add_format(ctx, "folded", v); }

int show_opt_budget(void *ctx, const char *v, struct buf *err)
{
	return profile_outputs_budget(&((struct show_opts *)ctx)->outputs, v, err);
}

int show_opt_forbid(void *ctx, const char *v, struct buf *err)
{
	if (!*v) {
		buf_addf(err, "--forbid needs a module name");
		return -1;
	}
	profile_outputs_forbid(&((struct show_opts *)ctx)->outputs, v);
	return 0;
}

int show_opt_top(void *ctx, const char *v, struct buf *err)
{
	long n;

	if (parse_count(v, 0, 100000, &n) < 0) {
		buf_addf(err, "--top needs a number from 0 to 100000, not '%s'", v);
		return -1;
	}
	((struct show_opts *)ctx)->report.top = (int)n;
	return 0;
}

int show_opt_depth(void *ctx, const char *v, struct buf *err)
{
	struct show_opts *so = ctx;
	long n;

	if (parse_count(v, 0, 1000000, &n) < 0) {
		buf_addf(err, "--depth needs a non-negative number, not '%s'", v);
		return -1;
	}
	so->report.max_depth = (int)n;
	so->report.tree = true;
	return 0;
}

int show_opt_threshold(void *ctx, const char *v, struct buf *err)
{
	struct show_opts *so = ctx;

	if (parse_duration_us(v, &so->report.threshold_us) < 0) {
		buf_addf(err, "--threshold needs a duration such as 1ms or 500us, not '%s'", v);
		return -1;
	}
	so->report.tree = true;
	return 0;
}

int show_opt_color(void *ctx, const char *v, struct buf *err)
{
	struct show_opts *so = ctx;

	if (!strcmp(v, "always"))
		so->report.color = true;
	else if (!strcmp(v, "never"))
		so->report.color = false;
	else if (!strcmp(v, "auto"))
		so->report.color = report_want_color(1);
	else {
		buf_addf(err, "--color takes auto, always or never, not '%s'", v);
		return -1;
	}
	return 0;
}

#define M(ctx) (&((struct measure_ctx *)(ctx))->m)

int measure_parse_seconds(const char *v, const char *opt, double max, int64_t *us, struct buf *err)
{
	char *end;
	double sec;

	errno = 0;
	sec = strtod(v, &end);
	if (errno || end == v || *end || !(sec > 0) || sec > max) {
		buf_addf(err, "%s needs a positive number of seconds, not '%s'", opt, v);
		return -1;
	}
	*us = (int64_t)(sec * 1e6);
	return 0;
}

static int parse_runs(const char *v, const char *opt, long min, int *out, struct buf *err)
{
	long n;

	if (parse_count(v, min, 10000, &n) < 0) {
		buf_addf(err, "%s needs a number from %ld to 10000, not '%s'", opt, min, v);
		return -1;
	}
	*out = (int)n;
	return 0;
}

int measure_opt_no_trace(void *ctx, const char *v, struct buf *err) { M(ctx)->no_trace = true; return 0; }
int measure_opt_quiet(void *ctx, const char *v, struct buf *err) { M(ctx)->quiet = true; return 0; }
int measure_opt_no_limits(void *ctx, const char *v, struct buf *err) { M(ctx)->no_limits = true; return 0; }
int measure_opt_ready(void *ctx, const char *v, struct buf *err) { M(ctx)->ready = v; return 0; }
int measure_opt_ready_status(void *ctx, const char *v, struct buf *err) { M(ctx)->ready_status = v; return 0; }
int measure_opt_exit_code(void *ctx, const char *v, struct buf *err) { M(ctx)->passthrough_exit = true; return 0; }
int measure_opt_runs(void *ctx, const char *v, struct buf *err) { return parse_runs(v, "--runs", 1, &M(ctx)->runs, err); }
int measure_opt_warmup(void *ctx, const char *v, struct buf *err) { return parse_runs(v, "--warmup", 0, &M(ctx)->warmup, err); }
int measure_opt_cpus(void *ctx, const char *v, struct buf *err) { return limits_set_cpus(&M(ctx)->limits, v, err); }
int measure_opt_memory(void *ctx, const char *v, struct buf *err) { return limits_set_memory(&M(ctx)->limits, v, err); }
int measure_opt_swap(void *ctx, const char *v, struct buf *err) { return limits_set_swap(&M(ctx)->limits, v, err); }
int measure_opt_pids(void *ctx, const char *v, struct buf *err) { return limits_set_pids(&M(ctx)->limits, v, err); }
int measure_opt_cpuset(void *ctx, const char *v, struct buf *err) { return limits_set_cpuset(&M(ctx)->limits, v, err); }
int measure_opt_preset(void *ctx, const char *v, struct buf *err) { return limits_set_preset(&M(ctx)->limits, v, err); }

int measure_opt_timeout(void *ctx, const char *v, struct buf *err)
{
	return measure_parse_seconds(v, "--timeout", 86400.0 * 365, &M(ctx)->timeout_us, err);
}

int measure_opt_ready_timeout(void *ctx, const char *v, struct buf *err)
{
	return measure_parse_seconds(v, "--ready-timeout", 86400, &M(ctx)->ready_timeout_us, err);
}

void measure_ctx_init(struct measure_ctx *c)
{
	show_opts_init(&c->show);
	memset(&c->m, 0, sizeof(c->m));
	ready_spec_init(&c->m.ready_spec);
	c->m.runs = 1;
	c->m.ready_timeout_us = 60 * 1000000LL;
}

void measure_ctx_release(struct measure_ctx *c)
{
	show_opts_release(&c->show);
	limits_release(&c->m.limits);
	memset(&c->m.limits, 0, sizeof(c->m.limits));
	ready_spec_release(&c->m.ready_spec);
}

int measure_opts_finish(struct measure_opts *m, struct limits *out, struct buf *err)
{
	if (m->ready_status && !m->ready) {
		buf_adds(err, "--ready-status needs --ready http://...");
		return -1;
	}
	if (m->ready && ready_spec_parse(&m->ready_spec, m->ready, m->ready_status, err) < 0)
		return -1;
	if (m->no_limits) {
		limits_release(&m->limits);
		memset(&m->limits, 0, sizeof(m->limits));
	} else if (limits_check(&m->limits, err) < 0) {
		return -1;
	}
	*out = m->limits;
	memset(&m->limits, 0, sizeof(m->limits));
	return 0;
}

void show_opts_init(struct show_opts *so)
{
	memset(so, 0, sizeof(*so));
	report_opts_init(&so->report);
	so->report.color = report_want_color(1);
	profile_outputs_init(&so->outputs);
}

void show_opts_release(struct show_opts *so)
{
	profile_outputs_release(&so->outputs);
}

int show_profile(const struct profile *p, const struct show_opts *so)
{
	return profile_finish_outputs(p, &so->outputs, &so->report, so->output, so->json_stdout, so->no_report);
}

int profile_finish_outputs(const struct profile *p, const struct profile_outputs *po,
			   const struct report_opts *ro, const char *output, bool json_stdout, bool no_report)
{
	struct buf out = BUF_INIT, err = BUF_INIT;
	int ret = 0;
	size_t i;

	if (output && profile_write_json(p, output, &err) < 0) {
		error("%s", err.buf);
		buf_reset(&err);
		ret = EXIT_FAIL;
	}
	if (json_stdout) {
		profile_to_json(p, &out);
		if (write_stdout(out.buf, out.len) < 0)
			ret = EXIT_FAIL;
	} else if (!no_report) {
		report_render(p, ro, &out);
		if (write_stdout(out.buf, out.len) < 0)
			ret = EXIT_FAIL;
	}
	for (i = 0; i < po->nr_files; i++) {
		const struct exporter *e = exporter_find(po->files[i].format);
		struct export_opts eo = EXPORT_OPTS_INIT;

		if (!e) {
			error("no exporter for '%s'", po->files[i].format);
			ret = EXIT_FAIL;
			continue;
		}
		if (export_to_path(p, e, &eo, po->files[i].path, &err) < 0) {
			error("%s", err.buf);
			buf_reset(&err);
			ret = EXIT_FAIL;
		}
	}
	if (po->budgets.nr || po->forbids.nr) {
		struct budget b;
		struct buf explain = BUF_INIT;
		int rc;

		budget_init(&b);
		for (i = 0; i < po->budgets.nr; i++)
			if (budget_add(&b, po->budgets.v[i], &err) < 0)
				BUG("budget '%s' was validated: %s", po->budgets.v[i], err.buf);
		for (i = 0; i < po->forbids.nr; i++)
			budget_forbid(&b, po->forbids.v[i]);
		rc = budget_check(p, &b, &explain);
		fwrite(explain.buf, 1, explain.len, stderr);
		if (rc)
			ret = EXIT_FAIL;
		budget_release(&b);
		buf_release(&explain);
	}
	buf_release(&out);
	buf_release(&err);
	return ret;
}
