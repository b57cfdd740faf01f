/*
 * Markdown cells, GitHub workflow commands and the appended summary file of
 * `check` and `diff` (see ci_format.h).
 */
#include "render/ci_format.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "output.h"
#include "outfile.h"

int ci_format_parse(const char *s, enum ci_format *out, struct buf *err)
{
	if (!strcmp(s, "text"))
		*out = CI_TEXT;
	else if (!strcmp(s, "markdown") || !strcmp(s, "md"))
		*out = CI_MARKDOWN;
	else if (!strcmp(s, "github"))
		*out = CI_GITHUB;
	else {
		buf_addf(err, "--format takes text, markdown or github, not '%s'", s);
		return -1;
	}
	return 0;
}

int ci_format_opt(const struct opt *opt, const char *v, struct buf *err)
{
	return ci_format_parse(v, opt->value, err);
}

int ci_markdown_opt(const struct opt *opt, const char *v, struct buf *err)
{
	if (output_path_check(v, err) < 0)
		return ARGS_FAILED;
	*(const char **)opt->value = v;
	return 0;
}

static void add_escaped(struct buf *out, const char *s, bool property)
{
	for (; *s; s++) {
		if (*s == '%')
			buf_adds(out, "%25");
		else if (*s == '\r')
			buf_adds(out, "%0D");
		else if (*s == '\n')
			buf_adds(out, "%0A");
		else if (property && *s == ':')
			buf_adds(out, "%3A");
		else if (property && *s == ',')
			buf_adds(out, "%2C");
		else
			buf_addch(out, *s);
	}
}

void ci_annotation(struct buf *out, const char *level, const char *title, const char *message)
{
	buf_addf(out, "::%s title=", level);
	add_escaped(out, title, true);
	buf_adds(out, "::");
	add_escaped(out, message, false);
	buf_addch(out, '\n');
}

void ci_md_cell(struct buf *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			buf_adds(out, "\\|");
		else if (*s == '\n' || *s == '\r')
			buf_addch(out, ' ');
		else
			buf_addch(out, *s);
	}
}

int ci_append_file(const char *path, const char *data, size_t len, struct buf *err)
{
	return outfile_append(path, data, len, err);
}
