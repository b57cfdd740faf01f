/*
 * Showing a profile: the report, the JSON file, exports and budget checks,
 * and the options that ask for them (see show.h).
 */
#include "session/show.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis/budget.h"
#include "exit.h"
#include "render/export/export.h"
#include "render/fit.h"
#include "render/export/send.h"

static int write_stdout(const char *s, size_t n)
{
	if (fwrite(s, 1, n, stdout) != n || fflush(stdout)) {
		error("cannot write to stdout: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int take_stdout(struct show_opts *so, const char *what, struct buf *err)
{
	return output_take_stdout(&so->stdout_users, what, err);
}

/* --flamegraph FILE and the like: opt->data names the exporter. */
static int add_output(const struct opt *opt, const char *v, struct buf *err)
{
	struct show_opts *so = opt->value;
	struct buf what = BUF_INIT;
	int ret = 0;

	buf_addf(&what, "--%s -", opt->long_name);
	if (!strcmp(v, "-"))
		ret = take_stdout(so, what.buf, err);
	else if (output_path_check(v, err) < 0)
		ret = ARGS_FAILED;
	buf_release(&what);
	if (!ret)
		profile_outputs_add(&so->outputs, opt->data, v);
	return ret;
}

static int set_output(const struct opt *opt, const char *v, struct buf *err)
{
	struct show_opts *so = opt->value;

	if (!strcmp(v, "-")) {
		if (take_stdout(so, "-o -", err) < 0)
			return -1;
	} else if (output_path_check(v, err) < 0) {
		return ARGS_FAILED;
	}
	so->output = v;
	return 0;
}

static int set_send_url(const struct opt *opt, const char *v, struct buf *err)
{
	struct buf why = BUF_INIT;

	if (send_url_check(v, &why) < 0) {
		buf_addf(err, "--%s %s", opt->long_name, why.buf);
		buf_release(&why);
		return -1;
	}
	*(const char **)opt->value = v;
	return 0;
}

static int set_json(const struct opt *opt, const char *v, struct buf *err)
{
	struct show_opts *so = opt->value;

	if (!so->json_stdout && take_stdout(so, "--json", err) < 0)
		return -1;
	so->json_stdout = true;
	return 0;
}

static int set_json_fd(const struct opt *opt, const char *v, struct buf *err)
{
	struct show_opts *so = opt->value;
	int rc = output_fd_arg(v, "--json-fd", &so->json_fd, err);

	return rc == 1 ? set_json(opt, NULL, err) : rc;
}

static int add_budget(const struct opt *opt, const char *v, struct buf *err)
{
	return profile_outputs_budget(opt->value, v, err);
}

static int add_forbid(const struct opt *opt, const char *v, struct buf *err)
{
	if (!*v) {
		buf_addf(err, "--forbid needs a module name");
		return -1;
	}
	profile_outputs_forbid(opt->value, v);
	return 0;
}

/* --depth and --threshold limit the tree, so they ask for it. */
static int set_depth(const struct opt *opt, const char *v, struct buf *err)
{
	struct report_opts *ro = opt->value;
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || end == v || *end || n < 0 || n > 1000000) {
		buf_addf(err, "--depth needs a non-negative number, not '%s'", v);
		return -1;
	}
	ro->max_depth = (int)n;
	ro->tree = true;
	return 0;
}

static int set_threshold(const struct opt *opt, const char *v, struct buf *err)
{
	struct report_opts *ro = opt->value;

	if (parse_duration_us(v, &ro->threshold_us) < 0) {
		buf_addf(err, "--threshold needs a duration such as 1ms or 500us, not '%s'", v);
		return -1;
	}
	ro->tree = true;
	return 0;
}

static int set_color(const struct opt *opt, const char *v, struct buf *err)
{
	struct report_opts *ro = opt->value;

	if (!strcmp(v, "always"))
		ro->color = true;
	else if (!strcmp(v, "never"))
		ro->color = false;
	else if (!strcmp(v, "auto"))
		ro->color = report_want_color(1);
	else {
		buf_addf(err, "--color takes auto, always or never, not '%s'", v);
		return -1;
	}
	return 0;
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

void show_opts_init(struct show_opts *so)
{
	struct report_opts *ro = &so->report;
	struct profile_outputs *po = &so->outputs;

	memset(so, 0, sizeof(*so));
	so->json_fd = -1;
	report_opts_init(ro);
	ro->color = report_want_color(1);
	ro->width = fit_width(1);
	profile_outputs_init(po);
	{
		const struct opt table[] = {
			OPT_CALLBACK("output", 'o', so, set_output, "FILE",
				     "save the profile as JSON (gzip when FILE ends in .gz; - for stdout, as "
				     "--json)"),
			OPT_CALLBACK("json", 0, so, set_json, NULL,
				     "print the JSON profile on stdout instead of the report; the target's "
				     "stdout goes to stderr"),
			OPT_CALLBACK("json-fd", 0, so, set_json_fd, "N",
				     "write the JSON profile to descriptor N (e.g. 3>profile.json); stdout "
				     "stays the target's and the report's"),
			OPT_BOOL("no-report", 0, &so->no_report, "print no report (with -o or exports)"),
			OPT_INT("top", 0, &ro->top, 0, 100000, "N", "rows in each top table (default 15)"),
			OPT_BOOL("wide", 0, &ro->wide,
				 "do not fit the report to the terminal (COLUMNS, else 100 columns when not one)"),
			OPT_BOOL("tree", 0, &ro->tree, "print the import tree"),
			OPT_CALLBACK("depth", 0, ro, set_depth, "N",
				     "tree: hide imports deeper than N (implies --tree)"),
			OPT_CALLBACK("threshold", 0, ro, set_threshold, "DUR",
				     "tree: hide subtrees cheaper than DUR, e.g. 1ms (implies --tree)"),
			OPT_BOOL("all-processes", 0, &ro->all_processes,
				 "report every Python process, not only the main one"),
			OPT_CALLBACK("color", 0, ro, set_color, "WHEN",
				     "auto (default: on a terminal without NO_COLOR), always, never"),
			OPT_CALLBACK_DATA("flamegraph", 0, so, add_output, "svg", "FILE",
					  "also write an SVG flame graph"),
			OPT_CALLBACK_DATA("html", 0, so, add_output, "html", "FILE",
					  "also write a single-file HTML report"),
			OPT_CALLBACK_DATA("speedscope", 0, so, add_output, "speedscope", "FILE",
					  "also write a speedscope profile"),
			OPT_CALLBACK_DATA("chrome", 0, so, add_output, "chrome", "FILE",
					  "also write a Chrome trace (Perfetto)"),
			OPT_CALLBACK_DATA("folded", 0, so, add_output, "folded", "FILE", "also write folded stacks"),
			OPT_CALLBACK("otlp", 0, &so->otlp_url, set_send_url, "URL",
				     "also send the run as an OpenTelemetry trace to an OTLP/HTTP collector "
				     "(http://HOST:4318; /v1/traces added to a bare URL)"),
			OPT_CALLBACK("push-gateway", 0, &so->push_gateway, set_send_url, "URL",
				     "also push the run's gauges to a Prometheus Pushgateway (http://HOST:9091)"),
			OPT_INT("send-timeout", 0, &so->send_timeout_s, 1, 3600, "S",
				"give up a --otlp or --push-gateway send after S seconds (default 10)"),
			OPT_CALLBACK("budget", 0, po, add_budget, "NAME=DUR",
				     "fail (exit 1) when total, startup, target or MODULE exceeds DUR; repeatable"),
			OPT_CALLBACK("forbid", 0, po, add_forbid, "MODULE",
				     "fail (exit 1) when MODULE is imported; repeatable"),
			OPT_END(),
		};

		_Static_assert(sizeof(table) == sizeof(so->options), "show_opts.options holds the table");
		memcpy(so->options, table, sizeof(table));
	}
}

void show_opts_release(struct show_opts *so)
{
	profile_outputs_release(&so->outputs);
}

bool show_stdout_taken(const struct show_opts *so)
{
	return so->stdout_users > 0;
}

/* Writes all of s to fd. */
static int write_fd(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

int show_profile(const struct profile *p, const struct show_opts *so)
{
	const struct profile_outputs *po = &so->outputs;
	const char *output = so->output && strcmp(so->output, "-") ? so->output : NULL;
	bool json_stdout = so->json_stdout || (so->output && !strcmp(so->output, "-"));
	struct buf out = BUF_INIT, err = BUF_INIT;
	int ret = 0;
	size_t i;

	if (output && profile_write_json(p, output, &err) < 0) {
		error("%s", err.buf);
		buf_reset(&err);
		ret = EXIT_FAIL;
	}
	if (so->json_fd >= 0) {
		profile_to_json(p, &out);
		if (write_fd(so->json_fd, out.buf, out.len) < 0) {
			error("cannot write the JSON to descriptor %d: %s", so->json_fd, strerror(errno));
			ret = EXIT_FAIL;
		}
		buf_reset(&out);
	}
	if (json_stdout) {
		profile_to_json(p, &out);
		if (write_stdout(out.buf, out.len) < 0)
			ret = EXIT_FAIL;
	} else if (!so->no_report && !show_stdout_taken(so)) {
		report_render(p, &so->report, &out);
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
	if (show_send(p, so))
		ret = EXIT_FAIL;
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

/*
 * For a run measured now, when it began in Unix time: CLOCK_MONOTONIC (the
 * tracer's clock) against CLOCK_REALTIME read together.  0 when unknown.
 */
static int64_t live_origin(const struct profile *p)
{
	struct timespec mono, real;
	const struct run *r = NULL;
	size_t i;

	for (i = p->nr_runs; i-- > 0 && !r;)
		if (p->runs[i].nr_procs && p->runs[i].procs[0].start_ns >= 0)
			r = &p->runs[i];
	if (!r || clock_gettime(CLOCK_MONOTONIC, &mono) || clock_gettime(CLOCK_REALTIME, &real))
		return 0;
	return (int64_t)real.tv_sec * 1000000000 + real.tv_nsec -
	       ((int64_t)mono.tv_sec * 1000000000 + mono.tv_nsec - r->procs[0].start_ns);
}

int show_send(const struct profile *p, const struct show_opts *so)
{
	struct export_opts eo = EXPORT_OPTS_INIT;
	struct send_opts sopt = { .timeout_ms = (so->send_timeout_s > 0 ? so->send_timeout_s : 10) * 1000 };
	struct buf err = BUF_INIT;
	const char *proto = getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
	int ret = 0;

	if (!so->otlp_url && !so->push_gateway)
		return 0;
	if (!proto || !*proto)
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL");
	sopt.json = proto && !strcmp(proto, "http/json");
	sopt.headers = getenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS");
	if (!sopt.headers || !*sopt.headers)
		sopt.headers = getenv("OTEL_EXPORTER_OTLP_HEADERS");
	eo.service = getenv("OTEL_SERVICE_NAME");
	if (so->live)
		eo.origin_unix_ns = live_origin(p);
	if (so->otlp_url && send_otlp(p, &eo, so->otlp_url, &sopt, &err) < 0) {
		error("%s", err.buf);
		buf_reset(&err);
		ret = EXIT_FAIL;
	}
	if (so->push_gateway && send_push_gateway(p, &eo, so->push_gateway, &sopt, &err) < 0) {
		error("%s", err.buf);
		ret = EXIT_FAIL;
	}
	buf_release(&err);
	return ret;
}
