/*
 * `coldstart diff A B`: compares two saved profiles, flags changes larger
 * than the noise, and can draw B's flamegraph coloured by change.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "builtin.h"
#include "diff.h"
#include "export/export.h"
#include "profile.h"

struct diff_opts {
	struct export_opts exp; /* for --flamegraph */
	const char *flame;
	const char *output;
	int64_t min_delta;
	long top;
};

static int o_min_delta(void *ctx, const char *v, struct buf *err)
{
	if (parse_duration_us(v, &((struct diff_opts *)ctx)->min_delta) < 0) {
		buf_addf(err, "--min-delta '%s': not a duration (e.g. 1ms, 500us)", v);
		return -1;
	}
	return 0;
}

static int o_flamegraph(void *ctx, const char *v, struct buf *err)
{
	((struct diff_opts *)ctx)->flame = v;
	return 0;
}

static int o_icicle(void *ctx, const char *v, struct buf *err)
{
	((struct diff_opts *)ctx)->exp.icicle = true;
	return 0;
}

static int o_top(void *ctx, const char *v, struct buf *err)
{
	char *end;
	long n = strtol(v, &end, 10);

	if (!*v || *end || n < 0 || n > 1000000) {
		buf_addf(err, "--top '%s': expected a count", v);
		return -1;
	}
	((struct diff_opts *)ctx)->top = n;
	return 0;
}

static int o_output(void *ctx, const char *v, struct buf *err)
{
	((struct diff_opts *)ctx)->output = v;
	return 0;
}

/* args_parse answers -h/--help itself; the row is there for args_help. */
static int o_help(void *ctx, const char *v, struct buf *err)
{
	BUG("--help reached its option callback");
}

static const struct opt diff_options[] = {
	{ "min-delta", 0, 1, o_min_delta, "TIME", "smallest change ever flagged (default 1ms)" },
	{ "flamegraph", 0, 1, o_flamegraph, "FILE",
	  "B's flamegraph, red = slower, blue = faster, grey = within noise (.gz compresses)" },
	{ "icicle", 0, 0, o_icicle, NULL, "the flamegraph with its root at the top" },
	{ "top", 0, 1, o_top, "N", "show at most N modules per list (default 20, 0 = all)" },
	{ "output", 'o', 1, o_output, "FILE", "write the report there instead of standard output" },
	{ "help", 'h', 0, o_help, NULL, "this text" },
	{ NULL, 0, 0, NULL, NULL, NULL },
};

static void usage(FILE *f)
{
	struct buf h = BUF_INIT;

	args_help(diff_options, &h);
	fprintf(f,
		"usage: coldstart diff A.json B.json [options]\n\n"
		"Compares profile B against profile A: the main process's import total and\n"
		"every module's self time, as medians over the non-warm-up runs.  A change is\n"
		"flagged when it is larger than the runs' spread (3 x 1.4826 x MAD of each\n"
		"side, combined, at least the typical module's) and larger than --min-delta;\n"
		"with 3 or more runs a side, B must also be slower in 90%% of run pairs.\n\n"
		"options:\n%s\n"
		"Exit status: 0 no regression flagged, 1 a regression flagged or a profile\n"
		"unreadable, 2 bad command line.  See docs/diff-check.md.\n",
		h.buf);
	buf_release(&h);
}

int cmd_diff(int argc, char **argv)
{
	struct diff_opts o = { .exp = EXPORT_OPTS_INIT, .output = "-", .min_delta = DIFF_MIN_DELTA_US, .top = 20 };
	struct profile a, b;
	struct diff d = DIFF_INIT;
	struct buf err = BUF_INIT, report = BUF_INIT;
	struct strvec pos = STRVEC_INIT;
	int rc, ret = EXIT_FAIL;

	profile_init(&a);
	profile_init(&b);
	rc = args_parse_all(diff_options, &o, argc, argv, &pos, &err);
	if (rc == 1) {
		usage(stdout);
		ret = EXIT_OK;
		goto out;
	}
	if (rc < 0 || pos.nr != 2) {
		if (rc < 0)
			error("%s", err.buf);
		else if (pos.nr < 2)
			error("diff needs two profiles, A and B");
		else
			error("diff takes two profiles, not '%s' too", pos.v[2]);
		fprintf(stderr, "Try 'coldstart diff --help'.\n");
		ret = EXIT_USAGE;
		goto out;
	}
	if (profile_read_json(&a, pos.v[0], &err) < 0 || profile_read_json(&b, pos.v[1], &err) < 0) {
		error("%s", err.buf);
		goto out;
	}
	if (diff_compute(&d, &a, &b, o.min_delta, &err) < 0) {
		error("%s", err.buf);
		goto out;
	}
	if (o.flame) {
		o.exp.diff = &d;
		if (export_to_path(&b, exporter_find("svg"), &o.exp, o.flame, &err) < 0) {
			error("%s", err.buf);
			goto out;
		}
	}
	diff_report(&d, pos.v[0], pos.v[1], (size_t)o.top, &report);
	if (export_write_data(o.output, report.buf, report.len, &err) < 0) {
		error("%s", err.buf);
		goto out;
	}
	ret = diff_regressions(&d) ? EXIT_FAIL : EXIT_OK;
out:
	diff_release(&d);
	profile_release(&a);
	profile_release(&b);
	strvec_clear(&pos);
	buf_release(&err);
	buf_release(&report);
	return ret;
}
