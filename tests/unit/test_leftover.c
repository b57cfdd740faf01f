/*
 * Unit tests of the owner-alive rule (src/sys/leftover.h) on real directories,
 * real processes and real flocks: a leftover is stale only when no live
 * process holds its lock and its owner pid is gone; and of the private
 * directories of a run under $TMPDIR and their cleaning.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sys/leftover.h"
#include "util.h"

static char *tmp;

static bool exists(const char *path)
{
	struct stat st;

	return !lstat(path, &st);
}

/* A pid that surely is not running: a child already reaped. */
static pid_t dead_pid(void)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid)
		_exit(0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return pid;
}

static char *make_dir(const char *fmt, long pid)
{
	struct buf p = BUF_INIT;

	buf_addf(&p, "%s/", tmp);
	buf_addf(&p, fmt, pid);
	assert_int_equal(mkdir(p.buf, 0700), 0);
	return buf_detach(&p, NULL);
}

static void put_file(const char *dir, const char *name)
{
	struct buf p = BUF_INIT;
	FILE *f;

	buf_addf(&p, "%s/%s", dir, name);
	f = fopen(p.buf, "w");
	assert_non_null(f);
	fputs("x\n", f);
	fclose(f);
	buf_release(&p);
}

static int setup(void **state)
{
	char tmpl[] = "/tmp/coldstart-lotest-XXXXXX";

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	tmp = xstrdup(tmpl);
	setenv("TMPDIR", tmp, 1);
	return 0;
}

static int teardown(void **state)
{
	struct buf cmd = BUF_INIT;

	(void)state;
	buf_addf(&cmd, "rm -rf '%s'", tmp);
	assert_int_equal(system(cmd.buf), 0);
	buf_release(&cmd);
	free(tmp);
	unsetenv("TMPDIR");
	return 0;
}

static void test_owner_names(void **state)
{
	(void)state;
	assert_int_equal(leftover_owner("coldstart-123-0", "coldstart-", true), 123);
	assert_int_equal(leftover_owner("coldstart-123-45", "coldstart-", true), 123);
	assert_int_equal(leftover_owner("coldstart-123-x", "coldstart-", true), 0);
	assert_int_equal(leftover_owner("coldstart-123-", "coldstart-", true), 0);
	assert_int_equal(leftover_owner("coldstart-123", "coldstart-", true), 0);
	assert_int_equal(leftover_owner("coldstart-web", "coldstart-", true), 0);
	assert_int_equal(leftover_owner("coldstart-0-1", "coldstart-", true), 0);
	assert_int_equal(leftover_owner("coldstart-trace-77-aB3dEf", "coldstart-trace-", false), 77);
	/* An older coldstart's random names and kept traces name no owner. */
	assert_int_equal(leftover_owner("coldstart-trace-AZpaPO", "coldstart-trace-", false), 0);
	assert_int_equal(leftover_owner("coldstart-trace-1aB2cD", "coldstart-trace-", false), 0);
	assert_int_equal(leftover_owner("coldstart-trace-kept-77-aB3dEf", "coldstart-trace-", false), 0);
}

static void test_stale_rule(void **state)
{
	pid_t dead = dead_pid();
	char *gone = make_dir("coldstart-%ld-0", dead);
	char *mine = make_dir("coldstart-%ld-1", getpid());
	char *init = make_dir("coldstart-%ld-2", 1);
	int fd = -1;

	(void)state;
	assert_true(leftover_is_stale(gone, dead, &fd));
	assert_true(fd >= 0);
	/* While one run holds a stale leftover, no other takes it. */
	{
		int fd2 = -2;

		assert_false(leftover_is_stale(gone, dead, &fd2));
		assert_int_equal(fd2, -1);
	}
	close(fd);
	assert_false(leftover_is_stale(mine, getpid(), &fd));
	/* pid 1 lives and started long before the directory was made. */
	assert_false(leftover_is_stale(init, 1, &fd));
	assert_false(leftover_is_stale("/nonexistent/coldstart-1-0", dead, &fd));
	free(gone);
	free(mine);
	free(init);
}

/*
 * A live owner whose pid means nothing here (another pid namespace): its
 * lock keeps the leftover, though the pid in the name is gone.
 */
static void test_lock_beats_a_gone_pid(void **state)
{
	pid_t dead = dead_pid(), holder;
	char *dir = make_dir("coldstart-%ld-0", dead);
	int ready[2], fd = -1, status;
	char c;

	(void)state;
	assert_int_equal(pipe(ready), 0);
	holder = fork();
	assert_true(holder >= 0);
	if (!holder) {
		int lock = leftover_lock(dir);

		if (write(ready[1], lock >= 0 ? "y" : "n", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	assert_int_equal(read(ready[0], &c, 1), 1);
	assert_int_equal(c, 'y');
	assert_false(leftover_is_stale(dir, dead, &fd));
	kill(holder, SIGKILL);
	assert_int_equal(waitpid(holder, &status, 0), holder);
	/* The holder died: its lock went with it. */
	assert_true(leftover_is_stale(dir, dead, &fd));
	close(fd);
	close(ready[0]);
	close(ready[1]);
	free(dir);
}

static void test_private_dir(void **state)
{
	struct private_dir d;
	struct buf err = BUF_INIT, prefix = BUF_INIT;
	struct stat st;
	int fd = -1;

	(void)state;
	assert_int_equal(private_dir_create(&d, "fn", &err), 0);
	buf_addf(&prefix, "%s/coldstart-fn-%ld-", tmp, (long)getpid());
	assert_true(starts_with(d.path, prefix.buf));
	assert_int_equal(stat(d.path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	/* Locked by its owner: not stale even for a dead pid's name. */
	assert_false(leftover_is_stale(d.path, dead_pid(), &fd));
	put_file(d.path, "lsnr.sock");
	{
		char *path = xstrdup(d.path);

		private_dir_remove(&d);
		assert_false(exists(path));
		assert_null(d.path);
		free(path);
	}
	setenv("TMPDIR", "relative/dir", 1);
	assert_int_equal(private_dir_create(&d, "trace", &err), 0);
	assert_true(starts_with(d.path, "/tmp/coldstart-trace-"));
	private_dir_remove(&d);
	setenv("TMPDIR", tmp, 1);
	buf_release(&err);
	buf_release(&prefix);
}

static void test_cleanup_dirs(void **state)
{
	pid_t dead = dead_pid();
	char *trace = make_dir("coldstart-trace-%ld-aaaaaa", dead);
	char *fn = make_dir("coldstart-fn-%ld-bbbbbb", dead);
	char *plan = make_dir("coldstart-plan-%ld-ffffff", dead);
	/* coldstart plan's name before it had an owner: nothing tells whose it is. */
	char *plan_old = make_dir("coldstart-plan-%ld", 123456);
	char *kept = make_dir("coldstart-trace-kept-%ld-cccccc", dead);
	char *old = make_dir("coldstart-trace-OLD%ld", 0);
	char *other = make_dir("coldstart-cgtest-%ld-dddddd", dead);
	char *live = make_dir("coldstart-trace-%ld-eeeeee", 1);
	struct private_dir mine;
	struct buf err = BUF_INIT;

	(void)state;
	put_file(trace, "123.trace");
	put_file(fn, "phony.sock");
	put_file(plan, "phonylsnr.sock");
	assert_int_equal(private_dir_create(&mine, "trace", &err), 0);
	leftover_cleanup_dirs();
	assert_false(exists(trace));
	assert_false(exists(fn));
	assert_false(exists(plan));
	assert_true(exists(plan_old));
	assert_true(exists(kept));
	assert_true(exists(old));
	assert_true(exists(other));
	assert_true(exists(live));
	assert_true(exists(mine.path));
	private_dir_remove(&mine);
	free(trace);
	free(fn);
	free(plan);
	free(plan_old);
	free(kept);
	free(old);
	free(other);
	free(live);
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_owner_names),
		cmocka_unit_test_setup_teardown(test_stale_rule, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lock_beats_a_gone_pid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_private_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cleanup_dirs, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
