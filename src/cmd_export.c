/*
 * `coldstart export`: reads a saved profile and writes it as an SVG
 * flamegraph, folded stacks, speedscope, Chrome trace or HTML report.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "builtin.h"
#include "export/export.h"
#include "profile.h"

struct export_cmd_opts {
	struct export_opts exp;
	const char *format; /* NULL: from the output name, else svg */
	const char *output;
};

static int parse_number(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (!*s || *end || !(v >= lo && v <= hi))
		return -1;
	*out = v;
	return 0;
}

static int o_format(void *ctx, const char *v, struct buf *err)
{
	((struct export_cmd_opts *)ctx)->format = v;
	return 0;
}

static int o_output(void *ctx, const char *v, struct buf *err)
{
	((struct export_cmd_opts *)ctx)->output = v;
	return 0;
}

static int o_icicle(void *ctx, const char *v, struct buf *err)
{
	((struct export_cmd_opts *)ctx)->exp.icicle = true;
	return 0;
}

static int o_all_procs(void *ctx, const char *v, struct buf *err)
{
	((struct export_cmd_opts *)ctx)->exp.all_procs = true;
	return 0;
}

static int o_run(void *ctx, const char *v, struct buf *err)
{
	double num;

	if (parse_number(v, 1, 1e9, &num) < 0 || num != (long)num) {
		buf_addf(err, "--run '%s': expected a run number from 1", v);
		return -1;
	}
	((struct export_cmd_opts *)ctx)->exp.run = (long)num - 1;
	return 0;
}

static int o_width(void *ctx, const char *v, struct buf *err)
{
	double num;

	if (parse_number(v, 200, 100000, &num) < 0) {
		buf_addf(err, "--width '%s': expected 200 to 100000", v);
		return -1;
	}
	((struct export_cmd_opts *)ctx)->exp.width = (int)num;
	return 0;
}

static int o_minwidth(void *ctx, const char *v, struct buf *err)
{
	double num;

	if (parse_number(v, 0, 1000, &num) < 0) {
		buf_addf(err, "--minwidth '%s': expected 0 to 1000 (px)", v);
		return -1;
	}
	((struct export_cmd_opts *)ctx)->exp.min_width = num;
	return 0;
}

static int o_title(void *ctx, const char *v, struct buf *err)
{
	((struct export_cmd_opts *)ctx)->exp.title = v;
	return 0;
}

/* args_parse answers -h/--help itself; the row is there for args_help. */
static int o_help(void *ctx, const char *v, struct buf *err)
{
	BUG("--help reached its option callback");
}

static const struct opt export_options[] = {
	{ "format", 'f', 1, o_format, "FMT", "output format (default: from the -o name, else svg; see formats)" },
	{ "output", 'o', 1, o_output, "FILE",
	  "where to write; '-' (the default) is standard output, a name ending in .gz is gzip-compressed" },
	{ "icicle", 0, 0, o_icicle, NULL, "SVG/HTML: root at the top" },
	{ "all-procs", 0, 0, o_all_procs, NULL,
	  "SVG/folded/HTML: every process, stacked (default: the main process; speedscope and chrome always hold all)" },
	{ "run", 0, 1, o_run, "N", "draw run N, counting from 1 (default: the median run)" },
	{ "width", 0, 1, o_width, "PX", "SVG width in pixels (default 1200)" },
	{ "minwidth", 0, 1, o_minwidth, "PX", "SVG: leave out frames narrower than PX (default 0.1)" },
	{ "title", 0, 1, o_title, "TEXT", "title of the SVG/HTML/speedscope document" },
	{ "help", 'h', 0, o_help, NULL, "this text" },
	{ NULL, 0, 0, NULL, NULL, NULL },
};

static void usage(FILE *f)
{
	struct buf h = BUF_INIT;
	const struct exporter *list;
	size_t nr, i;

	args_help(export_options, &h);
	fprintf(f,
		"usage: coldstart export PROFILE [--format FMT] [-o FILE] [options]\n\n"
		"Writes a saved profile (JSON, gzip or plain) in another format.\n\n"
		"options:\n%s\n"
		"formats:\n",
		h.buf);
	list = exporter_list(&nr);
	for (i = 0; i < nr; i++)
		fprintf(f, "  %-10s %s (.%s)\n", list[i].name, list[i].summary, list[i].ext);
	fprintf(f, "\nExit status: 0 written, 1 the profile could not be read or the output not\n"
		   "written, 2 bad command line.  See docs/export.md.\n");
	buf_release(&h);
}

/*
 * --format names the exporter; without it the -o name's extension does, and
 * standard output gets SVG.  NULL with a message in err.
 */
static const struct exporter *pick_exporter(const struct export_cmd_opts *o, struct buf *err)
{
	const struct exporter *e;

	if (o->format) {
		e = exporter_find(o->format);
		if (!e)
			buf_addf(err, "unknown format '%s' (svg, folded, speedscope, chrome, html)", o->format);
	} else if (strcmp(o->output, "-")) {
		e = exporter_for_path(o->output);
		if (!e)
			buf_addf(err, "cannot tell the format from '%s'; give --format", o->output);
	} else {
		e = exporter_find("svg");
	}
	return e;
}

int cmd_export(int argc, char **argv)
{
	struct export_cmd_opts o = { .exp = EXPORT_OPTS_INIT, .output = "-" };
	struct profile p;
	struct buf err = BUF_INIT;
	struct strvec pos = STRVEC_INIT;
	const struct exporter *e = NULL;
	int rc, ret = EXIT_USAGE;

	profile_init(&p);
	rc = args_parse_all(export_options, &o, argc, argv, &pos, &err);
	if (rc == 1) {
		usage(stdout);
		ret = EXIT_OK;
		goto out;
	}
	if (rc == 0 && !pos.nr)
		buf_adds(&err, "export needs a PROFILE");
	else if (rc == 0 && pos.nr > 1)
		buf_addf(&err, "unexpected argument '%s'", pos.v[1]);
	else if (rc == 0)
		e = pick_exporter(&o, &err);
	if (!e) {
		error("%s", err.buf);
		fprintf(stderr, "Try 'coldstart export --help'.\n");
		goto out;
	}
	ret = EXIT_FAIL;
	if (profile_read_json(&p, pos.v[0], &err) < 0) {
		error("%s", err.buf);
		goto out;
	}
	if (export_to_path(&p, e, &o.exp, o.output, &err) < 0) {
		error("%s", err.buf);
		goto out;
	}
	ret = EXIT_OK;
out:
	profile_release(&p);
	strvec_clear(&pos);
	buf_release(&err);
	return ret;
}
