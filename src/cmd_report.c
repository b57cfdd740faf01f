/*
 * `coldstart report FILE.json`: renders a saved profile again, and can
 * export it or check budgets like `profile` does.
 */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "builtin.h"
#include "profile_cmd.h"

static const struct opt report_options[] = {
	SHOW_OPTIONS,
	{ NULL, 0, 0, NULL, NULL, NULL },
};

static void usage(FILE *f)
{
	struct buf h = BUF_INIT;

	args_help(report_options, &h);
	fprintf(f,
		"usage: coldstart report [options] PROFILE.json[.gz]|-\n\n"
		"Renders a profile saved with 'coldstart profile -o' (or parse, docker).\n\n"
		"options:\n%s\n"
		"Exit status: 0 ok, 1 unreadable profile or broken budget, 2 usage.\n",
		h.buf);
	buf_release(&h);
}

int cmd_report(int argc, char **argv)
{
	struct show_opts o;
	struct profile p;
	struct buf err = BUF_INIT;
	struct strvec pos = STRVEC_INIT;
	int rc, ret = EXIT_FAIL;

	show_opts_init(&o);
	profile_init(&p);
	rc = args_parse_all(report_options, &o, argc, argv, &pos, &err);
	if (rc == 1) {
		usage(stdout);
		ret = EXIT_OK;
		goto out;
	}
	if (rc < 0 || pos.nr != 1) {
		error("%s", rc < 0 ? err.buf : !pos.nr ? "no profile given" : "give exactly one profile");
		fprintf(stderr, "Try 'coldstart report --help'.\n");
		ret = EXIT_USAGE;
		goto out;
	}
	if (profile_read_json(&p, pos.v[0], &err) < 0) {
		error("%s", err.buf);
		goto out;
	}
	ret = show_profile(&p, &o);
out:
	show_opts_release(&o);
	profile_release(&p);
	strvec_clear(&pos);
	buf_release(&err);
	return ret;
}
