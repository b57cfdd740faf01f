/*
 * `coldstart check`: the CI gate.  Judges a saved profile against
 * --budget and --forbid rules and exits 0 when every rule holds, 1 when not;
 * as text, Markdown or GitHub annotations.
 */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "analysis/budget.h"
#include "cmd/builtin.h"
#include "render/ci_format.h"
#include "model/profile.h"
#include "session/show.h"

struct check_opts {
	struct budget b;
	bool quiet;
	enum ci_format format;
	const char *markdown; /* --markdown FILE: also append the Markdown there */
};

/* "check failed (3 of 5 rules)", "check passed (5 rules)". */
static void add_verdict_line(struct buf *out, const struct budget_verdicts *vs)
{
	if (vs->failed)
		buf_addf(out, "check failed (%zu of %zu rule%s)", vs->failed, vs->nr, vs->nr == 1 ? "" : "s");
	else
		buf_addf(out, "check passed (%zu rule%s)", vs->nr, vs->nr == 1 ? "" : "s");
}

static void render_text(const struct budget_verdicts *vs, bool quiet, struct buf *out)
{
	size_t i;

	for (i = 0; i < vs->nr; i++) {
		const struct budget_verdict *v = &vs->v[i];

		if (quiet && !v->failed)
			continue;
		buf_addf(out, "%s %-4s %s: %s\n", v->forbid ? "forbid" : "budget", v->failed ? "FAIL" : "ok", v->name,
			 v->text.buf);
	}
	for (i = 0; i < vs->nr; i++) {
		if (!vs->v[i].unknown)
			continue;
		buf_adds(out, "warning: ");
		budget_warning(&vs->v[i], out);
		buf_addch(out, '\n');
	}
	add_verdict_line(out, vs);
	buf_addch(out, '\n');
}

static void render_markdown(const struct budget_verdicts *vs, const char *profile, bool quiet, struct buf *out)
{
	size_t i;

	buf_adds(out, "### coldstart ");
	add_verdict_line(out, vs);
	buf_adds(out, "\n\nProfile `");
	ci_md_cell(out, profile);
	buf_adds(out, "`; times are medians over the measured runs (totals: the main process; a module: "
		      "the process where it cost most).\n\n");
	buf_adds(out, "| rule | verdict | measured |\n|---|---|---|\n");
	for (i = 0; i < vs->nr; i++) {
		const struct budget_verdict *v = &vs->v[i];

		if (quiet && !v->failed)
			continue;
		buf_addf(out, "| %s `", v->forbid ? "forbid" : "budget");
		ci_md_cell(out, v->name);
		buf_addf(out, "` | %s | ", v->failed ? "**FAIL**" : "ok");
		ci_md_cell(out, v->text.buf);
		buf_adds(out, " |\n");
	}
	for (i = 0; i < vs->nr; i++) {
		if (!vs->v[i].unknown)
			continue;
		buf_adds(out, "\n> **Warning:** ");
		budget_warning(&vs->v[i], out);
		buf_addch(out, '\n');
	}
}

static void render_github(const struct budget_verdicts *vs, const char *profile, struct buf *out)
{
	struct buf title = BUF_INIT, msg = BUF_INIT;
	size_t i;

	for (i = 0; i < vs->nr; i++) {
		const struct budget_verdict *v = &vs->v[i];

		if (!v->failed && !v->unknown)
			continue;
		buf_reset(&title);
		buf_reset(&msg);
		buf_addf(&title, "coldstart %s %s", v->forbid ? "forbid" : "budget", v->name);
		if (v->failed)
			buf_addf(&msg, "%s: %s (%s)", v->name, v->text.buf, profile);
		else
			budget_warning(v, &msg);
		ci_annotation(out, v->failed ? "error" : "warning", title.buf, msg.buf);
	}
	add_verdict_line(out, vs);
	buf_addch(out, '\n');
	buf_release(&title);
	buf_release(&msg);
}

static int add_budget(const struct opt *opt, const char *v, struct buf *err)
{
	return budget_add(opt->value, v, err);
}

static int add_forbid(const struct opt *opt, const char *v, struct buf *err)
{
	if (!*v || strchr(v, '=') || strchr(v, ' ')) {
		buf_addf(err, "--forbid '%s': expected a module name", v);
		return -1;
	}
	budget_forbid(opt->value, v);
	return 0;
}

static const struct usage check_usage = {
	.command = "check",
	.synopsis = "usage: coldstart check PROFILE --budget total=300ms [--budget MODULE=50ms]\n"
		    "                       [--forbid MODULE] ... [-q] [--format text|markdown|github]\n\n"
		    "Fails (exit 1) when the profile breaks a budget, for CI.  Times are medians\n"
		    "over the non-warm-up runs: totals of the main process, a module's in the\n"
		    "process where it cost most (a pre-fork server's workers count).\n\n",
	.footer = "TIME: 300ms, 1.5s, 250us; a bare number is milliseconds.\n"
		  "Exit status: 0 every rule holds, 1 a rule failed or the profile is unreadable,\n"
		  "2 bad command line.  See docs/diff-check.md.\n",
};

int cmd_check(int argc, char **argv)
{
	struct check_opts o = { .quiet = false, .format = CI_TEXT };
	struct budget_verdicts vs = BUDGET_VERDICTS_INIT;
	struct profile p;
	struct buf err = BUF_INIT, explain = BUF_INIT;
	struct strvec pos = STRVEC_INIT;
	int rc, ret = EXIT_USAGE;

	/* --budget is one option; the help spells out its NAMEs on four lines. */
	const struct opt options[] = {
		OPT_CALLBACK("budget", 0, &o.b, add_budget, "NAME=TIME", NULL),
		OPT_HELP("budget", 0, "total=TIME", "all imports, interpreter start-up included"),
		OPT_HELP("budget", 0, "target=TIME", "imports after interpreter start-up"),
		OPT_HELP("budget", 0, "startup=TIME", "interpreter start-up imports only"),
		OPT_HELP("budget", 0, "MODULE=TIME", "the module's cumulative import time"),
		OPT_CALLBACK("forbid", 0, &o.b, add_forbid, "MODULE", "the module must not be imported by any process"),
		OPT_BOOL("quiet", 'q', &o.quiet, "print only the rules that fail"),
		OPT_CALLBACK("format", 0, &o.format, ci_format_opt, "FMT",
			     "text (default), markdown (a pull-request comment) or github (annotations)"),
		OPT_CALLBACK("markdown", 0, &o.markdown, ci_markdown_opt, "FILE",
			     "also append the Markdown to FILE, e.g. \"$GITHUB_STEP_SUMMARY\""),
		OPT_HELP("help", 'h', NULL, "this text"),
		OPT_END(),
	};

	profile_init(&p);
	budget_init(&o.b);
	rc = args_parse_all(options, argc, argv, &pos, &err);
	if (rc) {
		ret = usage_stop(&check_usage, options, rc, err.buf);
		goto out;
	}
	if (pos.nr != 1 || !(o.b.nr + o.b.forbid.nr)) {
		if (pos.nr > 1)
			ret = usage_error(&check_usage, "unexpected argument '%s'", pos.v[1]);
		else
			ret = usage_error(&check_usage, "check needs a PROFILE and at least one --budget or --forbid");
		goto out;
	}
	ret = EXIT_FAIL;
	if (profile_read_json(&p, pos.v[0], &err) < 0) {
		error("%s", err.buf);
		goto out;
	}
	if (budget_judge(&p, &o.b, &vs, &err) < 0) {
		error("%s", err.buf);
		goto out;
	}
	if (o.format == CI_MARKDOWN)
		render_markdown(&vs, pos.v[0], o.quiet, &explain);
	else if (o.format == CI_GITHUB)
		render_github(&vs, pos.v[0], &explain);
	else
		render_text(&vs, o.quiet, &explain);
	fputs(explain.buf, stdout);
	if (o.markdown) {
		buf_reset(&explain);
		render_markdown(&vs, pos.v[0], false, &explain);
		if (ci_append_file(o.markdown, explain.buf, explain.len, &err) < 0) {
			error("%s", err.buf);
			goto out;
		}
	}
	ret = vs.failed ? EXIT_FAIL : EXIT_OK;
out:
	budget_verdicts_release(&vs);
	budget_release(&o.b);
	profile_release(&p);
	strvec_clear(&pos);
	buf_release(&err);
	buf_release(&explain);
	return ret;
}
