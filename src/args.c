/*
 * The option parser shared by every command (see args.h).
 */
#include "args.h"

#include <string.h>

static const struct opt *find_long(const struct opt *opts, const char *name, size_t len)
{
	for (; opts->long_name || opts->short_name; opts++)
		if (opts->long_name && strlen(opts->long_name) == len && !strncmp(opts->long_name, name, len))
			return opts;
	return NULL;
}

static const struct opt *find_short(const struct opt *opts, char c)
{
	for (; opts->long_name || opts->short_name; opts++)
		if (opts->short_name == c)
			return opts;
	return NULL;
}

int args_parse(const struct opt *opts, void *ctx, int argc, char **argv, int *i,
	       const char *const *stop_at, struct buf *err)
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

			o = find_long(opts, a + 2, len);
			if (eq)
				value = eq + 1;
			snprintf(shown, sizeof(shown), "--%.*s", (int)(len < 40 ? len : 40), a + 2);
		} else {
			o = find_short(opts, a[1]);
			if (a[2])
				value = a + 2;
			snprintf(shown, sizeof(shown), "-%c", a[1]);
		}
		if (!o) {
			buf_addf(err, "unknown option '%s'", a);
			return -1;
		}
		(*i)++;
		if (o->takes_value && !value) {
			if (*i >= argc) {
				buf_addf(err, "option '%s' needs a value (%s)", shown, o->help_arg ? o->help_arg : "VALUE");
				return -1;
			}
			value = argv[(*i)++];
		} else if (!o->takes_value && value) {
			buf_addf(err, "option '%s' takes no value", shown);
			return -1;
		}
		if (o->fn(ctx, value, err) < 0) {
			if (!err->len)
				buf_addf(err, "bad value for '%s': '%s'", shown, value ? value : "");
			return -1;
		}
	}
	return 0;
}

void args_help(const struct opt *opts, struct buf *out)
{
	for (; opts->long_name || opts->short_name; opts++) {
		struct buf left = BUF_INIT;

		if (!opts->help)
			continue;
		if (opts->short_name)
			buf_addf(&left, "-%c, ", opts->short_name);
		else
			buf_adds(&left, "    ");
		buf_addf(&left, "--%s", opts->long_name);
		if (opts->takes_value)
			buf_addf(&left, " %s", opts->help_arg ? opts->help_arg : "VALUE");
		if (left.len < 28)
			buf_addf(out, "  %-28s %s\n", left.buf, opts->help);
		else
			buf_addf(out, "  %s\n  %-28s %s\n", left.buf, "", opts->help);
		buf_release(&left);
	}
}

int args_parse_all(const struct opt *opts, void *ctx, int argc, char **argv, struct strvec *positional,
		   struct buf *err)
{
	int i = 1, rc;

	while (i < argc) {
		rc = args_parse(opts, ctx, argc, argv, &i, NULL, err);
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
