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
	int quiet;
};

static int o_budget(void *ctx, const char *v, struct buf *err)
{
	return budget_add(&((struct check_opts *)ctx)->b, v, err);
}

static int o_forbid(void *ctx, const char *v, struct buf *err)
{
	if (!*v || strchr(v, '=') || strchr(v, ' ')) {
		buf_addf(err, "--forbid '%s': expected a module name", v);
		return -1;
	}
	budget_forbid(&((struct check_opts *)ctx)->b, v);
	return 0;
}

static int o_quiet(void *ctx, const char *v, struct buf *err)
{
	((struct check_opts *)ctx)->quiet = 1;
	return 0;
}

/* args_parse answers -h/--help itself; the row is there for args_help. */
static int o_help(void *ctx, const char *v, struct buf *err)
{
	BUG("--help reached its option callback");
}

/*
 * --budget is one option: the parser matches its first row (no help line,
 * NAME=TIME in "needs a value"); the next four spell out the NAMEs in the help.
 */
static const struct opt check_options[] = {
	{ "budget", 0, 1, o_budget, "NAME=TIME", NULL },
	{ "budget", 0, 1, o_budget, "total=TIME", "all imports, interpreter start-up included" },
	{ "budget", 0, 1, o_budget, "target=TIME", "imports after interpreter start-up" },
	{ "budget", 0, 1, o_budget, "startup=TIME", "interpreter start-up imports only" },
	{ "budget", 0, 1, o_budget, "MODULE=TIME", "the module's cumulative import time" },
	{ "forbid", 0, 1, o_forbid, "MODULE", "the module must not be imported by the main process" },
	{ "quiet", 'q', 0, o_quiet, NULL, "print only the rules that fail" },
	{ "help", 'h', 0, o_help, NULL, "this text" },
	{ NULL, 0, 0, NULL, NULL, NULL },
};

static void usage(FILE *f)
{
	struct buf h = BUF_INIT;

	args_help(check_options, &h);
	fprintf(f,
		"usage: coldstart check PROFILE --budget total=300ms [--budget MODULE=50ms]\n"
		"                       [--forbid MODULE] ... [-q]\n\n"
		"Fails (exit 1) when the profile breaks a budget, for CI.  Times are medians\n"
		"over the non-warm-up runs of the main process.\n\n"
		"options:\n%s\n"
		"TIME: 300ms, 1.5s, 250us; a bare number is milliseconds.\n"
		"Exit status: 0 every rule holds, 1 a rule failed or the profile is unreadable,\n"
		"2 bad command line.  See docs/diff-check.md.\n",
		h.buf);
	buf_release(&h);
}

int cmd_check(int argc, char **argv)
{
	struct check_opts o = { .quiet = 0 };
	struct profile p;
	struct buf err = BUF_INIT, explain = BUF_INIT;
	struct strvec pos = STRVEC_INIT;
	int rc, failed, ret = EXIT_USAGE;

	profile_init(&p);
	budget_init(&o.b);
	rc = args_parse_all(check_options, &o, argc, argv, &pos, &err);
	if (rc == 1) {
		usage(stdout);
		ret = EXIT_OK;
		goto out;
	}
	if (rc < 0 || pos.nr != 1 || !(o.b.nr + o.b.forbid.nr)) {
		if (rc < 0)
			error("%s", err.buf);
		else if (pos.nr > 1)
			error("unexpected argument '%s'", pos.v[1]);
		else
			error("check needs a PROFILE and at least one --budget or --forbid");
		fprintf(stderr, "Try 'coldstart check --help'.\n");
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
