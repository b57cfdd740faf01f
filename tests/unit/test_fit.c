/*
 * Unit tests of fitting text to a width (src/render/fit.h): columns of UTF-8 and
 * coloured text, shortening in the middle, chains, wrapping with a hanging
 * indent, and the reflow that keeps table columns.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "render/fit.h"
#include "model/profile.h"
#include "tree.h"

static void test_cols(void **state)
{
	(void)state;
	assert_int_equal(fit_cols("abc"), 3);
	assert_int_equal(fit_cols("a \xe2\x80\xa6 b"), 5);
	assert_int_equal(fit_cols("\033[1mbold\033[0m"), 4);
	assert_int_equal(fit_cols(""), 0);
}

static void test_shorten_in_the_middle(void **state)
{
	struct buf b = BUF_INIT;

	(void)state;
	fit_add(&b, "pandas.core.interchange.utils", 12);
	assert_string_equal(b.buf, "panda\xe2\x80\xa6.utils");
	assert_int_equal(fit_cols(b.buf), 12);
	buf_reset(&b);
	fit_add(&b, "short", 12);
	assert_string_equal(b.buf, "short");
	buf_reset(&b);
	fit_add(&b, "whole", FIT_UNLIMITED);
	assert_string_equal(b.buf, "whole");
	buf_reset(&b);
	fit_add_head(&b, "a sentence cut at its end", 10);
	assert_string_equal(b.buf, "a sentenc\xe2\x80\xa6");
	buf_release(&b);
}

/* A command keeps its start and its last whole arguments. */
static void test_command_keeps_its_last_arguments(void **state)
{
	struct buf b = BUF_INIT;
	const char *cmd = "/usr/bin/python3 /srv/app/manage.py runserver --settings prod --noreload";

	(void)state;
	fit_add_command(&b, cmd, 40);
	assert_string_equal(b.buf, "/usr/bin/python3 /srv/a\xe2\x80\xa6 prod --noreload");
	assert_int_equal(fit_cols(b.buf), 40);
	buf_reset(&b);
	/* Half the width for the end: fewer arguments then. */
	fit_add_command(&b, cmd, 30);
	assert_string_equal(b.buf, "/usr/bin/python3 /\xe2\x80\xa6 --noreload");
	assert_int_equal(fit_cols(b.buf), 30);
	buf_reset(&b);
	fit_add_command(&b, cmd, 60);
	assert_string_equal(b.buf, "/usr/bin/python3 /srv/app/manage\xe2\x80\xa6 --settings prod --noreload");
	buf_reset(&b);
	/* No last argument fits: cut in the middle as any string. */
	fit_add_command(&b, "/usr/bin/python3 --a-very-long-last-argument-indeed", 20);
	assert_int_equal(fit_cols(b.buf), 20);
	assert_non_null(strstr(b.buf, "indeed"));
	buf_reset(&b);
	fit_add_command(&b, cmd, FIT_UNLIMITED);
	assert_string_equal(b.buf, cmd);
	buf_reset(&b);
	/* UTF-8 counts by characters. */
	fit_add_command(&b, "/usr/bin/python3 /srv/\xc3\xa9t\xc3\xa9/app.py --caf\xc3\xa9", 28);
	assert_int_equal(fit_cols(b.buf), 28);
	assert_non_null(strstr(b.buf, "\xe2\x80\xa6 --caf\xc3\xa9"));
	buf_release(&b);
}

static void test_chain(void **state)
{
	struct run r;
	struct proc *pr;
	struct buf b = BUF_INIT;
	int32_t a, x, y, z, leaf;

	(void)state;
	memset(&r, 0, sizeof(r));
	pr = run_add_proc(&r);
	a = add(pr, -1, "pandas", 1, 1);
	x = add(pr, a, "pandas.core.api", 1, 1);
	y = add(pr, x, "pandas.core.groupby", 1, 1);
	z = add(pr, y, "pandas.core.groupby.generic", 1, 1);
	leaf = add(pr, z, "pandas.core.frame", 1, 1);
	fit_add_chain(&b, pr, leaf, FIT_UNLIMITED);
	assert_string_equal(b.buf, "pandas > pandas.core.api > pandas.core.groupby > pandas.core.groupby.generic");
	buf_reset(&b);
	fit_add_chain(&b, pr, leaf, 62);
	assert_string_equal(b.buf, "pandas > \xe2\x80\xa6 > pandas.core.groupby > pandas.core.groupby.generic");
	assert_int_equal(fit_cols(b.buf), 62);
	buf_reset(&b);
	fit_add_chain(&b, pr, leaf, 61);
	assert_string_equal(b.buf, "pandas > \xe2\x80\xa6 > pandas.core.groupby.generic");
	buf_reset(&b);
	fit_add_chain(&b, pr, leaf, 31);
	assert_string_equal(b.buf, "\xe2\x80\xa6 > pandas.core.groupby.generic");
	buf_reset(&b);
	fit_add_chain(&b, pr, leaf, 16);
	assert_true(!strncmp(b.buf, "\xe2\x80\xa6 > ", 6) && fit_cols(b.buf) <= 16);
	buf_reset(&b);
	fit_add_chain(&b, pr, a, 40);
	assert_string_equal(b.buf, "");
	buf_release(&b);
	run_release(&r);
}

static void test_wrap_with_a_hanging_indent(void **state)
{
	struct buf b = BUF_INIT;

	(void)state;
	buf_adds(&b, "      evidence: ");
	fit_add_wrapped(&b, "one two three four five six seven eight nine ten", 16, 8, 30);
	assert_string_equal(b.buf, "      evidence: one two three\n"
				   "        four five six seven\n"
				   "        eight nine ten\n");
	buf_release(&b);
}

static void test_reflow_keeps_columns(void **state)
{
	struct buf b = BUF_INIT;
	const char *text = "  imports         599 modules (31 at start-up), 1.31 s in total = 83% of wall\n"
			   "short line\n"
			   "     54.8 ms      56 us     248 us  pandas.core.interchange.utils\n";

	(void)state;
	fit_reflow(&b, text, 50);
	assert_string_equal(b.buf, "  imports         599 modules (31 at start-up),\n"
				   "                  1.31 s in total = 83% of wall\n"
				   "short line\n"
				   "     54.8 ms      56 us     248 us\n"
				   "                  pandas.core.interchange.utils\n");
	buf_reset(&b);
	fit_reflow(&b, text, FIT_UNLIMITED);
	assert_string_equal(b.buf, text);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cols),
		cmocka_unit_test(test_shorten_in_the_middle),
		cmocka_unit_test(test_command_keeps_its_last_arguments),
		cmocka_unit_test(test_chain),
		cmocka_unit_test(test_wrap_with_a_hanging_indent),
		cmocka_unit_test(test_reflow_keeps_columns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
