/*
 * The docker module without an engine: limits mapped to engine flags, the
 * whole `create` argv (mounts, environment, publishing), the inspect state
 * line and RFC 3339 times, and docker_exec against ordinary programs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sys/docker.h"
#include "model/profile.h"
#include "util.h"

/* The argv joined with '|' so a whole vector is compared at once. */
static char *joined(const struct strvec *sv)
{
	struct buf b = BUF_INIT;
	size_t i;

	for (i = 0; i < sv->nr; i++)
		buf_addf(&b, "%s%s", i ? "|" : "", sv->v[i]);
	return buf_detach(&b, NULL);
}

static void assert_argv(const struct strvec *sv, const char *want)
{
	char *got = joined(sv);

	if (strcmp(got, want))
		fail_msg("argv\n got: %s\nwant: %s", got, want);
	free(got);
}

static void test_limits_fn_preset(void **state)
{
	struct limits lim;
	struct strvec argv = STRVEC_INIT;
	struct buf err = BUF_INIT;

	memset(&lim, 0, sizeof(lim));
	lim.cpus = 0.1;
	lim.memory = 128LL << 20;
	assert_int_equal(docker_limit_args(&lim, &argv, &err), 0);
	/* memory-swap equal to memory: no swap, as coldstart's default. */
	assert_argv(&argv, "--cpus|0.1|--memory|134217728|--memory-swap|134217728");
	strvec_clear(&argv);
	buf_release(&err);
}

static void test_limits_all(void **state)
{
	struct limits lim;
	struct strvec argv = STRVEC_INIT;
	struct buf err = BUF_INIT;

	memset(&lim, 0, sizeof(lim));
	lim.cpus = 1024.0 / 1769; /* lambda:1024 */
	lim.memory = 64LL << 20;
	lim.swap = 32LL << 20;
	lim.pids = 64;
	lim.cpuset = "0-1";
	assert_int_equal(docker_limit_args(&lim, &argv, &err), 0);
	assert_argv(&argv, "--cpus|0.578858|--memory|67108864|--memory-swap|100663296|--pids-limit|64|"
			   "--cpuset-cpus|0-1");
	strvec_clear(&argv);

	lim.swap = -1;
	lim.cpus = 2;
	lim.pids = 0;
	lim.cpuset = NULL;
	assert_int_equal(docker_limit_args(&lim, &argv, &err), 0);
	assert_argv(&argv, "--cpus|2|--memory|67108864|--memory-swap|-1");
	strvec_clear(&argv);
	buf_release(&err);
}

static void test_limits_none_and_bad(void **state)
{
	struct limits lim;
	struct strvec argv = STRVEC_INIT;
	struct buf err = BUF_INIT;

	memset(&lim, 0, sizeof(lim));
	assert_int_equal(docker_limit_args(&lim, &argv, &err), 0);
	assert_int_equal(argv.nr, 0);
	assert_int_equal(docker_limit_args(NULL, &argv, &err), 0);
	assert_int_equal(argv.nr, 0);

	lim.swap = 1 << 20;
	assert_int_equal(docker_limit_args(&lim, &argv, &err), -1);
	assert_non_null(strstr(err.buf, "--swap needs --memory"));
	strvec_clear(&argv);
	buf_release(&err);
}

static void test_create_plain(void **state)
{
	struct docker_spec ds;
	struct strvec argv = STRVEC_INIT;
	struct buf err = BUF_INIT;
	const char *cmd[] = { "python3", "/app/func.py", NULL };

	docker_spec_init(&ds);
	ds.name = "coldstart-1-0";
	ds.image = "img:tag";
	ds.command = cmd;
	assert_int_equal(docker_create_argv(&ds, &argv, &err), 0);
	assert_argv(&argv, "docker|create|--name|coldstart-1-0|--init|-e|PYTHONPROFILEIMPORTTIME=1|img:tag|"
			   "python3|/app/func.py");
	docker_spec_release(&ds);
	strvec_clear(&argv);
	buf_release(&err);
}

static void test_create_everything(void **state)
{
	struct docker_spec ds;
	struct limits lim;
	struct strvec argv = STRVEC_INIT;
	struct buf err = BUF_INIT;
	const char *cmd[] = { "python3", "-c", "import json; print(1)", NULL };

	memset(&lim, 0, sizeof(lim));
	lim.cpus = 0.1;
	lim.memory = 128LL << 20;
	docker_spec_init(&ds);
	ds.engine = "podman";
	ds.name = "n";
	ds.image = "img";
	ds.command = cmd;
	ds.limits = &lim;
	ds.network = "none";
	ds.user = "1000:1000";
	ds.entrypoint = "/bin/sh";
	ds.init = false;
	ds.boot_dir = "/opt/cs/python/coldstart";
	ds.trace_dir = "/tmp/coldstart-trace-x";
	ds.fn_dir = "/tmp/coldstart-fn-y";
	ds.publish_port = 8080;
	strvec_push(&ds.env, "FN_LISTENER=unix:/tmp/iofs/lsnr.sock");
	strvec_push(&ds.env, "PYTHONPATH=/app/lib");
	strvec_push(&ds.env, "A=b c");
	strvec_push(&ds.volumes, "/src:/app:ro");
	strvec_push(&ds.extra, "--label");
	strvec_push(&ds.extra, "coldstart.pid=1");
	assert_int_equal(docker_create_argv(&ds, &argv, &err), 0);
	/*
	 * The user's PYTHONPATH follows the bootstrap's; the argument with a
	 * space stays one argument (no shell).
	 */
	assert_argv(&argv,
		    "podman|create|--name|n|--cpus|0.1|--memory|134217728|--memory-swap|134217728|"
		    "--network|none|--user|1000:1000|--entrypoint|/bin/sh|"
		    "-e|FN_LISTENER=unix:/tmp/iofs/lsnr.sock|-e|A=b c|-e|PYTHONPROFILEIMPORTTIME=1|"
		    "-v|/opt/cs/python/coldstart:" DOCKER_BOOT_MOUNT ":ro|"
		    "-e|PYTHONPATH=" DOCKER_BOOT_PATH ":/app/lib|-e|COLDSTART_TRACER=py|"
		    "-v|/tmp/coldstart-trace-x:" DOCKER_TRACE_MOUNT "|-e|COLDSTART_TRACE_DIR=" DOCKER_TRACE_MOUNT "|"
		    "-v|/tmp/coldstart-fn-y:/tmp/iofs|-p|127.0.0.1:8080:8080|-v|/src:/app:ro|"
		    "--label|coldstart.pid=1|img|python3|-c|import json; print(1)");
	docker_spec_release(&ds);
	strvec_clear(&argv);
	buf_release(&err);
}

static void test_create_host_network_publishes_nothing(void **state)
{
	struct docker_spec ds;
	struct strvec argv = STRVEC_INIT;
	struct buf err = BUF_INIT;

	docker_spec_init(&ds);
	ds.image = "img";
	ds.network = "host";
	ds.publish_port = 8080;
	ds.importtime = false;
	assert_int_equal(docker_create_argv(&ds, &argv, &err), 0);
	assert_argv(&argv, "docker|create|--init|--network|host|img");
	docker_spec_release(&ds);
	strvec_clear(&argv);
	buf_release(&err);
}

static void test_create_pythonpath_without_boot_is_kept(void **state)
{
	struct docker_spec ds;
	struct strvec argv = STRVEC_INIT;
	struct buf err = BUF_INIT;

	docker_spec_init(&ds);
	ds.image = "img";
	ds.init = false;
	strvec_push(&ds.env, "PYTHONPATH=/x");
	assert_int_equal(docker_create_argv(&ds, &argv, &err), 0);
	assert_argv(&argv, "docker|create|-e|PYTHONPATH=/x|-e|PYTHONPROFILEIMPORTTIME=1|img");
	docker_spec_release(&ds);
	strvec_clear(&argv);
	buf_release(&err);
}

static void test_create_bad_image(void **state)
{
	struct docker_spec ds;
	struct strvec argv = STRVEC_INIT;
	struct buf err = BUF_INIT;
	struct limits lim;

	docker_spec_init(&ds);
	assert_int_equal(docker_create_argv(&ds, &argv, &err), -1);
	assert_string_equal(err.buf, "no image given");
	buf_reset(&err);
	strvec_clear(&argv);
	ds.image = "--privileged";
	assert_int_equal(docker_create_argv(&ds, &argv, &err), -1);
	assert_non_null(strstr(err.buf, "starts with '-'"));
	buf_reset(&err);
	strvec_clear(&argv);

	memset(&lim, 0, sizeof(lim));
	lim.swap = 1;
	ds.image = "img";
	ds.limits = &lim;
	assert_int_equal(docker_create_argv(&ds, &argv, &err), -1);
	assert_non_null(strstr(err.buf, "--swap needs --memory"));
	docker_spec_release(&ds);
	strvec_clear(&argv);
	buf_release(&err);
}

static void test_parse_time(void **state)
{
	int64_t ns = 123;

	assert_int_equal(docker_parse_time("1970-01-01T00:00:01Z", &ns), 0);
	assert_int_equal(ns, 1000000000LL);
	/* date -u -d 2026-11-30T09:45:12Z +%s gives 1796031912. */
	assert_int_equal(docker_parse_time("2026-11-30T09:45:12.123456789Z", &ns), 0);
	assert_int_equal(ns, 1796031912LL * 1000000000 + 123456789);
	assert_int_equal(docker_parse_time("2024-02-29T23:59:59.5Z", &ns), 0);
	assert_int_equal(ns, 1709251199LL * 1000000000 + 500000000);
	assert_int_equal(docker_parse_time("0001-01-01T00:00:00Z", &ns), 0);
	assert_int_equal(ns, 0);

	assert_int_equal(docker_parse_time("", &ns), -1);
	assert_int_equal(docker_parse_time(NULL, &ns), -1);
	assert_int_equal(docker_parse_time("2026-11-30 09:45:12Z", &ns), -1);
	assert_int_equal(docker_parse_time("2026-11-30T09:45:12", &ns), -1);
	assert_int_equal(docker_parse_time("2026-11-30T09:45:12+01:00", &ns), -1);
	assert_int_equal(docker_parse_time("2026-13-30T09:45:12Z", &ns), -1);
	/* Found by tests/fuzz/fuzz_docker_state: the nanoseconds overflowed past 2262. */
	assert_int_equal(docker_parse_time("2826-11-30T09:45:12.1Z", &ns), -1);
	assert_int_equal(docker_parse_time("2261-12-31T23:59:59.999999999Z", &ns), 0);
	assert_int_equal(docker_parse_time("2026-11-30T09:45:12.Z", &ns), -1);
}

static void test_state_oom(void **state)
{
	struct docker_state st;
	struct buf err = BUF_INIT;

	assert_int_equal(docker_state_parse(&st,
					    "true\t137\texited\t2026-11-30T09:45:12.100000000Z\t"
					    "2026-11-30T09:45:13.350000000Z\t\n",
					    &err),
			 0);
	assert_true(st.oom_killed);
	assert_int_equal(st.exit_code, 137);
	assert_string_equal(st.status, "exited");
	assert_true(st.started);
	assert_int_equal(st.finished_ns - st.started_ns, 1250000000LL);
	assert_null(st.error);
	docker_state_release(&st);
	buf_release(&err);
}

static void test_state_never_started(void **state)
{
	struct docker_state st;
	struct buf err = BUF_INIT;

	assert_int_equal(docker_state_parse(&st,
					    "false\t127\tcreated\t0001-01-01T00:00:00Z\t0001-01-01T00:00:00Z\t"
					    "exec: \"nosuchcmd\": executable file not found in $PATH\n",
					    &err),
			 0);
	assert_false(st.oom_killed);
	assert_false(st.started);
	assert_int_equal(st.exit_code, 127);
	assert_string_equal(st.error, "exec: \"nosuchcmd\": executable file not found in $PATH");
	docker_state_release(&st);
	buf_release(&err);
}

static void test_state_bad(void **state)
{
	static const char *const bad[] = {
		"",
		"false\t0\texited",
		"maybe\t0\texited\t1970-01-01T00:00:01Z\t1970-01-01T00:00:02Z\t",
		"false\tx\texited\t1970-01-01T00:00:01Z\t1970-01-01T00:00:02Z\t",
		"false\t999\texited\t1970-01-01T00:00:01Z\t1970-01-01T00:00:02Z\t",
		"false\t0\texited\tyesterday\t1970-01-01T00:00:02Z\t",
		"Error: No such object: x",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		struct docker_state st;
		struct buf err = BUF_INIT;

		if (docker_state_parse(&st, bad[i], &err) != -1)
			fail_msg("accepted '%s'", bad[i]);
		assert_true(err.len > 0);
		docker_state_release(&st);
		buf_release(&err);
	}
}

static void test_exec_output_and_status(void **state)
{
	struct buf out = BUF_INIT, errout = BUF_INIT, err = BUF_INIT;
	const char *argv[] = { "/bin/sh", "-c", "echo out; echo err >&2; exit 3", NULL };

	assert_int_equal(docker_exec(argv, 10000, &out, &errout, &err), 3);
	assert_string_equal(out.buf, "out\n");
	assert_string_equal(errout.buf, "err\n");
	buf_release(&out);
	buf_release(&errout);
	buf_release(&err);
}

static void test_exec_signal_missing_timeout(void **state)
{
	struct buf out = BUF_INIT, err = BUF_INIT;
	const char *killed[] = { "/bin/sh", "-c", "kill -9 $$", NULL };
	const char *missing[] = { "coldstart-no-such-engine", "version", NULL };
	const char *slow[] = { "/bin/sleep", "30", NULL };
	/* A grandchild keeping the pipes open must not hold docker_exec up. */
	const char *holder[] = { "/bin/sh", "-c", "(sleep 2; echo late) & echo started", NULL };

	assert_int_equal(docker_exec(killed, 10000, NULL, NULL, &err), 128 + 9);

	assert_int_equal(docker_exec(missing, 10000, NULL, NULL, &err), -1);
	assert_int_equal(errno, ENOENT);
	buf_reset(&err);

	assert_int_equal(docker_exec(slow, 200, NULL, NULL, &err), -1);
	assert_int_equal(errno, ETIMEDOUT);
	assert_non_null(strstr(err.buf, "did not finish within 200 ms"));
	buf_reset(&err);

	assert_int_equal(docker_exec(holder, 60000, &out, NULL, &err), 0);
	assert_string_equal(out.buf, "started\n");
	buf_release(&out);
	buf_release(&err);
}

static void test_last_line(void **state)
{
	struct buf b = BUF_INIT;

	buf_add_last_line(&b, "Unable to find image\ndocker: Error response from daemon: boom.\n\n");
	assert_string_equal(b.buf, "docker: Error response from daemon: boom.");
	buf_reset(&b);
	buf_add_last_line(&b, "");
	assert_string_equal(b.buf, "");
	buf_reset(&b);
	buf_add_last_line(&b, "  one  ");
	assert_string_equal(b.buf, "one");
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limits_fn_preset),
		cmocka_unit_test(test_limits_all),
		cmocka_unit_test(test_limits_none_and_bad),
		cmocka_unit_test(test_create_plain),
		cmocka_unit_test(test_create_everything),
		cmocka_unit_test(test_create_host_network_publishes_nothing),
		cmocka_unit_test(test_create_pythonpath_without_boot_is_kept),
		cmocka_unit_test(test_create_bad_image),
		cmocka_unit_test(test_parse_time),
		cmocka_unit_test(test_state_oom),
		cmocka_unit_test(test_state_never_started),
		cmocka_unit_test(test_state_bad),
		cmocka_unit_test(test_exec_output_and_status),
		cmocka_unit_test(test_exec_signal_missing_timeout),
		cmocka_unit_test(test_last_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
