/*
 * Outputs shared by the measuring commands: the report, the JSON profile,
 * exports and budget checks (see profile_cmd.h).
 */
#include "profile_cmd.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "budget.h"
#include "builtin.h"
#include "export/export.h"

static int add_format(void *ctx, const char *format, const char *v)
{
	profile_outputs_add(ctx, format, v);
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

int profile_opt_flamegraph(void *ctx, const char *v, struct buf *err) { return add_format(ctx, "svg", v); }
int profile_opt_html(void *ctx, const char *v, struct buf *err) { return add_format(ctx, "html", v); }
int profile_opt_speedscope(void *ctx, const char *v, struct buf *err) { return add_format(ctx, "speedscope", v); }
int profile_opt_chrome(void *ctx, const char *v, struct buf *err) { return add_format(ctx, "chrome", v); }
int profile_opt_folded(void *ctx, const char *v, struct buf *err) { return add_format(ctx, "folded", v); }
int profile_opt_budget(void *ctx, const char *v, struct buf *err) { return profile_outputs_budget(ctx, v, err); }

int profile_opt_forbid(void *ctx, const char *v, struct buf *err)
{
	if (!*v) {
		buf_addf(err, "--forbid needs a module name");
		return -1;
	}
	profile_outputs_forbid(ctx, v);
	return 0;
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
