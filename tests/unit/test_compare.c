/*
 * The statistics of `coldstart compare`: the Mann-Whitney U test against
 * known values and against a brute-force permutation count (ties
 * included), its normal approximation, Holm's adjustment and outliers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/compare.h"
#include "render/compare_report.h"
#include "model/profile.h"
#include "util.h"

static void test_known_values(void **state)
{
	const int64_t a3[] = { 1, 2, 3 }, b3[] = { 4, 5, 6 };
	const int64_t a5[] = { 10, 20, 30, 40, 50 }, b5[] = { 60, 70, 80, 90, 100 };
	struct mw_result r;

	/* Three runs a side, fully apart: 2 of the 20 arrangements are as extreme. */
	mann_whitney(a3, 3, b3, 3, &r);
	assert_true(r.exact);
	assert_true(fabs(r.u - 0) < 1e-9);
	assert_true(fabs(r.p - 0.1) < 1e-12);
	assert_true(fabs(r.p_min - 0.1) < 1e-12);
	/* The other way round gives the mirror U and the same p. */
	mann_whitney(b3, 3, a3, 3, &r);
	assert_true(fabs(r.u - 9) < 1e-9);
	assert_true(fabs(r.p - 0.1) < 1e-12);
	/* Five a side: 2 of 252. */
	mann_whitney(a5, 5, b5, 5, &r);
	assert_true(fabs(r.p - 2.0 / 252) < 1e-12);
	assert_true(r.p_min < 0.05);
	/* The same sample against itself: no evidence at all. */
	mann_whitney(a5, 5, a5, 5, &r);
	assert_true(fabs(r.p - 1) < 1e-12);
}

/* The two-sided permutation p of a's rank sum, by enumerating every split of the pooled values. */
static double brute_p(const int64_t *a, size_t na, const int64_t *b, size_t nb)
{
	size_t n = na + nb, i, j;
	int64_t pool[16];
	double rank[16], observed = 0, lo = 0, hi = 0, total = 0;
	unsigned mask;

	for (i = 0; i < na; i++)
		pool[i] = a[i];
	for (i = 0; i < nb; i++)
		pool[na + i] = b[i];
	for (i = 0; i < n; i++) {
		double less = 0, equal = 0;

		for (j = 0; j < n; j++) {
			less += pool[j] < pool[i];
			equal += pool[j] == pool[i];
		}
		rank[i] = less + (equal + 1) / 2;
	}
	for (i = 0; i < na; i++)
		observed += rank[i];
	for (mask = 0; mask < (1u << n); mask++) {
		double sum = 0;

		if ((size_t)__builtin_popcount(mask) != na)
			continue;
		for (i = 0; i < n; i++)
			if (mask & (1u << i))
				sum += rank[i];
		total++;
		lo += sum <= observed + 1e-9;
		hi += sum >= observed - 1e-9;
	}
	return fmin(1, 2 * fmin(lo, hi) / total);
}

static void test_exact_with_ties(void **state)
{
	unsigned seed = 12345;
	int trial;

	for (trial = 0; trial < 200; trial++) {
		int64_t a[8], b[8];
		size_t na = 1 + (size_t)(rand_r(&seed) % 7), nb = 1 + (size_t)(rand_r(&seed) % 7), i;
		struct mw_result r;
		/* Few distinct values, so most trials have ties. */
		int spread = 2 + rand_r(&seed) % 6;

		for (i = 0; i < na; i++)
			a[i] = rand_r(&seed) % spread;
		for (i = 0; i < nb; i++)
			b[i] = rand_r(&seed) % spread + (trial % 3);
		mann_whitney(a, na, b, nb, &r);
		assert_true(r.exact);
		if (fabs(r.p - brute_p(a, na, b, nb)) > 1e-9)
			fail_msg("trial %d (%zu against %zu): p %.12f, brute force %.12f", trial, na, nb, r.p,
				 brute_p(a, na, b, nb));
	}
}

static void test_normal_approximation(void **state)
{
	int64_t a[30], b[30];
	struct mw_result r;
	size_t i;

	/* 60 values: beyond COMPARE_EXACT_MAX, so the normal approximation with ties (value from the formula). */
	for (i = 0; i < 30; i++) {
		a[i] = (int64_t)i;
		b[i] = (int64_t)i + 10;
	}
	mann_whitney(a, 30, b, 30, &r);
	assert_false(r.exact);
	assert_true(fabs(r.u - 200) < 1e-9);
	assert_true(fabs(r.p - 0.00022448380595775665) < 1e-9);
}

static void test_holm(void **state)
{
	double p[] = { 0.01, 0.04, 0.03, 0.005 };

	holm_adjust(p, 4);
	/* Sorted 0.005 0.01 0.03 0.04, times 4 3 2 1, kept from falling: 0.02 0.03 0.06 0.06. */
	assert_true(fabs(p[3] - 0.02) < 1e-12);
	assert_true(fabs(p[0] - 0.03) < 1e-12);
	assert_true(fabs(p[2] - 0.06) < 1e-12);
	assert_true(fabs(p[1] - 0.06) < 1e-12);
	holm_adjust(p, 0);
}

static void test_outliers(void **state)
{
	const int64_t v[] = { 100, 101, 99, 102, 100, 98, 250 };
	const int64_t flat[] = { 5, 5, 5, 5, 9 };
	bool out[7];

	assert_int_equal(mark_outliers(v, 7, out), 1);
	assert_true(out[6]);
	assert_false(out[0]);
	/* A MAD of 0 flags nothing: no scale to judge by. */
	assert_int_equal(mark_outliers(flat, 5, out), 0);
}

/*
 * Profiles made by hand: what is under test is how the comparison reads the
 * runs it is given (how a real run ends and whether its eviction took is
 * tested end to end in tests/e2e/test_compare.py and test_cold.py).
 */
static void add_runs(struct profile *p, int n, int exit_code, bool cold_took)
{
	int i;

	for (i = 0; i < n; i++) {
		struct run *r = profile_add_run(p);

		r->status = RUN_EXITED;
		r->exit_code = exit_code;
		r->wall_us = 100000 + i * 1000;
		r->user_us = r->sys_us = 1000;
		r->cold.asked = true;
		r->cold.module_bytes = 1000;
		r->cold.module_resident = cold_took ? 0 : 900;
	}
}

static void test_failed_and_warm_runs_are_said(void **state)
{
	struct profile pa, pb;
	struct compare_side v[2] = { { .id = "A", .label = "ok" }, { .id = "B", .label = "fails" } };
	struct comparison c = { .v = v, .nr = 2, .runs = 5, .warmup = 0, .top = 0, .cold = true, .what = "commands" };
	struct buf t = BUF_INIT, md = BUF_INIT;
	char *json;

	profile_init(&pa);
	profile_init(&pb);
	add_runs(&pa, 4, 0, true);
	add_runs(&pa, 1, 0, false);
	add_runs(&pb, 5, 3, true);
	v[0].p = &pa;
	v[1].p = &pb;
	comparison_analyze(&c);
	assert_int_equal(v[0].nr_failed, 0);
	assert_null(v[0].failure);
	assert_int_equal(v[0].nr_not_cold, 1);
	assert_int_equal(v[1].nr_failed, 5);
	assert_string_equal(v[1].failure, "exited with status 3");
	assert_int_equal(v[1].nr_not_cold, 0);
	compare_render_table(&c, &t);
	assert_non_null(strstr(t.buf, "  ! B failed in 5 of 5 measured runs (exited with status 3)"));
	assert_non_null(strstr(t.buf, "  ! A: 1 of 5 measured runs were not cold"));
	assert_null(strstr(t.buf, "! A failed"));
	assert_null(strstr(t.buf, "! B: "));
	compare_render_markdown(&c, &md);
	assert_non_null(strstr(md.buf, "**B failed in 5 of 5 measured runs** (exited with status 3)"));
	assert_non_null(strstr(md.buf, "A: 1 of 5 measured runs were not cold"));
	json = compare_render_json(&c);
	assert_non_null(strstr(json, "\"failed_runs\": 5"));
	assert_non_null(strstr(json, "\"failure\": \"exited with status 3\""));
	assert_non_null(strstr(json, "\"not_cold_runs\": 1"));
	free(json);
	comparison_release(&c);
	buf_release(&t);
	buf_release(&md);
	profile_release(&pa);
	profile_release(&pb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_values),
		cmocka_unit_test(test_exact_with_ties),
		cmocka_unit_test(test_normal_approximation),
		cmocka_unit_test(test_holm),
		cmocka_unit_test(test_outliers),
		cmocka_unit_test(test_failed_and_warm_runs_are_said),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
