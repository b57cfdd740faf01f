/*
 * The option parser: value-pointer rows of every type, included tables, help
 * rows the parser never matches, the error messages, positional arguments,
 * and the --help / usage-error text every command prints through it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "cmd/builtin.h"
#include "util.h"

struct inner {
	bool flag;
	const char *name;
};

struct outer {
	struct inner in;
	struct opt in_options[3];
	int count;
	int64_t wait_us;
	int64_t limit_us;
	struct strvec list;
	const char *seen_data;
	const char *seen_arg;
};

static int remember(const struct opt *opt, const char *arg, struct buf *err)
{
	struct outer *o = opt->value;

	if (!strcmp(arg, "bad"))
		return -1; /* no message: the parser supplies one */
	if (!strcmp(arg, "worse")) {
		buf_addf(err, "'%s' is worse", arg);
		return -1;
	}
	o->seen_data = opt->data;
	o->seen_arg = arg;
	return 0;
}

static void outer_init(struct outer *o)
{
	const struct opt in[] = {
		OPT_BOOL("flag", 'f', &o->in.flag, "a flag from the included table"),
		OPT_STRING("name", 0, &o->in.name, "NAME", "a string from the included table"),
		OPT_END(),
	};

	memset(o, 0, sizeof(*o));
	strvec_init(&o->list);
	memcpy(o->in_options, in, sizeof(in));
}

/* The table under test, built over o as a command builds its own. */
#define TABLE(o)                                                                                                       \
	const struct opt table[] = {                                                                                   \
		OPT_INCLUDE((o)->in_options),                                                                          \
		OPT_INT("count", 'n', &(o)->count, 1, 100, "N", "how many"),                                           \
		OPT_DURATION("wait", 0, &(o)->wait_us, "DUR", "a duration"),                                           \
		OPT_SECONDS("limit", 0, &(o)->limit_us, 60, "seconds up to a minute"),                                 \
		OPT_STRINGS("item", 'i', &(o)->list, "X", "repeatable"),                                               \
		OPT_CALLBACK_DATA("call", 0, (o), remember, "payload", "ARG", "a callback with data"),                 \
		OPT_HELP("call", 0, "ARG=MORE", "a second help line for --call"),                                      \
		OPT_HELP("only-help", 0, NULL, "never parsed"),                                                        \
		OPT_END(),                                                                                             \
	}

static int parse(const struct opt *table, struct buf *err, int *i, ...)
{
	char *argv[32];
	int argc = 0;
	va_list ap;

	argv[argc++] = "cmd";
	va_start(ap, i);
	for (char *a; (a = va_arg(ap, char *));)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	*i = 1;
	buf_reset(err);
	return args_parse(table, argc, argv, i, NULL, err);
}

static void test_values(void **state)
{
	struct outer o;
	struct buf err = BUF_INIT;
	int i;

	outer_init(&o);
	{
		TABLE(&o);

		assert_int_equal(parse(table, &err, &i, "-f", "--name=x", "-n", "7", "--wait", "1.5s", "--limit", "2",
				       "-iA", "--item", "B", "--call", "c", "target", "--flag", NULL),
				 0);
		assert_string_equal(err.buf, "");
		/* Stopped at the first non-option, which is left in place. */
		assert_int_equal(i, 14);
		assert_true(o.in.flag);
		assert_string_equal(o.in.name, "x");
		assert_int_equal(o.count, 7);
		assert_int_equal(o.wait_us, 1500000);
		assert_int_equal(o.limit_us, 2000000);
		assert_int_equal(o.list.nr, 2);
		assert_string_equal(o.list.v[0], "A");
		assert_string_equal(o.list.v[1], "B");
		assert_string_equal(o.seen_data, "payload");
		assert_string_equal(o.seen_arg, "c");

		/* "--" ends the options and is left for the caller. */
		assert_int_equal(parse(table, &err, &i, "-n", "3", "--", "-n", NULL), 0);
		assert_int_equal(i, 3);
		assert_int_equal(o.count, 3);
		assert_int_equal(parse(table, &err, &i, "--help", "--bogus", NULL), 1);
		assert_int_equal(parse(table, &err, &i, "-h", NULL), 1);
	}
	strvec_clear(&o.list);
	buf_release(&err);
}

static void test_errors(void **state)
{
	static const struct {
		const char *args[3];
		const char *message;
	} cases[] = {
		{ { "--bogus" }, "unknown option '--bogus'" },
		{ { "-z" }, "unknown option '-z'" },
		{ { "--only-help" }, "unknown option '--only-help'" },
		{ { "--count" }, "option '--count' needs a value (N)" },
		{ { "-n" }, "option '-n' needs a value (N)" },
		{ { "--flag=1" }, "option '--flag' takes no value" },
		{ { "-n", "0" }, "--count '0': expected a number from 1 to 100" },
		{ { "-n", "101" }, "--count '101': expected a number from 1 to 100" },
		{ { "--count=7x" }, "--count '7x': expected a number from 1 to 100" },
		{ { "--wait", "soon" }, "--wait 'soon': not a duration (e.g. 1ms, 500us)" },
		{ { "--limit", "0" }, "--limit needs a positive number of seconds, not '0'" },
		{ { "--limit", "61" }, "--limit needs a positive number of seconds, not '61'" },
		{ { "--call", "bad" }, "bad value for '--call': 'bad'" },
		{ { "--call", "worse" }, "'worse' is worse" },
	};
	struct outer o;
	struct buf err = BUF_INIT;
	size_t k;
	int i;

	outer_init(&o);
	{
		TABLE(&o);

		for (k = 0; k < ARRAY_SIZE(cases); k++) {
			if (parse(table, &err, &i, cases[k].args[0], cases[k].args[1], NULL) != -1)
				fail_msg("'%s' accepted", cases[k].args[0]);
			assert_string_equal(err.buf, cases[k].message);
		}
	}
	strvec_clear(&o.list);
	buf_release(&err);
}

static void test_stop_at_and_positional(void **state)
{
	static const char *const stop_at[] = { "-m", "-c", NULL };
	struct outer o;
	struct buf err = BUF_INIT;
	struct strvec pos = STRVEC_INIT;
	char *argv[] = { "cmd", "a", "-f", "b", "--name", "n", "--", "-x", "c", NULL };
	char *argv2[] = { "cmd", "-f", "-c", "code", NULL };
	int i = 1;

	outer_init(&o);
	{
		TABLE(&o);

		assert_int_equal(args_parse_all(table, 9, argv, &pos, &err), 0);
		assert_int_equal(pos.nr, 4);
		assert_string_equal(pos.v[0], "a");
		assert_string_equal(pos.v[1], "b");
		assert_string_equal(pos.v[2], "-x");
		assert_string_equal(pos.v[3], "c");
		assert_true(o.in.flag);
		assert_string_equal(o.in.name, "n");

		o.in.flag = false;
		assert_int_equal(args_parse(table, 4, argv2, &i, stop_at, &err), 0);
		assert_int_equal(i, 2);
		assert_true(o.in.flag);
	}
	strvec_clear(&pos);
	strvec_clear(&o.list);
	buf_release(&err);
}

static void test_help(void **state)
{
	struct outer o;
	struct buf h = BUF_INIT;

	outer_init(&o);
	{
		TABLE(&o);

		args_help(table, &h);
	}
	assert_string_equal(h.buf, "  -f, --flag                   a flag from the included table\n"
				   "      --name NAME              a string from the included table\n"
				   "  -n, --count N                how many\n"
				   "      --wait DUR               a duration\n"
				   "      --limit SECONDS          seconds up to a minute\n"
				   "  -i, --item X                 repeatable\n"
				   "      --call ARG               a callback with data\n"
				   "      --call ARG=MORE          a second help line for --call\n"
				   "      --only-help              never parsed\n");
	buf_release(&h);
}

/* Runs fn with stdout or stderr (fd) sent to a file and returns what it wrote. */
static char *capture(int fd, int (*fn)(void *), void *data, int *rc)
{
	char path[] = "/tmp/coldstart-argstest-XXXXXX";
	int tmp = mkstemp(path), saved = dup(fd);
	struct buf sb = BUF_INIT;

	assert_true(tmp >= 0 && saved >= 0);
	fflush(NULL);
	dup2(tmp, fd);
	*rc = fn(data);
	fflush(NULL);
	dup2(saved, fd);
	close(saved);
	close(tmp);
	assert_int_equal(buf_read_file(&sb, path), 0);
	unlink(path);
	return buf_detach(&sb, NULL);
}

static void more(FILE *f)
{
	fputs("more text\n", f);
}

static const struct usage demo_usage = {
	.command = "demo",
	.synopsis = "usage: coldstart demo [options]\n\nDoes nothing.\n\n",
	.footer = "Exit status: 0.\n",
	.more = more,
};

static const struct opt demo_options[] = {
	OPT_HELP("help", 'h', NULL, "this text"),
	OPT_END(),
};

static int call_stop_help(void *data)
{
	return usage_stop(&demo_usage, demo_options, 1, NULL);
}

static int call_stop_error(void *data)
{
	return usage_stop(&demo_usage, demo_options, -1, data);
}

static int call_error(void *data)
{
	return usage_error(&demo_usage, "no %s given", (const char *)data);
}

/* usage_parse_one over argv (NULL-terminated in data): the exit status, or -1 with one argument. */
static int call_parse_one(void *data)
{
	char **argv = data;
	struct strvec pos = STRVEC_INIT;
	struct buf err = BUF_INIT;
	int argc = 0, rc;

	while (argv[argc])
		argc++;
	rc = usage_parse_one(&demo_usage, demo_options, argc, argv, "log", &pos, &err);
	if (rc < 0 && (pos.nr != 1 || strcmp(pos.v[0], "a.log")))
		rc = 99;
	strvec_clear(&pos);
	buf_release(&err);
	return rc;
}

static void test_parse_one(void **state)
{
	char *none[] = { "demo", NULL }, *one[] = { "demo", "a.log", NULL };
	char *two[] = { "demo", "a.log", "b.log", NULL }, *bad[] = { "demo", "-x", "a.log", NULL };
	char *out;
	int rc;

	out = capture(2, call_parse_one, one, &rc);
	assert_int_equal(rc, -1);
	assert_string_equal(out, "");
	free(out);
	out = capture(2, call_parse_one, none, &rc);
	assert_int_equal(rc, EXIT_USAGE);
	assert_string_equal(out, "coldstart: error: no log given\nTry 'coldstart demo --help'.\n");
	free(out);
	out = capture(2, call_parse_one, two, &rc);
	assert_int_equal(rc, EXIT_USAGE);
	assert_string_equal(out, "coldstart: error: give exactly one log\nTry 'coldstart demo --help'.\n");
	free(out);
	out = capture(2, call_parse_one, bad, &rc);
	assert_int_equal(rc, EXIT_USAGE);
	assert_true(strstr(out, "'-x'") != NULL);
	free(out);
}

static void test_usage(void **state)
{
	char *out;
	int rc;

	out = capture(1, call_stop_help, NULL, &rc);
	assert_int_equal(rc, EXIT_OK);
	assert_string_equal(out, "usage: coldstart demo [options]\n\nDoes nothing.\n\n"
				 "options:\n"
				 "  -h, --help                   this text\n"
				 "\n"
				 "Exit status: 0.\n"
				 "more text\n");
	free(out);
	out = capture(2, call_stop_error, "unknown option '-x'", &rc);
	assert_int_equal(rc, EXIT_USAGE);
	assert_string_equal(out, "coldstart: error: unknown option '-x'\nTry 'coldstart demo --help'.\n");
	free(out);
	out = capture(2, call_error, "log", &rc);
	assert_int_equal(rc, EXIT_USAGE);
	assert_string_equal(out, "coldstart: error: no log given\nTry 'coldstart demo --help'.\n");
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_stop_at_and_positional),
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_usage),
		cmocka_unit_test(test_parse_one),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
