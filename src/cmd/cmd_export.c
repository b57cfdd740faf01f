/*
 * `coldstart export`: reads a saved profile and writes it as an SVG
 * flamegraph, folded stacks, speedscope, Chrome trace or HTML report.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cmd/builtin.h"
#include "render/export/export.h"
#include "model/profile.h"

struct export_cmd_opts {
	struct export_opts exp;
	const char *format; /* NULL: from the output name, else svg */
	const char *output;
};

/* The run to draw, counting from 1 (export_opts counts from 0). */
static int set_run(const struct opt *opt, const char *v, struct buf *err)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || end == v || *end || n < 1) {
		buf_addf(err, "--run '%s': expected a run number from 1", v);
		return -1;
	}
	*(long *)opt->value = n - 1;
	return 0;
}

static int set_minwidth(const struct opt *opt, const char *v, struct buf *err)
{
	char *end;
	double px = strtod(v, &end);

	if (!*v || *end || !(px >= 0 && px <= 1000)) {
		buf_addf(err, "--minwidth '%s': expected 0 to 1000 (px)", v);
		return -1;
	}
	*(double *)opt->value = px;
	return 0;
}

static void print_formats(FILE *f)
{
	const struct exporter *list;
	size_t nr, i;

	list = exporter_list(&nr);
	for (i = 0; i < nr; i++)
		fprintf(f, "  %-11s %s (.%s)\n", list[i].name, list[i].summary, list[i].ext);
	fprintf(f, "\nExit status: 0 written, 1 the profile could not be read or the output not\n"
		   "written, 2 bad command line.  See docs/export.md.\n");
}

static const struct usage export_usage = {
	.command = "export",
	.synopsis = "usage: coldstart export PROFILE [--format FMT] [-o FILE] [options]\n\n"
		    "Writes a saved profile (JSON, gzip or plain) in another format.\n\n",
	.footer = "formats:\n",
	.more = print_formats,
};

/*
 * --format names the exporter; without it the -o name's extension does, and
 * standard output gets SVG.  NULL with a message in err.
 */
static const struct exporter *pick_exporter(const struct export_cmd_opts *o, struct buf *err)
{
	const struct exporter *e;

	if (o->format) {
		e = exporter_find(o->format);
		if (!e) {
			const struct exporter *list;
			size_t nr, i;

			list = exporter_list(&nr);
			buf_addf(err, "unknown format '%s' (", o->format);
			for (i = 0; i < nr; i++)
				buf_addf(err, "%s%s", i ? ", " : "", list[i].name);
			buf_adds(err, ")");
		}
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

	const struct opt options[] = {
		OPT_STRING("format", 'f', &o.format, "FMT",
			   "output format (default: from the -o name, else svg; see formats)"),
		OPT_STRING(
			"output", 'o', &o.output, "FILE",
			"where to write; '-' (the default) is standard output, a name ending in .gz is gzip-compressed"),
		OPT_BOOL("icicle", 0, &o.exp.icicle, "SVG/HTML: root at the top"),
		OPT_BOOL(
			"all-procs", 0, &o.exp.all_procs,
			"SVG/folded/HTML: every process, stacked (default: the main process; speedscope and chrome always "
			"hold all)"),
		OPT_CALLBACK(
			"run", 0, &o.exp.run, set_run, "N",
			"draw run N of the profile, warm-ups counted, as the report's \"run N of the JSON\" (default: the run the report shows)"),
		OPT_INT("width", 0, &o.exp.width, 200, 100000, "PX", "SVG width in pixels (default 1200)"),
		OPT_CALLBACK("minwidth", 0, &o.exp.min_width, set_minwidth, "PX",
			     "SVG: leave out frames narrower than PX (default 0.1)"),
		OPT_STRING("title", 0, &o.exp.title, "TEXT", "title of the SVG/HTML/speedscope document"),
		OPT_STRING("service-name", 0, &o.exp.service, "NAME",
			   "OTLP: the resource's service.name (default: $OTEL_SERVICE_NAME, else the target's script)"),
		OPT_INT("top", 0, &o.exp.top, 1, 10000, "N",
			"prometheus: gauges for the N costliest modules (default 10)"),
		OPT_HELP("help", 'h', NULL, "this text"),
		OPT_END(),
	};

	profile_init(&p);
	o.exp.service = getenv("OTEL_SERVICE_NAME");
	rc = args_parse_all(options, argc, argv, &pos, &err);
	if (rc) {
		ret = usage_stop(&export_usage, options, rc, err.buf);
		goto out;
	}
	if (!pos.nr)
		buf_adds(&err, "export needs a PROFILE");
	else if (pos.nr > 1)
		buf_addf(&err, "unexpected argument '%s'", pos.v[1]);
	else
		e = pick_exporter(&o, &err);
	if (!e) {
		ret = usage_error(&export_usage, "%s", err.buf);
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
