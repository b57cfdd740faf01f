/*
 * `coldstart diff A B`: compares two saved profiles, flags changes larger
 * than the noise, and can draw B's flamegraph coloured by change.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "diff.h"
#include "export/export.h"
#include "profile.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: coldstart diff A.json B.json [options]\n\n"
		   "Compares profile B against profile A: the main process's import total and\n"
		   "every module's self time, as medians over the non-warm-up runs.  A change is\n"
		   "flagged when it is larger than the runs' spread (3 x 1.4826 x MAD of each\n"
		   "side, combined, at least the typical module's) and larger than --min-delta;\n"
		   "with 3 or more runs a side, B must also be slower in 90%% of run pairs.\n\n"
		   "      --min-delta TIME  smallest change ever flagged (default 1ms)\n"
		   "      --flamegraph FILE B's flamegraph, red = slower, blue = faster, grey =\n"
		   "                        within noise (.gz compresses)\n"
		   "      --icicle          the flamegraph with its root at the top\n"
		   "      --top N           show at most N modules per list (default 20, 0 = all)\n"
		   "  -o, --output FILE     write the report there instead of standard output\n"
		   "  -h, --help            this text\n\n"
		   "Exit status: 0 no regression flagged, 1 a regression flagged or a profile\n"
		   "unreadable, 2 bad command line.  See docs/diff-check.md.\n");
}

static int opt_value(int argc, char **argv, int *i, const char *lng, const char *shrt,
		     const char **val)
{
	const char *a = argv[*i];
	size_t len = strlen(lng);

	if (!strncmp(a, lng, len) && a[len] == '=') {
		*val = a + len + 1;
		return 1;
	}
	if (strcmp(a, lng) && (!shrt || strcmp(a, shrt)))
		return 0;
	if (*i + 1 >= argc) {
		fprintf(stderr, "coldstart: error: %s needs a value\n", a);
		return -1;
	}
	*val = argv[++*i];
	return 1;
}

int cmd_diff(int argc, char **argv)
{
	struct export_opts o = EXPORT_OPTS_INIT;
	struct profile a, b;
	struct diff d = DIFF_INIT;
	struct buf err = BUF_INIT, report = BUF_INIT;
	const char *files[2] = { NULL, NULL }, *flame = NULL, *output = "-", *val;
	int64_t min_delta = DIFF_MIN_DELTA_US;
	long top = 20;
	int i, m, nfiles = 0, ret = EXIT_USAGE;

	profile_init(&a);
	profile_init(&b);
	for (i = 1; i < argc; i++) {
		const char *arg = argv[i];
		char *end;

		if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
			usage(stdout);
			ret = EXIT_OK;
			goto out;
		}
		if ((m = opt_value(argc, argv, &i, "--min-delta", NULL, &val))) {
			if (m < 0)
				goto out;
			if (parse_duration_us(val, &min_delta) < 0) {
				fprintf(stderr, "coldstart: error: --min-delta '%s': not a duration "
						"(e.g. 1ms, 500us)\n",
					val);
				goto out;
			}
		} else if ((m = opt_value(argc, argv, &i, "--flamegraph", NULL, &val))) {
			if (m < 0)
				goto out;
			flame = val;
		} else if ((m = opt_value(argc, argv, &i, "--output", "-o", &val))) {
			if (m < 0)
				goto out;
			output = val;
		} else if ((m = opt_value(argc, argv, &i, "--top", NULL, &val))) {
			if (m < 0)
				goto out;
			top = strtol(val, &end, 10);
			if (!*val || *end || top < 0 || top > 1000000) {
				fprintf(stderr, "coldstart: error: --top '%s': expected a count\n", val);
				goto out;
			}
		} else if (!strcmp(arg, "--icicle")) {
			o.icicle = true;
		} else if (arg[0] == '-' && arg[1]) {
			fprintf(stderr, "coldstart: error: unknown option '%s'\n", arg);
			usage(stderr);
			goto out;
		} else if (nfiles < 2) {
			files[nfiles++] = arg;
		} else {
			fprintf(stderr, "coldstart: error: diff takes two profiles, not '%s' too\n", arg);
			goto out;
		}
	}
	if (nfiles != 2) {
		fprintf(stderr, "coldstart: error: diff needs two profiles, A and B\n");
		usage(stderr);
		goto out;
	}
	ret = EXIT_FAIL;
	if (profile_read_json(&a, files[0], &err) < 0 || profile_read_json(&b, files[1], &err) < 0) {
		fprintf(stderr, "coldstart: error: %s\n", err.buf);
		goto out;
	}
	if (diff_compute(&d, &a, &b, min_delta, &err) < 0) {
		fprintf(stderr, "coldstart: error: %s\n", err.buf);
		goto out;
	}
	if (flame) {
		o.diff = &d;
		if (export_to_path(&b, exporter_find("svg"), &o, flame, &err) < 0) {
			fprintf(stderr, "coldstart: error: %s\n", err.buf);
			goto out;
		}
	}
	diff_report(&d, files[0], files[1], (size_t)top, &report);
	if (export_write_data(output, report.buf, report.len, &err) < 0) {
		fprintf(stderr, "coldstart: error: %s\n", err.buf);
		goto out;
	}
	ret = diff_regressions(&d) ? EXIT_FAIL : EXIT_OK;
out:
	diff_release(&d);
	profile_release(&a);
	profile_release(&b);
	buf_release(&err);
	buf_release(&report);
	return ret;
}
