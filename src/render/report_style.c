/*
 * What the parts of the text report share (see report_style.h).
 */
#include "render/report_style.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "render/fit.h"

void report_opts_init(struct report_opts *o)
{
	o->top = 15;
	o->tree = false;
	o->max_depth = -1;
	o->threshold_us = 0;
	o->all_processes = false;
	o->color = false;
	o->width = FIT_DEFAULT_WIDTH;
	o->wide = false;
}

size_t report_width(const struct report_opts *o)
{
	return o->wide ? FIT_UNLIMITED : o->width;
}

bool report_want_color(int fd)
{
	const char *nc = getenv("NO_COLOR");
	const char *term = getenv("TERM");

	if (nc && *nc)
		return false;
	if (term && !strcmp(term, "dumb"))
		return false;
	return isatty(fd);
}

static const struct style plain = { "", "", "", "", "", "" };
static const struct style ansi = { "\033[1m", "\033[2m", "\033[31m", "\033[33m", "\033[32m", "\033[0m" };

const struct style *style_of(const struct report_opts *o)
{
	return o->color ? &ansi : &plain;
}

void heading(struct buf *out, const struct style *st, const char *title)
{
	buf_addf(out, "\n%s%s%s\n", st->bold, title, st->reset);
}

void add_dur_col(struct buf *out, int64_t us, int width)
{
	struct buf d = BUF_INIT;

	if (us == UNKNOWN)
		buf_adds(&d, "-");
	else
		buf_add_duration(&d, us);
	buf_addf(out, "%*s", width, d.buf);
	buf_release(&d);
}

void add_dur(struct buf *out, int64_t us)
{
	if (us == UNKNOWN)
		buf_adds(out, "unknown");
	else
		buf_add_duration(out, us);
}
