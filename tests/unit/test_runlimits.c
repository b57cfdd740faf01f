/*
 * The limits module alone: parsing of every option with the values it must
 * refuse, preset arithmetic, the checks across options, the CPU quota and the
 * description reports print.  No cgroup is touched (test_cgroup.c does that).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/runlimits.h"
#include "util.h"

static void test_presets(void **state)
{
	struct limits lim = { 0 };
	struct buf err = BUF_INIT, d = BUF_INIT;

	assert_int_equal(limits_set_preset(&lim, "fn", &err), 0);
	assert_true(lim.cpus == 0.1);
	assert_int_equal(lim.memory, 128LL * 1024 * 1024);
	assert_int_equal(lim.swap, 0);
	assert_string_equal(lim.preset, "fn");
	limits_describe(&lim, &d);
	assert_string_equal(d.buf, "0.1 CPU, 128.0 MiB memory (preset fn)");

	/* Lambda: one vCPU at 1769 MB, proportionally below and above. */
	assert_int_equal(limits_set_preset(&lim, "lambda:1769", &err), 0);
	assert_true(fabs(lim.cpus - 1.0) < 1e-12);
	assert_int_equal(lim.memory, 1769LL * 1024 * 1024);
	assert_int_equal(limits_set_preset(&lim, "lambda:128", &err), 0);
	assert_true(fabs(lim.cpus - 128.0 / 1769.0) < 1e-12);
	assert_int_equal(llround(lim.cpus * 100000), 7236);
	assert_int_equal(lim.memory, 128LL * 1024 * 1024);
	assert_int_equal(limits_set_preset(&lim, "lambda:3538", &err), 0);
	assert_true(fabs(lim.cpus - 2.0) < 1e-12);
	assert_int_equal(limits_set_preset(&lim, "lambda:10240", &err), 0);
	assert_true(fabs(lim.cpus - 10240.0 / 1769.0) < 1e-12);
	assert_string_equal(lim.preset, "lambda:10240");
	buf_reset(&d);
	limits_describe(&lim, &d);
	assert_string_equal(d.buf, "5.79 CPU, 10.00 GiB memory (preset lambda:10240)");

	/* A later option overrides the preset's value. */
	assert_int_equal(limits_set_preset(&lim, "fn", &err), 0);
	assert_int_equal(limits_set_cpus(&lim, "0.5", &err), 0);
	assert_true(lim.cpus == 0.5);
	assert_int_equal(lim.memory, 128LL * 1024 * 1024);

	buf_reset(&err);
	assert_int_equal(limits_set_preset(&lim, "lambda:127", &err), -1);
	assert_non_null(strstr(err.buf, "128 to 10240"));
	assert_int_equal(limits_set_preset(&lim, "lambda:10241", &err), -1);
	assert_int_equal(limits_set_preset(&lim, "lambda:", &err), -1);
	assert_int_equal(limits_set_preset(&lim, "lambda:512x", &err), -1);
	assert_int_equal(limits_set_preset(&lim, "lambda:-512", &err), -1);
	assert_int_equal(limits_set_preset(&lim, "lambda:99999999999999999999", &err), -1);
	buf_reset(&err);
	assert_int_equal(limits_set_preset(&lim, "aws", &err), -1);
	assert_string_equal(err.buf, "invalid --preset 'aws': expected 'fn' or 'lambda:MB' (e.g. lambda:512)");
	assert_int_equal(limits_set_preset(&lim, "", &err), -1);
	assert_int_equal(limits_set_preset(&lim, NULL, &err), -1);
	/* Failures leave the limits as they were. */
	assert_true(lim.cpus == 0.5);
	assert_string_equal(lim.preset, "fn");
	limits_release(&lim);
	assert_null(lim.preset);
	buf_release(&err);
	buf_release(&d);
}

static void test_parse_cpus(void **state)
{
	static const char *const bad[] = { "",	  "abc", "-1", "0",  "0.005", "0.0049", "1e3",	"nan",
					   "inf", "0x1", " 1", "1 ", "1.2.3", ".",	"2000", "1,5" };
	struct limits lim = { 0 };
	struct buf err = BUF_INIT;
	size_t i;

	assert_int_equal(limits_set_cpus(&lim, "0.1", &err), 0);
	assert_true(lim.cpus == 0.1);
	assert_int_equal(limits_set_cpus(&lim, "0.01", &err), 0);
	assert_int_equal(limits_set_cpus(&lim, "2", &err), 0);
	assert_int_equal(limits_set_cpus(&lim, ".5", &err), 0);
	assert_true(lim.cpus == 0.5);
	assert_int_equal(err.len, 0);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		buf_reset(&err);
		if (limits_set_cpus(&lim, bad[i], &err) != -1)
			fail_msg("--cpus '%s' accepted", bad[i]);
		assert_true(starts_with(err.buf, "invalid --cpus '"));
	}
	assert_true(lim.cpus == 0.5);
	buf_reset(&err);
	limits_set_cpus(&lim, "0.001", &err);
	assert_string_equal(err.buf, "invalid --cpus '0.001': the smallest CPU limit is 0.01");
	buf_release(&err);
}

static void test_parse_memory_swap(void **state)
{
	static const char *const bad[] = { "", "abc", "-1", "12q", "1k", "3m", "128 m", "1e", "m" };
	struct limits lim = { 0 };
	struct buf err = BUF_INIT;
	size_t i;

	assert_int_equal(limits_set_memory(&lim, "128m", &err), 0);
	assert_int_equal(lim.memory, 134217728);
	assert_int_equal(limits_set_memory(&lim, "1g", &err), 0);
	assert_int_equal(lim.memory, 1073741824);
	assert_int_equal(limits_set_memory(&lim, "512MiB", &err), 0);
	assert_int_equal(lim.memory, 536870912);
	assert_int_equal(limits_set_memory(&lim, "4194304", &err), 0);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		buf_reset(&err);
		if (limits_set_memory(&lim, bad[i], &err) != -1)
			fail_msg("--memory '%s' accepted", bad[i]);
		assert_true(starts_with(err.buf, "invalid --memory '"));
	}
	assert_int_equal(lim.memory, 4194304);

	assert_int_equal(limits_set_swap(&lim, "0", &err), 0);
	assert_int_equal(lim.swap, 0);
	assert_int_equal(limits_set_swap(&lim, "64m", &err), 0);
	assert_int_equal(lim.swap, 64LL * 1024 * 1024);
	assert_int_equal(limits_set_swap(&lim, "unlimited", &err), 0);
	assert_int_equal(lim.swap, -1);
	assert_int_equal(limits_set_swap(&lim, "max", &err), 0);
	assert_int_equal(lim.swap, -1);
	assert_int_equal(limits_set_swap(&lim, "-2", &err), -1);
	assert_int_equal(limits_set_swap(&lim, "lots", &err), -1);
	assert_int_equal(lim.swap, -1);
	buf_release(&err);
}

static void test_parse_pids_cpuset(void **state)
{
	static const char *const bad_pids[] = { "", "0", "-1", "1.5", "x", "99999999999", "4194305", " 5" };
	static const char *const bad_sets[] = {
		"", "a", "1-0", "0,", ",0", "0--1", "0-", "-1", "0 1", "9999", "0-1,a"
	};
	struct limits lim = { 0 };
	struct buf err = BUF_INIT;
	size_t i;

	assert_int_equal(limits_set_pids(&lim, "64", &err), 0);
	assert_int_equal(lim.pids, 64);
	assert_int_equal(limits_set_pids(&lim, "4194304", &err), 0);
	for (i = 0; i < ARRAY_SIZE(bad_pids); i++)
		if (limits_set_pids(&lim, bad_pids[i], &err) != -1)
			fail_msg("--pids '%s' accepted", bad_pids[i]);
	assert_int_equal(lim.pids, 4194304);

	assert_int_equal(limits_set_cpuset(&lim, "0", &err), 0);
	assert_int_equal(limits_set_cpuset(&lim, "0-1,3,5-7", &err), 0);
	assert_string_equal(lim.cpuset, "0-1,3,5-7");
	for (i = 0; i < ARRAY_SIZE(bad_sets); i++)
		if (limits_set_cpuset(&lim, bad_sets[i], &err) != -1)
			fail_msg("--cpuset '%s' accepted", bad_sets[i]);
	assert_string_equal(lim.cpuset, "0-1,3,5-7");
	limits_release(&lim);
	buf_release(&err);
}

static void test_describe(void **state)
{
	struct limits lim = { 0 };
	struct buf err = BUF_INIT, d = BUF_INIT;

	assert_false(limits_any(&lim));
	limits_describe(&lim, &d);
	assert_string_equal(d.buf, "no limits");
	assert_int_equal(limits_set_cpus(&lim, "0.1", &err), 0);
	assert_true(limits_any(&lim));
	buf_reset(&d);
	limits_describe(&lim, &d);
	assert_string_equal(d.buf, "0.1 CPU");
	assert_int_equal(limits_set_memory(&lim, "128m", &err), 0);
	assert_int_equal(limits_set_pids(&lim, "64", &err), 0);
	buf_reset(&d);
	limits_describe(&lim, &d);
	assert_string_equal(d.buf, "0.1 CPU, 128.0 MiB memory, 64 pids");
	assert_int_equal(limits_set_swap(&lim, "64m", &err), 0);
	assert_int_equal(limits_set_cpuset(&lim, "1", &err), 0);
	buf_reset(&d);
	limits_describe(&lim, &d);
	assert_string_equal(d.buf, "0.1 CPU, 128.0 MiB memory, 64.0 MiB swap, 64 pids, cpus 1");
	limits_release(&lim);
	memset(&lim, 0, sizeof(lim));
	assert_int_equal(limits_set_pids(&lim, "8", &err), 0);
	buf_reset(&d);
	limits_describe(&lim, &d);
	assert_string_equal(d.buf, "8 pids");
	/* What applied them, as the report says it; unlimited swap is said too. */
	assert_int_equal(limits_set_preset(&lim, "fn", &err), 0);
	limits_set_backend(&lim, "docker");
	lim.pids = 0;
	buf_reset(&d);
	limits_describe(&lim, &d);
	assert_string_equal(d.buf, "0.1 CPU, 128.0 MiB memory (preset fn) via docker");
	assert_int_equal(limits_set_swap(&lim, "unlimited", &err), 0);
	buf_reset(&d);
	limits_describe(&lim, &d);
	assert_string_equal(d.buf, "0.1 CPU, 128.0 MiB memory, unlimited swap (preset fn) via docker");
	limits_release(&lim);
	buf_release(&err);
	buf_release(&d);
}

static void test_by_name_check_and_quota(void **state)
{
	struct limits lim = { 0 };
	struct buf err = BUF_INIT;

	/* limits_set is what the --cpus ... --preset rows of every command call. */
	assert_int_equal(limits_set(&lim, "cpus", "0.25", &err), 0);
	assert_int_equal(limits_set(&lim, "memory", "64m", &err), 0);
	assert_int_equal(limits_set(&lim, "swap", "16m", &err), 0);
	assert_int_equal(limits_set(&lim, "pids", "12", &err), 0);
	assert_int_equal(limits_set(&lim, "cpuset", "0", &err), 0);
	assert_true(lim.cpus == 0.25);
	assert_int_equal(lim.memory, 64LL << 20);
	assert_int_equal(lim.swap, 16LL << 20);
	assert_int_equal(lim.pids, 12);
	assert_string_equal(lim.cpuset, "0");
	assert_int_equal(limits_set(&lim, "preset", "lambda:512", &err), 0);
	assert_int_equal(limits_cpu_quota_us(&lim), 28943);
	assert_int_equal(limits_set(&lim, "cpus", "0.01", &err), 0);
	assert_int_equal(limits_cpu_quota_us(&lim), LIMITS_CPU_MIN_QUOTA_US);
	assert_int_equal(limits_set(&lim, "memory", "3m", &err), -1);
	assert_string_equal(err.buf, "invalid --memory '3m': the smallest memory limit is 4m");
	assert_int_equal(limits_check(&lim, &err), 0);
	limits_release(&lim);
	memset(&lim, 0, sizeof(lim));
	assert_int_equal(limits_cpu_quota_us(&lim), 0);

	/* Swap is only limited beyond memory: a usage error on its own. */
	buf_reset(&err);
	assert_int_equal(limits_set(&lim, "swap", "64m", &err), 0);
	assert_true(limits_any(&lim));
	assert_int_equal(limits_check(&lim, &err), -1);
	assert_string_equal(err.buf, "--swap needs --memory: swap is only limited beyond a memory limit");
	buf_reset(&err);
	assert_int_equal(limits_set(&lim, "memory", "64m", &err), 0);
	assert_int_equal(limits_check(&lim, &err), 0);
	limits_set_backend(&lim, "cgroup-v1");
	limits_set_backend(&lim, "cgroup-v2");
	assert_string_equal(lim.backend, "cgroup-v2");
	limits_release(&lim);
	assert_null(lim.backend);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_presets),		  cmocka_unit_test(test_parse_cpus),
		cmocka_unit_test(test_parse_memory_swap), cmocka_unit_test(test_parse_pids_cpuset),
		cmocka_unit_test(test_describe),	  cmocka_unit_test(test_by_name_check_and_quota),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
