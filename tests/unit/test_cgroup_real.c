/*
 * cgroup layer on the real cgroupfs of this host (v1 or v2, whichever
 * cgroup_create picks): CPU quota, OOM kill, pids and cpuset limits, killing
 * a process tree, removal, and cleanup after a SIGKILLed coldstart.  Needs
 * root; every test says why it skips otherwise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sys/cgroup.h"
#include "util.h"

#define PYTHON "/usr/bin/python3"

static const char *skip_reason;

/* CPU-bound work: about 0.2-0.4 s unconstrained on this machine. */
static const char cpu_loop[] = "n = 0\nfor i in range(3000000):\n    n += i\n";

static void need_real(void)
{
	if (skip_reason) {
		print_message("SKIP: %s\n", skip_reason);
		skip();
	}
}

static int group_setup(void **state)
{
	unsetenv("COLDSTART_CGROUP_ROOT");
	/* Stray processes from a test are ours to reap, not init's. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (geteuid() != 0)
		skip_reason = "needs root to create cgroups (run as root)";
	else if (!cgroup_backend_name())
		skip_reason = "no usable cgroup v1 or v2 cpu+memory controllers on this host";
	else if (access(PYTHON, X_OK))
		skip_reason = "needs " PYTHON " as the target";
	if (!skip_reason)
		print_message("backend: %s\n", cgroup_backend_name());
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * Starts argv inside cg the way launch.c does: the child writes "0" into
 * each join file after fork and before exec (exit 125 when it cannot).
 */
static pid_t start_in(struct cgroup *cg, const char *const *argv)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		const char *const *f;

		for (f = cg ? cgroup_join_files(cg) : NULL; f && *f; f++) {
			int fd = open(*f, O_WRONLY);

			if (fd < 0 || write(fd, "0\n", 2) != 2)
				_exit(125);
			close(fd);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static int run_in(struct cgroup *cg, const char *const *argv, int64_t *wall_us)
{
	int64_t t0 = now_ns();
	pid_t pid = start_in(cg, argv);
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (wall_us)
		*wall_us = (now_ns() - t0) / 1000;
	return status;
}

static char *dir_of(const char *join)
{
	const char *slash = strrchr(join, '/');

	assert_non_null(slash);
	return xstrndup(join, (size_t)(slash - join));
}

/* Copies the run's directories; the caller frees with strvec_clear. */
static void dirs_of(struct cgroup *cg, struct strvec *out)
{
	const char *const *f;

	for (f = cgroup_join_files(cg); *f; f++) {
		char *d = dir_of(*f);

		strvec_push(out, d);
		free(d);
	}
}

static void assert_all_gone(const struct strvec *dirs)
{
	struct stat st;
	size_t i;

	for (i = 0; i < dirs->nr; i++)
		if (!stat(dirs->v[i], &st))
			fail_msg("'%s' was left behind", dirs->v[i]);
}

static struct cgroup *create_or_fail(struct limits *lim)
{
	struct buf err = BUF_INIT;
	struct cgroup *cg = cgroup_create(lim, &err);

	if (!cg)
		fail_msg("cgroup_create: %s", err.buf);
	buf_release(&err);
	return cg;
}

static void test_cpu_quota(void **state)
{
	const char *argv[] = { PYTHON, "-S", "-c", cpu_loop, NULL };
	struct limits lim = { 0 };
	struct buf err = BUF_INIT;
	struct cg_figures free_fig, fig;
	struct strvec dirs = STRVEC_INIT;
	struct cgroup *cg;
	int64_t free_us, lim_us;
	int status;

	need_real();
	/* Unconstrained, but in a cgroup of its own to read its CPU time. */
	cg = create_or_fail(&lim);
	status = run_in(cg, argv, &free_us);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(cgroup_read_figures(cg, &free_fig), 0);
	dirs_of(cg, &dirs);
	cgroup_destroy(cg);
	assert_all_gone(&dirs);
	strvec_clear(&dirs);

	assert_int_equal(limits_set_cpus(&lim, "0.1", &err), 0);
	cg = create_or_fail(&lim);
	status = run_in(cg, argv, &lim_us);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(cgroup_read_figures(cg, &fig), 0);
	dirs_of(cg, &dirs);
	cgroup_destroy(cg);
	assert_all_gone(&dirs);
	strvec_clear(&dirs);

	print_message("free: wall %lld us, cpu %lld us; --cpus 0.1: wall %lld us, cpu %lld us, "
		      "throttled %lld of %lld periods for %lld us; wall/free wall %.1fx, wall/free cpu %.1fx\n",
		      (long long)free_us, (long long)free_fig.cpu_usage_us, (long long)lim_us,
		      (long long)fig.cpu_usage_us, (long long)fig.nr_throttled, (long long)fig.nr_periods,
		      (long long)fig.throttled_us, (double)lim_us / (double)free_us,
		      (double)lim_us / (double)free_fig.cpu_usage_us);
	/* The kernel says it throttled the run ... */
	assert_true(fig.nr_throttled > 0);
	assert_true(fig.throttled_us > 0);
	assert_true(fig.cpu_usage_us > 0);
	/* ... to about a tenth of a CPU (with room for the first period's burst) ... */
	assert_true(fig.cpu_usage_us * 4 < lim_us);
	/*
	 * ... so the same work took several times longer (about ten) than
	 * the CPU time it needs.  Against CPU time, not the free run's wall
	 * time, which other load on the host can stretch.
	 */
	assert_true(lim_us > 4 * free_fig.cpu_usage_us);
	limits_release(&lim);
	buf_release(&err);
}

static void test_oom_kill(void **state)
{
	const char *argv[] = { PYTHON, "-S", "-c", "b = b'x' * (200 * 1024 * 1024)\nprint(len(b))", NULL };
	struct limits lim = { 0 };
	struct buf err = BUF_INIT, sb = BUF_INIT, p = BUF_INIT;
	struct strvec dirs = STRVEC_INIT;
	struct cg_figures fig;
	struct cgroup *cg;
	const char *mem = NULL;
	size_t i;
	int status;

	need_real();
	assert_int_equal(limits_set_memory(&lim, "64m", &err), 0);
	cg = create_or_fail(&lim);
	dirs_of(cg, &dirs);
	/* The limit as the kernel holds it; swap none beyond it. */
	for (i = 0; i < dirs.nr; i++) {
		buf_reset(&p);
		buf_addf(&p, "%s/memory.limit_in_bytes", dirs.v[i]);
		if (!access(p.buf, R_OK))
			mem = dirs.v[i];
		buf_reset(&p);
		buf_addf(&p, "%s/memory.max", dirs.v[i]);
		if (!access(p.buf, R_OK))
			mem = dirs.v[i];
	}
	assert_non_null(mem);
	buf_reset(&p);
	buf_addf(&p, "%s/memory.limit_in_bytes", mem);
	if (!buf_read_file(&sb, p.buf)) {
		assert_string_equal(sb.buf, "67108864\n");
		buf_reset(&sb);
		buf_reset(&p);
		buf_addf(&p, "%s/memory.memsw.limit_in_bytes", mem);
		if (!buf_read_file(&sb, p.buf))
			assert_string_equal(sb.buf, "67108864\n");
		else
			assert_non_null(cgroup_note(cg));
	} else {
		buf_reset(&p);
		buf_addf(&p, "%s/memory.max", mem);
		assert_int_equal(buf_read_file(&sb, p.buf), 0);
		assert_string_equal(sb.buf, "67108864\n");
	}

	status = run_in(cg, argv, NULL);
	assert_int_equal(cgroup_read_figures(cg, &fig), 0);
	print_message("status %#x, oom_kills %lld, peak %lld bytes\n", status, (long long)fig.oom_kills,
		      (long long)fig.memory_peak);
	/* OOM in a memory cgroup is a SIGKILL, and the kernel counts it. */
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
	assert_true(fig.oom_kills >= 1);
	assert_true(fig.memory_peak > 32LL * 1024 * 1024);
	assert_true(fig.memory_peak <= 64LL * 1024 * 1024);
	cgroup_destroy(cg);
	assert_all_gone(&dirs);
	strvec_clear(&dirs);
	limits_release(&lim);
	buf_release(&err);
	buf_release(&sb);
	buf_release(&p);
}

static void test_pids_limit(void **state)
{
	const char *argv[] = { PYTHON, "-S", "-c",
			       "import subprocess\n"
			       "ps = []\n"
			       "try:\n"
			       "    for i in range(12):\n"
			       "        ps.append(subprocess.Popen(['/bin/sleep', '30']))\n"
			       "    rc = 0\n"
			       "except OSError:\n"
			       "    rc = 3\n"
			       "for p in ps:\n"
			       "    p.kill()\n"
			       "    p.wait()\n"
			       "raise SystemExit(rc)\n",
			       NULL };
	struct limits lim = { 0 };
	struct buf err = BUF_INIT;
	struct strvec dirs = STRVEC_INIT;
	struct cgroup *cg;
	int status;

	need_real();
	assert_int_equal(limits_set_pids(&lim, "6", &err), 0);
	cg = create_or_fail(&lim);
	dirs_of(cg, &dirs);
	status = run_in(cg, argv, NULL);
	/* Exit 3: a fork was refused (EAGAIN) before 12 children ran. */
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 3);
	cgroup_destroy(cg);
	assert_all_gone(&dirs);
	strvec_clear(&dirs);
	limits_release(&lim);
	buf_release(&err);
}

static void test_cpuset(void **state)
{
	const char *argv[] = { PYTHON, "-S", "-c",
			       "import os\nraise SystemExit(0 if os.sched_getaffinity(0) == {0} else 1)", NULL };
	struct limits lim = { 0 };
	struct buf err = BUF_INIT;
	struct strvec dirs = STRVEC_INIT;
	struct cgroup *cg;
	int status;

	need_real();
	assert_int_equal(limits_set_cpuset(&lim, "0", &err), 0);
	cg = create_or_fail(&lim);
	dirs_of(cg, &dirs);
	status = run_in(cg, argv, NULL);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	cgroup_destroy(cg);
	assert_all_gone(&dirs);
	strvec_clear(&dirs);
	limits_release(&lim);
	buf_release(&err);
}

/* Waits (bounded) until cg holds at least n processes. */
static int wait_procs(struct cgroup *cg, int n)
{
	int i, got = -1;

	for (i = 0; i < 500; i++) {
		got = cgroup_nr_procs(cg);
		if (got >= n)
			break;
		sleep_ms(10);
	}
	return got;
}

static void reap_all(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

static void test_kill_tree(void **state)
{
	/* A shell with children and a grandchild whose parent has left. */
	const char *argv[] = { "/bin/sh", "-c", "sleep 300 & sleep 300 & (sleep 300 &); sleep 300", NULL };
	struct limits lim = { 0 };
	struct buf err = BUF_INIT;
	struct strvec dirs = STRVEC_INIT;
	struct cgroup *cg;
	pid_t pid;
	int status;

	need_real();
	assert_int_equal(limits_set_pids(&lim, "50", &err), 0);
	cg = create_or_fail(&lim);
	dirs_of(cg, &dirs);
	pid = start_in(cg, argv);
	assert_int_equal(wait_procs(cg, 5), 5);
	assert_int_equal(cgroup_kill_all(cg), 0);
	assert_int_equal(cgroup_nr_procs(cg), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	cgroup_destroy(cg);
	assert_all_gone(&dirs);
	reap_all();
	strvec_clear(&dirs);
	limits_release(&lim);
	buf_release(&err);
}

static void test_destroy_while_running(void **state)
{
	const char *argv[] = { "/bin/sh", "-c", "sleep 300 & sleep 300", NULL };
	struct limits lim = { 0 };
	struct buf err = BUF_INIT;
	struct strvec dirs = STRVEC_INIT;
	struct cgroup *cg;
	pid_t pid;
	int status;

	need_real();
	assert_int_equal(limits_set_memory(&lim, "256m", &err), 0);
	cg = create_or_fail(&lim);
	dirs_of(cg, &dirs);
	pid = start_in(cg, argv);
	assert_int_equal(wait_procs(cg, 3), 3);
	/* The Ctrl-C path: destroy with the target still running and unreaped. */
	cgroup_destroy(cg);
	assert_all_gone(&dirs);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	reap_all();
	strvec_clear(&dirs);
	limits_release(&lim);
	buf_release(&err);
}

/*
 * A stand-in for a coldstart that gets SIGKILLed mid-run: it makes the
 * cgroup, starts a sleeper inside and reports the directories on fd.
 */
static _Noreturn void doomed_coldstart(int fd)
{
	const char *argv[] = { "/bin/sleep", "300", NULL };
	struct limits lim = { .memory = 128LL * 1024 * 1024 };
	struct buf err = BUF_INIT, out = BUF_INIT;
	struct cgroup *cg = cgroup_create(&lim, &err);
	const char *const *f;

	if (!cg)
		_exit(1);
	start_in(cg, argv);
	for (f = cgroup_join_files(cg); *f; f++)
		buf_addf(&out, "%s\n", *f);
	if (write(fd, out.buf, out.len) != (ssize_t)out.len)
		_exit(1);
	close(fd);
	pause();
	_exit(0);
}

static void test_stale_after_sigkill(void **state)
{
	struct strvec dirs = STRVEC_INIT;
	struct buf sb = BUF_INIT, name = BUF_INIT;
	char chunk[4096];
	ssize_t n;
	int fds[2], status;
	pid_t pid;
	char *line, *nl;

	need_real();
	/* Close-on-exec, or the sleeper would hold the pipe open. */
	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(fds[0]);
		doomed_coldstart(fds[1]);
	}
	close(fds[1]);
	while ((n = read(fds[0], chunk, sizeof(chunk))) > 0)
		buf_add(&sb, chunk, (size_t)n);
	close(fds[0]);
	assert_true(sb.len > 0);
	for (line = sb.buf; (nl = strchr(line, '\n')); line = nl + 1) {
		char *d;

		*nl = '\0';
		d = dir_of(line);
		strvec_push(&dirs, d);
		free(d);
	}
	buf_addf(&name, "/coldstart-%ld-", (long)pid);
	assert_non_null(strstr(dirs.v[0], name.buf));

	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	/* Left behind, with the sleeper still inside. */
	assert_int_equal(access(dirs.v[0], F_OK), 0);

	cgroup_cleanup_stale();
	assert_all_gone(&dirs);
	/* The sleeper was killed; it was reparented to us (subreaper). */
	{
		int i;
		pid_t got = 0;

		for (i = 0; i < 300 && got <= 0; i++) {
			got = waitpid(-1, &status, WNOHANG);
			if (!got)
				sleep_ms(10);
		}
		assert_true(got > 0);
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	}
	strvec_clear(&dirs);
	buf_release(&sb);
	buf_release(&name);
}

static void test_cleanup_keeps_live(void **state)
{
	struct limits lim = { 0 };
	struct strvec dirs = STRVEC_INIT;
	struct cgroup *cg;
	size_t i;

	need_real();
	cg = create_or_fail(&lim);
	dirs_of(cg, &dirs);
	/* Ours, and we are alive: another coldstart starting now keeps it. */
	cgroup_cleanup_stale();
	for (i = 0; i < dirs.nr; i++)
		assert_int_equal(access(dirs.v[i], F_OK), 0);
	cgroup_destroy(cg);
	assert_all_gone(&dirs);
	strvec_clear(&dirs);
	limits_release(&lim);
}

/* No coldstart-<our pid>-* anywhere under /sys/fs/cgroup once done. */
static void scan_for_ours(const char *dir, const char *prefix, int depth, size_t *found)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		struct buf p = BUF_INIT;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		buf_addf(&p, "%s/%s", dir, de->d_name);
		if (starts_with(de->d_name, prefix)) {
			print_message("left behind: %s\n", p.buf);
			(*found)++;
		} else if (depth < 4) {
			scan_for_ours(p.buf, prefix, depth + 1, found);
		}
		buf_release(&p);
	}
	closedir(d);
}

static void test_nothing_left(void **state)
{
	struct buf prefix = BUF_INIT;
	size_t found = 0;

	need_real();
	buf_addf(&prefix, "coldstart-%ld-", (long)getpid());
	scan_for_ours("/sys/fs/cgroup", prefix.buf, 0, &found);
	assert_int_equal(found, 0);
	buf_release(&prefix);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_quota),	    cmocka_unit_test(test_oom_kill),
		cmocka_unit_test(test_pids_limit),	    cmocka_unit_test(test_cpuset),
		cmocka_unit_test(test_kill_tree),	    cmocka_unit_test(test_destroy_while_running),
		cmocka_unit_test(test_stale_after_sigkill), cmocka_unit_test(test_cleanup_keeps_live),
		cmocka_unit_test(test_nothing_left),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
