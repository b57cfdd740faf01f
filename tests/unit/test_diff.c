/*
 * Unit tests of diff_compute (src/analysis/diff.h) on the edges a profile file can
 * bring: processes without a node, and figures at the limits of their range.
 * The sanitiser build (make check) turns any overflow here into a failure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/diff.h"
#include "model/profile.h"

static void make(struct profile *p, size_t nodes, int64_t cum)
{
	size_t r, i;

	profile_init(p);
	for (r = 0; r < 3; r++) {
		struct proc *pr = run_add_proc(profile_add_run(p));

		for (i = 0; i < nodes; i++) {
			char name[24];
			int32_t k;

			snprintf(name, sizeof(name), "m%zu", i);
			k = proc_add_node(pr, name, strlen(name), 0, cum, cum);
			proc_link_root(pr, k);
		}
	}
}

/* qsort was given NULL when no process had a node. */
static void test_processes_without_nodes(void **state)
{
	struct profile a, b;
	struct diff d = DIFF_INIT;
	struct buf err = BUF_INIT, out = BUF_INIT;

	(void)state;
	make(&a, 0, 0);
	make(&b, 0, 0);
	assert_int_equal(diff_compute(&d, &a, &b, 1000, &err), 0);
	assert_int_equal(d.nr, 0);
	assert_int_equal(diff_regressions(&d), 0);
	diff_report(&d, "a", "b", 10, &out);
	assert_non_null(strstr(out.buf, "0 regressions flagged"));
	diff_release(&d);
	profile_release(&a);
	profile_release(&b);
	buf_release(&err);
	buf_release(&out);
}

/* Totals past 2^63 saturate; the difference of opposite extremes too. */
static void test_extreme_figures(void **state)
{
	struct profile a, b;
	struct diff d = DIFF_INIT;
	struct buf err = BUF_INIT, out = BUF_INIT;

	(void)state;
	make(&a, 10000, PROFILE_MAX_US);
	make(&b, 3, INT64_MIN);
	assert_int_equal(diff_compute(&d, &a, &b, 1000, &err), 0);
	assert_true(d.a_total_us == INT64_MAX);
	diff_report(&d, "a", "b", 10, &out);
	assert_non_null(strstr(out.buf, "removed modules (9997)"));
	diff_release(&d);
	d = (struct diff)DIFF_INIT;
	assert_int_equal(diff_compute(&d, &b, &a, 1000, &err), 0);
	assert_true(d.b_total_us == INT64_MAX);
	assert_true(diff_regressions(&d) > 0);
	diff_release(&d);
	profile_release(&a);
	profile_release(&b);
	buf_release(&err);
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_processes_without_nodes),
		cmocka_unit_test(test_extreme_figures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
