/*
 * The option parser shared by every command, and the --help and usage-error
 * text around it (see args.h).
 */
#include "args.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"

static bool takes_value(const struct opt *o)
{
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
	case OPT_T_CALLBACK:
		if (o->cb(o, arg, err) < 0) {
			if (!err->len)
				buf_addf(err, "bad value for '%s': '%s'", shown, arg ? arg : "");
			return -1;
		}
		return 0;
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
			buf_addf(err, "unknown option '%s'", a);
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
		if (set_value(o, shown, value, err) < 0)
			return -1;
	}
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
		if (left.len < 28)
			buf_addf(out, "  %-28s %s\n", left.buf, opts->help);
		else
			buf_addf(out, "  %s\n  %-28s %s\n", left.buf, "", opts->help);
		buf_release(&left);
	}
}

void usage_show(const struct usage *u, const struct opt *opts, FILE *f)
{
	struct buf h = BUF_INIT;

	args_help(opts, &h);
	fprintf(f, "%soptions:\n%s\n%s", u->synopsis, h.buf, u->footer ? u->footer : "");
	if (u->more)
		u->more(f);
	buf_release(&h);
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
		usage_show(u, opts, stdout);
		return EXIT_OK;
	}
	return usage_error(u, "%s", msg);
}
