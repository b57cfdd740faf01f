/*
 * Unit tests of the budget rules (src/analysis/budget.h) behind `coldstart check` and
 * `profile --budget/--forbid`: parsing, medians over runs, verdicts and the
 * explanation lines CI logs show.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/budget.h"
#include "model/profile.h"
#include "tree.h"

/* Three runs of app -> web -> asyncio; app's self varies by run. */
static void make_profile(struct profile *p, bool warm_outlier)
{
	int64_t extra[] = { 0, 400, 900, 500000 };
	size_t i, n = warm_outlier ? 4 : 3;

	profile_init(p);
	for (i = 0; i < n; i++) {
		struct run *r = profile_add_run(p);
		struct proc *pr = run_add_proc(r);
		int32_t app, web;

		r->warmup = i == 3; /* a slow warm-up run must not count */
		add(pr, -1, "encodings", 2000, 2000);
		app = add(pr, -1, "app", 1000 + extra[i], 11000 + extra[i]);
		web = add(pr, app, "web", 5000, 10000);
		add(pr, add(pr, web, "asyncio", 3000, 5000), "asyncio.events", 2000, 2000);
	}
}

static void test_parse_errors(void **state)
{
	struct budget b;
	struct buf err = BUF_INIT;

	(void)state;
	budget_init(&b);
	assert_int_equal(budget_add(&b, "total=300ms", &err), 0);
	assert_int_equal(budget_add(&b, "numpy=1.5s", &err), 0);
	assert_int_equal(b.nr, 2);
	assert_int_equal(b.items[1].limit_us, 1500000);
	assert_int_equal(budget_add(&b, "total", &err), -1);
	assert_non_null(strstr(err.buf, "'total'"));
	buf_reset(&err);
	assert_int_equal(budget_add(&b, "total=fast", &err), -1);
	assert_non_null(strstr(err.buf, "'fast' is not a duration"));
	buf_reset(&err);
	assert_int_equal(budget_add(&b, "=3ms", &err), -1);
	assert_int_equal(budget_add(&b, "x=", &err), -1);
	assert_int_equal(budget_add(&b, "x=-3ms", &err), -1);
	assert_int_equal(b.nr, 2);
	budget_release(&b);
	buf_release(&err);
}

static void test_verdicts_use_the_median_run(void **state)
{
	struct profile p;
	struct budget b;
	struct buf err = BUF_INIT, explain = BUF_INIT;

	(void)state;
	make_profile(&p, true);
	budget_init(&b);
	/* Median total: 2000 + 11400 = 13.4 ms; the 500 ms warm-up is ignored. */
	assert_int_equal(budget_add(&b, "total=13.4ms", &err), 0);
	assert_int_equal(budget_check(&p, &b, &explain), 0);
	assert_non_null(strstr(explain.buf, "ok"));
	budget_release(&b);

	budget_init(&b);
	buf_reset(&explain);
	assert_int_equal(budget_add(&b, "total=13.3ms", &err), 0);
	assert_int_equal(budget_add(&b, "web=10ms", &err), 0);
	assert_int_equal(budget_check(&p, &b, &explain), 1);
	assert_non_null(strstr(explain.buf, "FAIL total: 13.4 ms > 13.3 ms"));
	assert_non_null(strstr(explain.buf, "ok   web: 10.0 ms <= 10.0 ms"));
	budget_release(&b);

	budget_init(&b);
	buf_reset(&explain);
	assert_int_equal(budget_add(&b, "numpy=1us", &err), 0);
	assert_int_equal(budget_check(&p, &b, &explain), 0);
	assert_non_null(strstr(explain.buf, "not imported"));
	budget_release(&b);
	profile_release(&p);
	buf_release(&err);
	buf_release(&explain);
}

static void test_forbid_names_the_chain(void **state)
{
	struct profile p;
	struct budget b;
	struct buf explain = BUF_INIT;

	(void)state;
	make_profile(&p, false);
	budget_init(&b);
	budget_forbid(&b, "xml");
	assert_int_equal(budget_check(&p, &b, &explain), 0);
	assert_non_null(strstr(explain.buf, "forbid ok   xml: not imported"));
	budget_forbid(&b, "asyncio");
	buf_reset(&explain);
	assert_int_equal(budget_check(&p, &b, &explain), 1);
	assert_non_null(strstr(explain.buf, "FAIL asyncio: asyncio imported via app > web > asyncio"));
	/* A package forbids its submodules too, but not names that merely share a prefix. */
	budget_release(&b);
	budget_init(&b);
	budget_forbid(&b, "asyn");
	buf_reset(&explain);
	assert_int_equal(budget_check(&p, &b, &explain), 0);
	budget_release(&b);
	profile_release(&p);
	buf_release(&explain);
}

static void test_empty_profile_is_an_error(void **state)
{
	struct profile p;
	struct budget b;
	struct buf err = BUF_INIT, explain = BUF_INIT;

	(void)state;
	profile_init(&p);
	budget_init(&b);
	assert_int_equal(budget_add(&b, "total=1s", &err), 0);
	assert_int_equal(budget_check(&p, &b, &explain), -1);
	assert_non_null(strstr(explain.buf, "no measured run"));
	budget_release(&b);
	profile_release(&p);
	buf_release(&err);
	buf_release(&explain);
}

/*
 * A gate fails closed: a total past 2^63 saturates (it wrapped to a small
 * number and passed), a negative time fails, and start-up (a difference of
 * two totals) is not 0 when both totals saturated.
 */
static void test_overflowing_totals_fail_closed(void **state)
{
	struct profile p;
	struct budget b;
	struct buf err = BUF_INIT, explain = BUF_INIT;
	struct proc *pr;
	int32_t k = -1;
	int i;

	(void)state;
	profile_init(&p);
	pr = run_add_proc(profile_add_run(&p));
	for (i = 0; i < 4; i++) {
		k = add(pr, -1, i ? "big" : "site", INT64_C(1) << 62, INT64_C(1) << 62);

		if (!i)
			pr->nodes[k].flags |= NODE_STARTUP;
	}
	add(pr, k, "neg", -5000, -5000);
	budget_init(&b);
	assert_int_equal(budget_add(&b, "total=1ms", &err), 0);
	assert_int_equal(budget_add(&b, "target=1ms", &err), 0);
	assert_int_equal(budget_add(&b, "startup=1ms", &err), 0);
	assert_int_equal(budget_add(&b, "neg=1ms", &err), 0);
	assert_int_equal(budget_check(&p, &b, &explain), 1);
	assert_non_null(strstr(explain.buf, "FAIL total: 9223372036854.78 s > 1.0 ms"));
	assert_non_null(strstr(explain.buf, "FAIL target: 9223372036854.78 s > 1.0 ms"));
	assert_non_null(strstr(explain.buf, "FAIL startup: 9223372036854.78 s > 1.0 ms"));
	assert_non_null(strstr(explain.buf, "FAIL neg: -5.0 ms (negative: not a time that can pass)"));
	budget_release(&b);
	profile_release(&p);
	buf_release(&err);
	buf_release(&explain);
}

/*
 * A total counts only positive roots: negative roots (a damaged or crafted
 * profile) left total=1ms passing with "0 us" when every root was negative,
 * and undercounted when one was.  In any measured run, one fails total,
 * target and start-up.
 */
static void test_negative_roots_fail_the_totals(void **state)
{
	struct profile p;
	struct budget b;
	struct buf err = BUF_INIT, explain = BUF_INIT;
	struct proc *pr;

	(void)state;
	make_profile(&p, false);
	/* Only in the third run, so the median alone would pass. */
	pr = &p.runs[2].procs[0];
	add(pr, -1, "broken", -5000, -5000);
	pr->nodes[add(pr, -1, "early", -7000, -7000)].flags |= NODE_STARTUP;
	budget_init(&b);
	assert_int_equal(budget_add(&b, "total=1s", &err), 0);
	assert_int_equal(budget_add(&b, "target=1s", &err), 0);
	assert_int_equal(budget_add(&b, "startup=1s", &err), 0);
	assert_int_equal(budget_check(&p, &b, &explain), 1);
	assert_non_null(strstr(explain.buf, "FAIL total: -7.0 ms (negative: not a time that can pass)"));
	assert_non_null(strstr(explain.buf, "FAIL target: -5.0 ms (negative: not a time that can pass)"));
	assert_non_null(strstr(explain.buf, "FAIL startup: -7.0 ms (negative: not a time that can pass)"));
	profile_release(&p);

	/* The same profile without them passes. */
	make_profile(&p, false);
	buf_reset(&explain);
	assert_int_equal(budget_check(&p, &b, &explain), 0);
	assert_null(strstr(explain.buf, "FAIL"));
	budget_release(&b);
	profile_release(&p);
	buf_release(&err);
	buf_release(&explain);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_verdicts_use_the_median_run),
		cmocka_unit_test(test_forbid_names_the_chain),
		cmocka_unit_test(test_empty_profile_is_an_error),
		cmocka_unit_test(test_overflowing_totals_fail_closed),
		cmocka_unit_test(test_negative_roots_fail_the_totals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
