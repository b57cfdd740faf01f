/*
 * `coldstart parse LOG|-`: an existing -X importtime log (from CI, docker
 * logs, a colleague; gzip or plain) becomes the same report or profile.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "analysis/analyze.h"
#include "args.h"
#include "cmd/builtin.h"
#include "ingest/importtime.h"
#include "session/show.h"

struct parse_opts {
	struct show_opts show;
	const char *python_version;
};

static const struct usage parse_usage = {
	.command = "parse",
	.synopsis = "usage: coldstart parse [options] LOG|-\n\n"
		    "Reads the stderr of a run with -X importtime (or PYTHONPROFILEIMPORTTIME=1),\n"
		    "plain or gzip, '-' for stdin, and reports it like 'coldstart profile'.  Other\n"
		    "text in the log is ignored; several interpreters in one log become several\n"
		    "processes.\n\n",
	.footer = "Exit status: 0 ok, 1 unreadable log, no rows or broken budget, 2 usage.\n",
};

/*
 * zlib's own buffer, well below it_feed_from's 256 KiB reads so that a plain
 * log goes straight into the chunk (with 128 KiB, zlib copied every chunk
 * through its buffer: 14 M instructions per 200,000 rows under callgrind).
 */
#define GZ_BUFFER (1 << 16)

static long read_gz(void *ctx, char *buf, size_t len)
{
	return gzread(ctx, buf, (unsigned)len);
}

/* Streams the file through the parser so huge logs never sit in memory whole. */
static int parse_stream(const char *path, struct profile *p, struct run *r)
{
	struct it_parser *ps = it_parser_new(r);
	gzFile gz;
	int ret = -1;
	size_t nw, i;
	const struct it_warning *w;
	struct buf why = BUF_INIT;

	gz = !strcmp(path, "-") ? gzdopen(dup(0), "rb") : gzopen(path, "rb");
	if (!gz) {
		error("cannot read '%s': %s", path, strerror(errno ? errno : ENOMEM));
		goto out;
	}
	gzbuffer(gz, GZ_BUFFER);
	/* A stream that stops early is said too: the rows after the cut would be lost silently. */
	if (it_feed_from(ps, read_gz, gz, NULL) < 0 || gz_failure(gz, 0, &why)) {
		if (!why.len)
			gz_failure(gz, -1, &why);
		error("cannot read '%s': %s", path, why.len ? why.buf : "read error");
		gzclose(gz);
		goto out;
	}
	gzclose(gz);
	it_finish(ps, NULL);
	w = it_warnings(ps, &nw);
	for (i = 0; i < nw; i++)
		profile_add_warning(p, w[i].line, "%s", w[i].msg);
	if (!it_rows(ps)) {
		error("no -X importtime rows in '%s'", path);
		goto out;
	}
	ret = 0;
out:
	buf_release(&why);
	it_parser_free(ps);
	return ret;
}

int cmd_parse(int argc, char **argv)
{
	struct parse_opts o;
	struct profile p;
	struct buf err = BUF_INIT;
	struct strvec pos = STRVEC_INIT;
	int rc, ret = EXIT_FAIL;

	const struct opt options[] = {
		OPT_INCLUDE(o.show.options),
		OPT_STRING("python-version", 0, &o.python_version, "X.Y.Z", "record which Python printed the log"),
		OPT_END(),
	};

	memset(&o, 0, sizeof(o));
	show_opts_init(&o.show);
	profile_init(&p);
	rc = usage_parse_one(&parse_usage, options, argc, argv, "log", &pos, &err);
	if (rc >= 0) {
		ret = rc;
		goto out;
	}
	profile_stamp(&p, "parse");
	if (o.python_version)
		p.python_version = xstrdup(o.python_version);
	strvec_push(&p.target, pos.v[0]);
	if (parse_stream(pos.v[0], &p, profile_add_run(&p)) < 0)
		goto out;
	profile_analyze(&p, NULL);
	ret = show_profile(&p, &o.show);
out:
	show_opts_release(&o.show);
	profile_release(&p);
	strvec_clear(&pos);
	buf_release(&err);
	return ret;
}
