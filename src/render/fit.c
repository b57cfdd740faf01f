/*
 * Fitting report text to a width (see fit.h): the terminal's width, columns
 * of UTF-8 text, shortening in the middle and wrapping with a hanging indent.
 */
#include "render/fit.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define ELLIPSIS "\xe2\x80\xa6"

size_t fit_width(int fd)
{
	const char *c = getenv("COLUMNS");
	struct winsize ws;

	if (c && *c) {
		char *end;
		long n = strtol(c, &end, 10);

		if (!*end && n >= 20 && n <= 10000)
			return (size_t)n;
	}
	if (isatty(fd) && !ioctl(fd, TIOCGWINSZ, &ws) && ws.ws_col >= 20)
		return ws.ws_col;
	return FIT_DEFAULT_WIDTH;
}

size_t fit_cols(const char *s)
{
	size_t n = 0;

	while (*s) {
		if (*s == '\033' && s[1] == '[') {
			s += 2;
			while (*s && !(*s >= '@' && *s <= '~'))
				s++;
			if (*s)
				s++;
			continue;
		}
		n += ((unsigned char)*s & 0xc0) != 0x80;
		s++;
	}
	return n;
}

/* Bytes of s that hold its first cols characters (s has no colour sequences). */
static size_t bytes_of_cols(const char *s, size_t cols)
{
	size_t i = 0;

	while (s[i] && cols) {
		i++;
		while (((unsigned char)s[i] & 0xc0) == 0x80)
			i++;
		cols--;
	}
	return i;
}

void fit_add(struct buf *out, const char *s, size_t width)
{
	size_t cols = fit_cols(s), head, tail;
	const char *t;

	if (width == FIT_UNLIMITED || cols <= width) {
		buf_adds(out, s);
		return;
	}
	if (width < 2) {
		buf_adds(out, ELLIPSIS);
		return;
	}
	head = (width - 1) / 2;
	tail = width - 1 - head;
	buf_add(out, s, bytes_of_cols(s, head));
	buf_adds(out, ELLIPSIS);
	t = s + bytes_of_cols(s, cols - tail);
	buf_adds(out, t);
}

void fit_add_command(struct buf *out, const char *s, size_t width)
{
	size_t cols = fit_cols(s), half, most, tail = 0, c = 0;
	const char *t, *end = NULL;

	if (width == FIT_UNLIMITED || cols <= width || width < 8) {
		fit_add(out, s, width);
		return;
	}
	/* The last whole arguments within half the width; else the last one alone within two thirds. */
	half = (width - 1) / 2;
	most = width - 1 - (width - 1) / 3;
	for (t = s + strlen(s); t > s; t--) {
		/* Columns of t - 1 on: UTF-8 continuation bytes take none (a command has no colour). */
		c += ((unsigned char)t[-1] & 0xc0) != 0x80;
		if (c > most || (end && c > half))
			break;
		if (t[-1] == ' ') {
			end = t - 1;
			tail = c;
		}
	}
	if (!end) {
		fit_add(out, s, width);
		return;
	}
	buf_add(out, s, bytes_of_cols(s, width - 1 - tail));
	buf_adds(out, ELLIPSIS);
	buf_adds(out, end);
}

void fit_add_chain(struct buf *out, const struct proc *pr, int32_t i, size_t width)
{
	int32_t path[4096];
	size_t nr = 0, k, used, keep;

	for (i = i >= 0 ? pr->nodes[i].parent : -1; i >= 0 && nr < ARRAY_SIZE(path); i = pr->nodes[i].parent)
		path[nr++] = i;
	if (!nr)
		return;
	used = fit_cols(node_name(pr, path[nr - 1]));
	for (k = nr - 1; k > 0; k--)
		used += 3 + fit_cols(node_name(pr, path[k - 1]));
	if (width == FIT_UNLIMITED || used <= width) {
		for (k = nr; k > 0; k--)
			buf_addf(out, "%s%s", node_name(pr, path[k - 1]), k > 1 ? " > " : "");
		return;
	}
	/* The root, an ellipsis, and as many of the last links as fit; else the last links alone. */
	used = fit_cols(node_name(pr, path[nr - 1])) + 4;
	for (keep = 0; keep + 1 < nr && used + 3 + fit_cols(node_name(pr, path[keep])) <= width; keep++)
		used += 3 + fit_cols(node_name(pr, path[keep]));
	if (keep) {
		buf_addf(out, "%s > " ELLIPSIS, node_name(pr, path[nr - 1]));
	} else {
		used = 1;
		for (keep = 0; keep < nr && used + 3 + fit_cols(node_name(pr, path[keep])) <= width; keep++)
			used += 3 + fit_cols(node_name(pr, path[keep]));
		if (!keep) {
			/* Not even the parent whole: the parent shortened, still marked as the end of a chain. */
			if (width >= 8) {
				buf_adds(out, ELLIPSIS " > ");
				width -= 4;
			}
			fit_add(out, node_name(pr, path[0]), width);
			return;
		}
		buf_adds(out, ELLIPSIS);
	}
	for (k = keep; k > 0; k--)
		buf_addf(out, " > %s", node_name(pr, path[k - 1]));
}

void fit_add_wrapped(struct buf *out, const char *text, size_t col, size_t indent, size_t width)
{
	bool first = true;

	if (width != FIT_UNLIMITED && indent + 10 > width)
		indent = width > 10 ? width - 10 : 0;
	while (*text) {
		size_t gap = strspn(text, " "), len, w;
		char *word;

		text += gap;
		if (!*text)
			break;
		len = strcspn(text, " ");
		word = xstrndup(text, len);
		w = fit_cols(word);
		/* Spaces inside a line are kept (table columns); a break replaces them. */
		if (!first && width != FIT_UNLIMITED && col + gap + w > width) {
			buf_addf(out, "\n%*s", (int)indent, "");
			col = indent;
		} else if (!first) {
			buf_addf(out, "%*s", (int)gap, "");
			col += gap;
		}
		if (width != FIT_UNLIMITED && col + w > width && col < width) {
			fit_add(out, word, width - col);
			col = width;
		} else {
			buf_adds(out, word);
			col += w;
		}
		free(word);
		text += len;
		first = false;
	}
	buf_addch(out, '\n');
}

void fit_add_head(struct buf *out, const char *s, size_t width)
{
	if (width == FIT_UNLIMITED || fit_cols(s) <= width) {
		buf_adds(out, s);
		return;
	}
	if (width)
		buf_add(out, s, bytes_of_cols(s, width - 1));
	buf_adds(out, ELLIPSIS);
}

/*
 * Where a wrapped line's continuation starts (see fit_reflow): *bytes of
 * line before it, and its column.
 */
static size_t text_column(const char *line, size_t width, size_t *bytes)
{
	size_t lead = strspn(line, " ");
	const char *gap = strstr(line + lead, "  ");

	if (gap) {
		size_t n = (size_t)(gap - line) + strspn(gap, " ");
		char *head = xstrndup(line, n);
		size_t col = fit_cols(head);

		free(head);
		if (col < width / 2 && line[n]) {
			*bytes = n;
			return col;
		}
	}
	*bytes = lead;
	return lead + 2;
}

void fit_reflow(struct buf *out, const char *text, size_t width)
{
	while (*text) {
		size_t len = strcspn(text, "\n");
		char *line = xstrndup(text, len);

		if (width == FIT_UNLIMITED || fit_cols(line) <= width) {
			buf_add(out, line, len);
			buf_addch(out, '\n');
		} else {
			size_t bytes, col = text_column(line, width, &bytes);

			buf_add(out, line, bytes);
			fit_add_wrapped(out, line + bytes, fit_cols(out->buf + (out->len - bytes)), col, width);
		}
		free(line);
		text += len;
		if (*text == '\n')
			text++;
	}
}
