/*
 * `coldstart diff A B`: compares two saved profiles, flags changes larger
 * than the noise, and can draw B's flamegraph coloured by change.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cmd/builtin.h"
#include "render/ci_format.h"
#include "analysis/diff.h"
#include "render/export/export.h"
#include "model/profile.h"
#include "session/show.h"

struct diff_opts {
	struct export_opts exp; /* for --flamegraph */
	const char *flame;
	const char *output;
	int64_t min_delta;
	int top;
	enum ci_format format;
	const char *markdown; /* --markdown FILE: also append the Markdown there */
};

static const struct usage diff_usage = {
	.command = "diff",
	.synopsis = "usage: coldstart diff A.json B.json [options]\n\n"
		    "Compares profile B against profile A: the main process's import total and\n"
		    "every module's self time, as medians over the non-warm-up runs.  A change is\n"
		    "flagged when it is larger than the runs' spread (3 x 1.4826 x MAD of each\n"
		    "side, combined, at least the typical module's) and larger than --min-delta;\n"
		    "with 3 or more runs a side, B must also be slower in 90% of run pairs.\n\n",
	.footer = "Exit status: 0 no regression flagged, 1 a regression flagged or a profile\n"
		  "unreadable, 2 bad command line.  See docs/diff-check.md.\n",
};

int cmd_diff(int argc, char **argv)
{
	struct diff_opts o = { .exp = EXPORT_OPTS_INIT, .output = "-", .min_delta = DIFF_MIN_DELTA_US, .top = 20 };
	struct profile a, b;
	struct diff d = DIFF_INIT;
	struct buf err = BUF_INIT, report = BUF_INIT;
	struct strvec pos = STRVEC_INIT, mismatches = STRVEC_INIT;
	int rc, ret = EXIT_FAIL;
	size_t i;

	const struct opt options[] = {
		OPT_DURATION("min-delta", 0, &o.min_delta, "TIME", "smallest change ever flagged (default 1ms)"),
		OPT_STRING("flamegraph", 0, &o.flame, "FILE",
			   "B's flamegraph, red = slower, blue = faster, grey = within noise (.gz compresses)"),
		OPT_BOOL("icicle", 0, &o.exp.icicle, "the flamegraph with its root at the top"),
		OPT_INT("top", 0, &o.top, 0, 1000000, "N", "show at most N modules per list (default 20, 0 = all)"),
		OPT_STRING("output", 'o', &o.output, "FILE", "write the report there instead of standard output"),
		OPT_CALLBACK("format", 0, &o.format, ci_format_opt, "FMT",
			     "text (default), markdown (a pull-request comment) or github (annotations)"),
		OPT_CALLBACK("markdown", 0, &o.markdown, ci_markdown_opt, "FILE",
			     "also append the Markdown to FILE, e.g. \"$GITHUB_STEP_SUMMARY\""),
		OPT_HELP("help", 'h', NULL, "this text"),
		OPT_END(),
	};

	profile_init(&a);
	profile_init(&b);
	rc = args_parse_all(options, argc, argv, &pos, &err);
	if (rc) {
		ret = usage_stop(&diff_usage, options, rc, err.buf);
		goto out;
	}
	if (pos.nr != 2) {
		if (pos.nr < 2)
			ret = usage_error(&diff_usage, "diff needs two profiles, A and B");
		else
			ret = usage_error(&diff_usage, "diff takes two profiles, not '%s' too", pos.v[2]);
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
	diff_mismatches(&a, &b, &mismatches);
	if (o.format == CI_TEXT) {
		/* On stderr, so a report redirected to a file still shows it. */
		for (i = 0; i < mismatches.nr; i++)
			fprintf(stderr, "coldstart: warning: %s; the comparison is not like for like\n",
				mismatches.v[i]);
		diff_report(&d, pos.v[0], pos.v[1], (size_t)o.top, &report);
	} else if (o.format == CI_MARKDOWN) {
		diff_report_markdown(&d, pos.v[0], pos.v[1], (size_t)o.top, &mismatches, &report);
	} else {
		diff_report_github(&d, pos.v[1], (size_t)o.top, &mismatches, &report);
	}
	if (export_write_data(o.output, report.buf, report.len, &err) < 0) {
		error("%s", err.buf);
		goto out;
	}
	if (o.markdown) {
		buf_reset(&report);
		diff_report_markdown(&d, pos.v[0], pos.v[1], (size_t)o.top, &mismatches, &report);
		if (ci_append_file(o.markdown, report.buf, report.len, &err) < 0) {
			error("%s", err.buf);
			goto out;
		}
	}
	ret = diff_regressions(&d) ? EXIT_FAIL : EXIT_OK;
out:
	diff_release(&d);
	profile_release(&a);
	profile_release(&b);
	strvec_clear(&pos);
	strvec_clear(&mismatches);
	buf_release(&err);
	buf_release(&report);
	return ret;
}
