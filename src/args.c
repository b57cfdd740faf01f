/*
 * The option parser shared by every command, and the --help and usage-error
 * text around it (see args.h).
 */
#include "args.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "exit.h"

static bool takes_value(const struct opt *o)
{
	if (o->type == OPT_T_CALLBACK)
		return o->argh != NULL;
	return o->type != OPT_T_BOOL && o->type != OPT_T_HELP;
}

/* The row for --name (len bytes of name) or -c, looking into included tables; NULL if none. */
static const struct opt *find(const struct opt *opts, const char *name, size_t len, char c)
{
	const struct opt *found;

	for (; opts->type != OPT_T_END; opts++) {
		if (opts->type == OPT_T_INCLUDE) {
			if ((found = find(opts->include, name, len, c)))
				return found;
			continue;
		}
		if (opts->type == OPT_T_HELP)
			continue;
		if (name && opts->long_name && strlen(opts->long_name) == len && !strncmp(opts->long_name, name, len))
			return opts;
		if (!name && c && opts->short_name == c)
			return opts;
	}
	return NULL;
}

/* The long option nearest to name (name_distance), for "did you mean"; *best carries the distance. */
static const char *nearest(const struct opt *opts, const char *name, size_t *best, const char *found)
{
	size_t d;

	for (; opts->type != OPT_T_END; opts++) {
		if (opts->type == OPT_T_INCLUDE) {
			found = nearest(opts->include, name, best, found);
			continue;
		}
		if (opts->type == OPT_T_HELP || !opts->long_name)
			continue;
		d = name_distance(name, opts->long_name);
		if (d < *best) {
			*best = d;
			found = opts->long_name;
		}
	}
	return found;
}

static int parse_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_seconds(const char *v, const char *opt, double max, int64_t *us, struct buf *err)
{
	char *end;
	double sec;

	errno = 0;
	sec = strtod(v, &end);
	if (errno || end == v || *end || !(sec > 0) || sec > max) {
		buf_addf(err, "%s needs a positive number of seconds, not '%s'", opt, v);
		return -1;
	}
	*us = (int64_t)(sec * 1e6);
	return 0;
}

/* Sets what o points at from arg (NULL for flags); -1 with err filled. */
static int set_value(const struct opt *o, const char *shown, const char *arg, struct buf *err)
{
	int64_t n;

	switch (o->type) {
	case OPT_T_BOOL: *(bool *)o->value = true; return 0;
	case OPT_T_STRING: *(const char **)o->value = arg; return 0;
	case OPT_T_STRINGS: strvec_push(o->value, arg); return 0;
	case OPT_T_INT:
		if (parse_int(arg, o->min, o->max, &n) < 0) {
			buf_addf(err, "%s '%s': expected a number from %lld to %lld", shown, arg, (long long)o->min,
				 (long long)o->max);
			return -1;
		}
		*(int *)o->value = (int)n;
		return 0;
	case OPT_T_DURATION:
		if (parse_duration_us(arg, o->value) < 0) {
			buf_addf(err, "%s '%s': not a duration (e.g. 1ms, 500us)", shown, arg);
			return -1;
		}
		return 0;
	case OPT_T_SECONDS: return parse_seconds(arg, shown, (double)o->max, o->value, err);
	case OPT_T_CALLBACK: {
		int rc = o->cb(o, arg, err);

		if (rc < 0 && !err->len)
			buf_addf(err, "bad value for '%s': '%s'", shown, arg ? arg : "");
		return rc == ARGS_FAILED ? ARGS_FAILED : rc < 0 ? -1 : 0;
	}
	default: BUG("option '%s' of type %d reached the parser", shown, (int)o->type);
	}
}

int args_parse(const struct opt *opts, int argc, char **argv, int *i, const char *const *stop_at, struct buf *err)
{
	while (*i < argc) {
		const char *a = argv[*i];
		const struct opt *o = NULL;
		const char *value = NULL;
		const char *const *s;
		char shown[64];
		int rc;

		if (!strcmp(a, "--") || a[0] != '-' || !a[1])
			return 0;
		for (s = stop_at; s && *s; s++)
			if (!strcmp(a, *s))
				return 0;
		if (!strcmp(a, "--help") || !strcmp(a, "-h"))
			return 1;
		if (a[1] == '-') {
			const char *eq = strchr(a + 2, '=');
			size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);

			o = find(opts, a + 2, len, 0);
			if (eq)
				value = eq + 1;
			snprintf(shown, sizeof(shown), "--%.*s", (int)(len < 40 ? len : 40), a + 2);
		} else {
			o = find(opts, NULL, 0, a[1]);
			if (a[2])
				value = a + 2;
			snprintf(shown, sizeof(shown), "-%c", a[1]);
		}
		if (!o) {
			size_t best = SIZE_MAX;
			const char *near = NULL;
			char name[64];

			if (a[1] == '-') {
				snprintf(name, sizeof(name), "%.*s", (int)strcspn(a + 2, "="), a + 2);
				near = nearest(opts, name, &best, NULL);
			}
			buf_addf(err, "unknown option '%s'", a);
			if (near)
				buf_addf(err, "; did you mean '--%s'?", near);
			return -1;
		}
		(*i)++;
		if (takes_value(o) && !value) {
			if (*i >= argc) {
				buf_addf(err, "option '%s' needs a value (%s)", shown, o->argh ? o->argh : "VALUE");
				return -1;
			}
			value = argv[(*i)++];
		} else if (!takes_value(o) && value) {
			buf_addf(err, "option '%s' takes no value", shown);
			return -1;
		}
		/* Bad values are named by the long form, however they were given. */
		if (o->long_name)
			snprintf(shown, sizeof(shown), "--%s", o->long_name);
		rc = set_value(o, shown, value, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int args_parse_after_code(const struct opt *opts, int argc, char **argv, int *i, struct buf *err)
{
	char *code;
	int j = *i + 2, rc;

	if (*i + 1 >= argc || strcmp(argv[*i], "-c"))
		return 0;
	code = argv[*i + 1];
	rc = args_parse(opts, argc, argv, &j, NULL, err);
	if (rc)
		return rc;
	if (j < argc && !strcmp(argv[j], "--"))
		j++;
	argv[j - 2] = (char *)"-c";
	argv[j - 1] = code;
	*i = j - 2;
	return 0;
}

int args_parse_all(const struct opt *opts, int argc, char **argv, struct strvec *positional, struct buf *err)
{
	int i = 1, rc;

	while (i < argc) {
		rc = args_parse(opts, argc, argv, &i, NULL, err);
		if (rc)
			return rc;
		if (i >= argc)
			break;
		if (!strcmp(argv[i], "--")) {
			for (i++; i < argc; i++)
				strvec_push(positional, argv[i]);
			break;
		}
		strvec_push(positional, argv[i++]);
	}
	return 0;
}

/* The column option help starts in, and the widest option that fits before it. */
#define HELP_COLUMN 31

/* Appends words of text, wrapped to width, each line but the first indented by indent. */
static void wrap_words(const char *text, size_t first_col, size_t indent, size_t width, struct buf *out)
{
	size_t col = first_col;
	bool first = true;

	while (*text) {
		size_t skip = strspn(text, " "), len;

		text += skip;
		if (!*text)
			break;
		len = strcspn(text, " ");
		if (!first && col + 1 + len > width) {
			buf_addf(out, "\n%*s", (int)indent, "");
			col = indent;
		} else if (!first) {
			buf_addch(out, ' ');
			col++;
		}
		buf_add(out, text, len);
		col += len;
		text += len;
		first = false;
	}
}

/*
 * The text column of a table row such as "  svg        interactive ...":
 * after the first run of two spaces, or where the row before had it when
 * this row's first word fills its column; 0 when the line is not a row.
 */
static size_t row_column(const char *line, size_t lead, size_t width, size_t prev)
{
	const char *gap = strstr(line + lead, "  ");

	if (gap && (size_t)(gap - line) < width / 2)
		return (size_t)(gap - line) + strspn(gap, " ");
	if (prev > lead && prev < strlen(line) && line[prev - 1] == ' ' && line[prev] != ' ')
		return prev;
	return 0;
}

void text_wrap(const char *text, size_t width, struct buf *out)
{
	size_t prev = 0;

	while (*text) {
		size_t len = strcspn(text, "\n"), lead, column;
		char *line = xstrndup(text, len);

		lead = strspn(line, " ");
		column = row_column(line, lead, width, prev);
		prev = column;
		if (len <= width) {
			buf_add(out, line, len);
		} else if (column) {
			buf_add(out, line, column);
			wrap_words(line + column, column, column, width, out);
		} else {
			buf_add(out, line, lead);
			wrap_words(line + lead, lead, lead + 2, width, out);
		}
		free(line);
		text += len;
		if (*text == '\n') {
			buf_addch(out, '\n');
			text++;
		}
	}
}

void args_help(const struct opt *opts, struct buf *out)
{
	for (; opts->type != OPT_T_END; opts++) {
		struct buf left = BUF_INIT;

		if (opts->type == OPT_T_INCLUDE) {
			args_help(opts->include, out);
			continue;
		}
		if (!opts->help)
			continue;
		if (opts->short_name)
			buf_addf(&left, "-%c, ", opts->short_name);
		else
			buf_adds(&left, "    ");
		buf_addf(&left, "--%s", opts->long_name);
		if (opts->argh)
			buf_addf(&left, " %s", opts->argh);
		if (left.len < HELP_COLUMN - 3)
			buf_addf(out, "  %-*s ", HELP_COLUMN - 3, left.buf);
		else
			buf_addf(out, "  %s\n%*s", left.buf, HELP_COLUMN, "");
		wrap_words(opts->help, HELP_COLUMN, HELP_COLUMN, HELP_WIDTH, out);
		buf_addch(out, '\n');
		buf_release(&left);
	}
}

void roff_escape(const char *s, size_t len, struct buf *out)
{
	size_t i;

	if (len && (s[0] == '.' || s[0] == '\''))
		buf_adds(out, "\\&");
	for (i = 0; i < len; i++) {
		if (s[i] == '\\')
			buf_adds(out, "\\e");
		else if (s[i] == '-')
			buf_adds(out, "\\-");
		else
			buf_addch(out, s[i]);
	}
}

void roff_text(const char *text, struct buf *out)
{
	bool verbatim = false, usage = false;

	while (*text) {
		size_t len = strcspn(text, "\n");
		bool blank = !len, indented = len > 1 && text[0] == ' ' && text[1] == ' ';

		if (!blank && !strncmp(text, "usage:", 6))
			usage = true;
		if (blank)
			usage = false;
		if ((usage || indented) && !verbatim) {
			buf_adds(out, ".nf\n");
			verbatim = true;
		} else if (!usage && !indented && verbatim) {
			buf_adds(out, ".fi\n");
			verbatim = false;
		}
		if (blank) {
			buf_adds(out, ".PP\n");
		} else {
			roff_escape(text, len, out);
			buf_addch(out, '\n');
		}
		text += len;
		if (*text == '\n')
			text++;
	}
	if (verbatim)
		buf_adds(out, ".fi\n");
}

/* One ".TP" entry per option, for the man page. */
static void roff_options(const struct opt *opts, struct buf *out)
{
	for (; opts->type != OPT_T_END; opts++) {
		if (opts->type == OPT_T_INCLUDE) {
			roff_options(opts->include, out);
			continue;
		}
		if (!opts->help)
			continue;
		buf_adds(out, ".TP\n");
		if (opts->short_name)
			buf_addf(out, "\\fB\\-%c\\fR, ", opts->short_name);
		buf_adds(out, "\\fB\\-\\-");
		roff_escape(opts->long_name, strlen(opts->long_name), out);
		buf_adds(out, "\\fR");
		if (opts->argh) {
			buf_adds(out, " \\fI");
			roff_escape(opts->argh, strlen(opts->argh), out);
			buf_adds(out, "\\fR");
		}
		buf_addch(out, '\n');
		roff_escape(opts->help, strlen(opts->help), out);
		buf_addch(out, '\n');
	}
}

/* Whether the table has a row for --help (an OPT_HELP line of its own). */
static bool has_help_row(const struct opt *opts)
{
	for (; opts->type != OPT_T_END; opts++)
		if ((opts->type == OPT_T_INCLUDE && has_help_row(opts->include)) ||
		    (opts->long_name && !strcmp(opts->long_name, "help")))
			return true;
	return false;
}

static const struct opt help_row[] = {
	OPT_HELP("help", 'h', NULL, "this text"),
	OPT_END(),
};

/* "--long<TAB>-s<TAB>ARG" a line, for the completion generator. */
static void list_options(const struct opt *opts, bool *help_seen, struct buf *out)
{
	for (; opts->type != OPT_T_END; opts++) {
		if (opts->type == OPT_T_INCLUDE) {
			list_options(opts->include, help_seen, out);
			continue;
		}
		if (!opts->long_name || (!opts->help && opts->type == OPT_T_HELP))
			continue;
		if (!strcmp(opts->long_name, "help"))
			*help_seen = true;
		buf_addf(out, "--%s\t", opts->long_name);
		if (opts->short_name)
			buf_addf(out, "-%c\t", opts->short_name);
		else
			buf_adds(out, "-\t");
		buf_addf(out, "%s\n", takes_value(opts) && opts->argh ? opts->argh : takes_value(opts) ? "VALUE" : "-");
	}
}

/* man indents a subsection's text by 7 columns: verbatim lines this wide end within 80. */
#define MAN_VERBATIM_WIDTH (HELP_WIDTH - 8)

struct help_request args_help_request = { .format = HELP_TEXT };

/* The text of u->more, which prints to a FILE. */
static void more_text(const struct usage *u, struct buf *out)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m;

	if (!u->more || !(m = open_memstream(&text, &len)))
		return;
	u->more(m);
	fclose(m);
	buf_add(out, text, len);
	free(text);
}

void usage_render(const struct usage *u, const struct opt *opts, enum help_format format, FILE *f)
{
	struct buf h = BUF_INIT, text = BUF_INIT, out = BUF_INIT;
	bool help_seen = false; /* HELP_OPTIONS: the table listed --help */

	switch (format) {
	case HELP_TEXT:
		args_help(opts, &h);
		if (!has_help_row(opts))
			args_help(help_row, &h);
		buf_addf(&text, "%soptions:\n%s\n%s", u->synopsis, h.buf, u->footer ? u->footer : "");
		more_text(u, &text);
		text_wrap(text.buf, HELP_WIDTH, &out);
		break;
	case HELP_MAN:
		/* Usage lines and tables are verbatim: wrapped here so that the page's indent keeps them in 80. */
		buf_addf(&out, ".SS \"coldstart %s\"\n", u->command);
		text_wrap(u->synopsis, MAN_VERBATIM_WIDTH, &h);
		roff_text(h.buf, &out);
		buf_adds(&out, "Options:\n");
		roff_options(opts, &out);
		if (!has_help_row(opts))
			roff_options(help_row, &out);
		buf_adds(&out, ".PP\n");
		buf_adds(&text, u->footer ? u->footer : "");
		more_text(u, &text);
		buf_reset(&h);
		text_wrap(text.buf, MAN_VERBATIM_WIDTH, &h);
		roff_text(h.buf, &out);
		break;
	case HELP_OPTIONS:
		list_options(opts, &help_seen, &out);
		if (!help_seen)
			buf_adds(&out, "--help\t-h\t-\n");
		break;
	}
	fwrite(out.buf, 1, out.len, f);
	buf_release(&h);
	buf_release(&text);
	buf_release(&out);
}

void usage_show(const struct usage *u, const struct opt *opts, FILE *f)
{
	usage_render(u, opts, HELP_TEXT, f);
}

int usage_error(const struct usage *u, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	error("%s", msg.buf);
	fprintf(stderr, "Try 'coldstart %s --help'.\n", u->command);
	buf_release(&msg);
	return EXIT_USAGE;
}

int usage_stop(const struct usage *u, const struct opt *opts, int rc, const char *msg)
{
	if (rc > 0) {
		FILE *f = args_help_request.out ? args_help_request.out : stdout;

		usage_render(u, opts, args_help_request.format, f);
		return fflush(f) ? EXIT_FAIL : EXIT_OK;
	}
	if (rc == ARGS_FAILED) {
		error("%s", msg);
		return EXIT_FAIL;
	}
	return usage_error(u, "%s", msg);
}

int usage_parse_one(const struct usage *u, const struct opt *opts, int argc, char **argv, const char *what,
		    struct strvec *positional, struct buf *err)
{
	int rc = args_parse_all(opts, argc, argv, positional, err);

	if (rc)
		return usage_stop(u, opts, rc, err->buf);
	if (positional->nr != 1)
		return positional->nr ? usage_error(u, "give exactly one %s", what)
				      : usage_error(u, "no %s given", what);
	return -1;
}
