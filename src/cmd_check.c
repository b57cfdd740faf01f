/*
 * `coldstart check`: the CI gate.  Judges a saved profile against
 * --budget and --forbid rules and exits 0 when every rule holds, 1 when not.
 */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "budget.h"
#include "builtin.h"
#include "profile.h"

struct check_opts {
	struct budget b;
	bool quiet;
};

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
		    "                       [--forbid MODULE] ... [-q]\n\n"
		    "Fails (exit 1) when the profile breaks a budget, for CI.  Times are medians\n"
		    "over the non-warm-up runs of the main process.\n\n",
	.footer = "TIME: 300ms, 1.5s, 250us; a bare number is milliseconds.\n"
		  "Exit status: 0 every rule holds, 1 a rule failed or the profile is unreadable,\n"
		  "2 bad command line.  See docs/diff-check.md.\n",
};

int cmd_check(int argc, char **argv)
{
	struct check_opts o = { .quiet = false };
	struct profile p;
	struct buf err = BUF_INIT, explain = BUF_INIT;
	struct strvec pos = STRVEC_INIT;
	int rc, failed, ret = EXIT_USAGE;

	/* --budget is one option; the help spells out its NAMEs on four lines. */
	const struct opt options[] = {
		OPT_CALLBACK("budget", 0, &o.b, add_budget, "NAME=TIME", NULL),
		OPT_HELP("budget", 0, "total=TIME", "all imports, interpreter start-up included"),
		OPT_HELP("budget", 0, "target=TIME", "imports after interpreter start-up"),
		OPT_HELP("budget", 0, "startup=TIME", "interpreter start-up imports only"),
		OPT_HELP("budget", 0, "MODULE=TIME", "the module's cumulative import time"),
		OPT_CALLBACK("forbid", 0, &o.b, add_forbid, "MODULE", "the module must not be imported by the main process"),
		OPT_BOOL("quiet", 'q', &o.quiet, "print only the rules that fail"),
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
	failed = budget_check(&p, &o.b, &explain);
	if (failed < 0) {
		fprintf(stderr, "coldstart: error: %s", explain.buf);
		goto out;
	}
	if (o.quiet) {
		const char *line = explain.buf;

		while (*line) {
			const char *nl = strchr(line, '\n');
			size_t len = nl ? (size_t)(nl - line + 1) : strlen(line);

			if (strstr(line, "FAIL") && strstr(line, "FAIL") < line + len)
				fwrite(line, 1, len, stdout);
			line += len;
		}
	} else {
		fputs(explain.buf, stdout);
	}
	printf("%s (%zu rule%s)\n", failed ? "check failed" : "check passed", o.b.nr + o.b.forbid.nr,
	       o.b.nr + o.b.forbid.nr == 1 ? "" : "s");
	ret = failed ? EXIT_FAIL : EXIT_OK;
out:
	budget_release(&o.b);
	profile_release(&p);
	strvec_clear(&pos);
	buf_release(&err);
	buf_release(&explain);
	return ret;
}
