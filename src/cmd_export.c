/*
 * `coldstart export`: reads a saved profile and writes it as an SVG
 * flamegraph, folded stacks, speedscope, Chrome trace or HTML report.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "export/export.h"
#include "profile.h"

static void usage(FILE *f)
{
	const struct exporter *list;
	size_t nr, i;

	fprintf(f, "usage: coldstart export PROFILE [--format FMT] [-o FILE] [options]\n\n"
		   "Writes a saved profile (JSON, gzip or plain) in another format.\n\n"
		   "  -f, --format FMT    output format (default: from the -o name, else svg):\n");
	list = exporter_list(&nr);
	for (i = 0; i < nr; i++)
		fprintf(f, "                        %-10s %s (.%s)\n", list[i].name, list[i].summary,
			list[i].ext);
	fprintf(f, "  -o, --output FILE   where to write; '-' (the default) is standard output,\n"
		   "                      a name ending in .gz is gzip-compressed\n"
		   "      --icicle        SVG/HTML: root at the top\n"
		   "      --all-procs     SVG/folded/HTML: every process, stacked (default: the\n"
		   "                      main process; speedscope and chrome always hold all)\n"
		   "      --run N         draw run N, counting from 1 (default: the median run)\n"
		   "      --width PX      SVG width in pixels (default 1200)\n"
		   "      --minwidth PX   SVG: leave out frames narrower than PX (default 0.1)\n"
		   "      --title TEXT    title of the SVG/HTML/speedscope document\n"
		   "  -h, --help          this text\n\n"
		   "Exit status: 0 written, 1 the profile could not be read or the output not\n"
		   "written, 2 bad command line.  See docs/export.md.\n");
}

/*
 * Matches "--name VALUE", "--name=VALUE" and the short form "-x VALUE";
 * advances *i past the value.  Returns 1 on a match, 0 if argv[*i] is
 * another option, -1 when the value is missing.
 */
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

static int parse_number(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (!*s || *end || !(v >= lo && v <= hi))
		return -1;
	*out = v;
	return 0;
}

int cmd_export(int argc, char **argv)
{
	struct export_opts o = EXPORT_OPTS_INIT;
	struct profile p;
	struct buf err = BUF_INIT;
	const char *input = NULL, *output = "-", *format = NULL, *val;
	const struct exporter *e = NULL;
	int i, m, ret = EXIT_USAGE;
	double num;

	profile_init(&p);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			ret = EXIT_OK;
			goto out;
		}
		if ((m = opt_value(argc, argv, &i, "--format", "-f", &val))) {
			if (m < 0)
				goto out;
			format = val;
		} else if ((m = opt_value(argc, argv, &i, "--output", "-o", &val))) {
			if (m < 0)
				goto out;
			output = val;
		} else if ((m = opt_value(argc, argv, &i, "--run", NULL, &val))) {
			if (m < 0)
				goto out;
			if (parse_number(val, 1, 1e9, &num) < 0 || num != (long)num) {
				fprintf(stderr, "coldstart: error: --run '%s': expected a run number from 1\n", val);
				goto out;
			}
			o.run = (long)num - 1;
		} else if ((m = opt_value(argc, argv, &i, "--width", NULL, &val))) {
			if (m < 0)
				goto out;
			if (parse_number(val, 200, 100000, &num) < 0) {
				fprintf(stderr, "coldstart: error: --width '%s': expected 200 to 100000\n", val);
				goto out;
			}
			o.width = (int)num;
		} else if ((m = opt_value(argc, argv, &i, "--minwidth", NULL, &val))) {
			if (m < 0)
				goto out;
			if (parse_number(val, 0, 1000, &num) < 0) {
				fprintf(stderr, "coldstart: error: --minwidth '%s': expected 0 to 1000 (px)\n", val);
				goto out;
			}
			o.min_width = num;
		} else if ((m = opt_value(argc, argv, &i, "--title", NULL, &val))) {
			if (m < 0)
				goto out;
			o.title = val;
		} else if (!strcmp(a, "--icicle")) {
			o.icicle = true;
		} else if (!strcmp(a, "--all-procs")) {
			o.all_procs = true;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "coldstart: error: unknown option '%s'\n", a);
			usage(stderr);
			goto out;
		} else if (!input) {
			input = a;
		} else {
			fprintf(stderr, "coldstart: error: unexpected argument '%s'\n", a);
			usage(stderr);
			goto out;
		}
	}
	if (!input) {
		fprintf(stderr, "coldstart: error: export needs a PROFILE\n");
		usage(stderr);
		goto out;
	}
	if (format) {
		e = exporter_find(format);
		if (!e) {
			fprintf(stderr, "coldstart: error: unknown format '%s' (svg, folded, speedscope, "
					"chrome, html)\n",
				format);
			goto out;
		}
	} else if (strcmp(output, "-")) {
		e = exporter_for_path(output);
		if (!e) {
			fprintf(stderr, "coldstart: error: cannot tell the format from '%s'; give --format\n",
				output);
			goto out;
		}
	} else {
		e = exporter_find("svg");
	}
	ret = EXIT_FAIL;
	if (profile_read_json(&p, input, &err) < 0) {
		fprintf(stderr, "coldstart: error: %s\n", err.buf);
		goto out;
	}
	if (export_to_path(&p, e, &o, output, &err) < 0) {
		fprintf(stderr, "coldstart: error: %s\n", err.buf);
		goto out;
	}
	ret = EXIT_OK;
out:
	profile_release(&p);
	buf_release(&err);
	return ret;
}
