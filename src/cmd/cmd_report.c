/*
 * `coldstart report FILE.json`: renders a saved profile again, and can
 * export it or check budgets like `profile` does.
 */
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cmd/builtin.h"
#include "session/show.h"

static const struct usage report_usage = {
	.command = "report",
	.synopsis = "usage: coldstart report [options] PROFILE.json[.gz]|-\n\n"
		    "Renders a profile saved with 'coldstart profile -o' (or parse, docker).\n\n",
	.footer = "Exit status: 0 ok, 1 unreadable profile or broken budget, 2 usage.\n",
};

int cmd_report(int argc, char **argv)
{
	struct show_opts o;
	struct profile p;
	struct buf err = BUF_INIT;
	struct strvec pos = STRVEC_INIT;
	int rc, ret = EXIT_FAIL;

	show_opts_init(&o);
	profile_init(&p);
	rc = usage_parse_one(&report_usage, o.options, argc, argv, "profile", &pos, &err);
	if (rc >= 0) {
		ret = rc;
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
