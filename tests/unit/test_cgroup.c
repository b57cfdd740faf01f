/*
 * cgroup layer against fake cgroupfs trees ($COLDSTART_CGROUP_ROOT): the files
 * written for each limit on v2 and v1, the figures parsed back, removal and
 * stale cleanup (the limits themselves: test_runlimits.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sys/cgroup.h"
#include "sys/leftover.h"
#include "util.h"

static char tmpl[] = "/tmp/coldstart-cgtest-XXXXXX";
static char *root;

static void put(const char *dir, const char *file, const char *text)
{
	struct buf p = BUF_INIT;
	FILE *f;

	buf_addf(&p, "%s/%s", dir, file);
	f = fopen(p.buf, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	buf_release(&p);
}

/* Contents of dir/file without the trailing newline; "" when missing. */
static char *get(const char *dir, const char *file)
{
	struct buf p = BUF_INIT, sb = BUF_INIT;

	buf_addf(&p, "%s/%s", dir, file);
	if (!buf_read_file(&sb, p.buf)) {
		while (sb.len && sb.buf[sb.len - 1] == '\n')
			buf_setlen(&sb, sb.len - 1);
	}
	buf_release(&p);
	return buf_detach(&sb, NULL);
}

static void assert_file(const char *dir, const char *file, const char *want)
{
	char *got = get(dir, file);

	if (strcmp(got, want))
		fail_msg("%s/%s: got '%s', want '%s'", dir, file, got, want);
	free(got);
}

static bool exists(const char *path)
{
	struct stat st;

	return !stat(path, &st);
}

/* Removes path and what is under it; a symlink (cpuacct -> cpu) is removed, not followed. */
static void rm_rf(const char *path)
{
	struct stat st;
	DIR *d = lstat(path, &st) == 0 && S_ISDIR(st.st_mode) ? opendir(path) : NULL;
	struct dirent *de;

	if (d) {
		while ((de = readdir(d))) {
			struct buf p = BUF_INIT;

			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			buf_addf(&p, "%s/%s", path, de->d_name);
			rm_rf(p.buf);
			buf_release(&p);
		}
		closedir(d);
		rmdir(path);
	} else {
		unlink(path);
	}
}

/* The run's directory: its join file without "/cgroup.procs". */
static char *run_dir(const char *join)
{
	const char *slash = strrchr(join, '/');

	assert_non_null(slash);
	assert_string_equal(slash, "/cgroup.procs");
	return xstrndup(join, (size_t)(slash - join));
}

static int fake_v2(void **state)
{
	root = xstrdup(tmpl);
	assert_non_null(mkdtemp(root));
	put(root, "cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
	put(root, "cgroup.subtree_control", "");
	put(root, "cgroup.procs", "");
	setenv("COLDSTART_CGROUP_ROOT", root, 1);
	return 0;
}

static const char *const v1_ctls[] = { "cpu", "cpuacct", "memory", "pids", "cpuset" };

static int fake_v1(void **state)
{
	size_t i;

	root = xstrdup(tmpl);
	assert_non_null(mkdtemp(root));
	for (i = 0; i < ARRAY_SIZE(v1_ctls); i++) {
		struct buf p = BUF_INIT;

		buf_addf(&p, "%s/%s", root, v1_ctls[i]);
		assert_int_equal(mkdir(p.buf, 0755), 0);
		put(p.buf, "cgroup.procs", "");
		if (!strcmp(v1_ctls[i], "memory"))
			put(p.buf, "memory.memsw.limit_in_bytes", "9223372036854771712\n");
		if (!strcmp(v1_ctls[i], "cpuset"))
			put(p.buf, "cpuset.mems", "0\n");
		buf_release(&p);
	}
	setenv("COLDSTART_CGROUP_ROOT", root, 1);
	return 0;
}

static int fake_done(void **state)
{
	rm_rf(root);
	free(root);
	root = NULL;
	unsetenv("COLDSTART_CGROUP_ROOT");
	return 0;
}

static void test_v2_limits_written(void **state)
{
	struct limits lim = { 0 };
	struct buf err = BUF_INIT;
	struct cgroup *cg;
	const char *const *joins;
	char *dir, *name;

	assert_int_equal(limits_set_cpus(&lim, "0.1", &err), 0);
	assert_int_equal(limits_set_memory(&lim, "64m", &err), 0);
	assert_int_equal(limits_set_pids(&lim, "32", &err), 0);
	assert_string_equal(cgroup_backend_name(), "cgroup-v2");
	cg = cgroup_create(&lim, &err);
	if (!cg)
		fail_msg("cgroup_create: %s", err.buf);
	assert_string_equal(lim.backend, "cgroup-v2");
	joins = cgroup_join_files(cg);
	assert_non_null(joins[0]);
	assert_null(joins[1]);
	dir = run_dir(joins[0]);
	/* Named so it can be traced to this process: coldstart-<pid>-<n>. */
	name = strrchr(dir, '/') + 1;
	{
		struct buf want = BUF_INIT;

		buf_addf(&want, "coldstart-%ld-", (long)getpid());
		assert_true(starts_with(name, want.buf));
		buf_release(&want);
	}
	assert_file(dir, "cpu.max", "10000 100000");
	assert_file(dir, "memory.max", "67108864");
	assert_file(dir, "memory.swap.max", "0");
	assert_file(dir, "pids.max", "32");
	{
		char *sc = get(root, "cgroup.subtree_control");

		assert_non_null(strstr(sc, "cpu"));
		assert_non_null(strstr(sc, "memory"));
		assert_non_null(strstr(sc, "pids"));
		free(sc);
	}
	assert_null(cgroup_note(cg));
	assert_int_equal(cgroup_nr_procs(cg), 0);
	cgroup_destroy(cg);
	assert_false(exists(dir));
	free(dir);
	limits_release(&lim);
	buf_release(&err);
}

static void test_v2_figures(void **state)
{
	struct limits lim = { 0 };
	struct buf err = BUF_INIT;
	struct cg_figures fig;
	struct cgroup *cg;
	char *dir;

	assert_int_equal(limits_set_preset(&lim, "fn", &err), 0);
	cg = cgroup_create(&lim, &err);
	if (!cg)
		fail_msg("cgroup_create: %s", err.buf);
	dir = run_dir(cgroup_join_files(cg)[0]);
	put(dir, "cpu.stat",
	    "usage_usec 2500123\nuser_usec 2000000\nsystem_usec 500123\n"
	    "nr_periods 311\nnr_throttled 290\nthrottled_usec 25123456\n"
	    "nr_bursts 0\nburst_usec 0\n");
	put(dir, "memory.peak", "134213632\n");
	put(dir, "memory.events", "low 0\nhigh 0\nmax 57\noom 1\noom_kill 1\noom_group_kill 0\n");
	assert_int_equal(cgroup_read_figures(cg, &fig), 0);
	assert_true(fig.has);
	assert_int_equal(fig.cpu_usage_us, 2500123);
	assert_int_equal(fig.nr_periods, 311);
	assert_int_equal(fig.nr_throttled, 290);
	assert_int_equal(fig.throttled_us, 25123456);
	assert_int_equal(fig.memory_peak, 134213632);
	assert_int_equal(fig.oom_kills, 1);
	/* A listed process counts, and a fake tree never signals it. */
	put(dir, "cgroup.procs", "1\n");
	assert_int_equal(cgroup_nr_procs(cg), 1);
	put(dir, "cgroup.procs", "");
	cgroup_destroy(cg);
	assert_false(exists(dir));
	free(dir);
	limits_release(&lim);
	buf_release(&err);
}

static void test_v2_figures_missing(void **state)
{
	struct limits lim = { 0 };
	struct buf err = BUF_INIT;
	struct cg_figures fig;
	struct cgroup *cg;
	char *dir;

	assert_int_equal(limits_set_memory(&lim, "128m", &err), 0);
	cg = cgroup_create(&lim, &err);
	assert_non_null(cg);
	dir = run_dir(cgroup_join_files(cg)[0]);
	/* Before Linux 5.19 there is no memory.peak; a garbled cpu.stat. */
	put(dir, "cpu.stat", "usage_usec banana\nnr_periods 4\n");
	put(dir, "memory.events", "oom 0\noom_kill 0\n");
	assert_int_equal(cgroup_read_figures(cg, &fig), 0);
	assert_int_equal(fig.cpu_usage_us, UNKNOWN);
	assert_int_equal(fig.nr_periods, 4);
	assert_int_equal(fig.nr_throttled, UNKNOWN);
	assert_int_equal(fig.memory_peak, UNKNOWN);
	assert_int_equal(fig.oom_kills, 0);
	cgroup_destroy(cg);
	assert_false(exists(dir));
	free(dir);
	limits_release(&lim);
	buf_release(&err);
}

static void test_v2_swap_and_cpuset(void **state)
{
	struct limits lim = { 0 };
	struct buf err = BUF_INIT;
	struct cgroup *cg;
	char *dir;

	assert_int_equal(limits_set_memory(&lim, "1g", &err), 0);
	assert_int_equal(limits_set_swap(&lim, "unlimited", &err), 0);
	assert_int_equal(limits_set_cpuset(&lim, "0-1,3", &err), 0);
	cg = cgroup_create(&lim, &err);
	if (!cg)
		fail_msg("cgroup_create: %s", err.buf);
	dir = run_dir(cgroup_join_files(cg)[0]);
	assert_file(dir, "memory.max", "1073741824");
	assert_file(dir, "memory.swap.max", "max");
	assert_file(dir, "cpuset.cpus", "0-1,3");
	/* No --cpus: cpu.max is left alone. */
	{
		struct buf p = BUF_INIT;

		buf_addf(&p, "%s/cpu.max", dir);
		assert_false(exists(p.buf));
		buf_release(&p);
	}
	cgroup_destroy(cg);
	assert_int_equal(limits_set_swap(&lim, "32m", &err), 0);
	cg = cgroup_create(&lim, &err);
	assert_non_null(cg);
	free(dir);
	dir = run_dir(cgroup_join_files(cg)[0]);
	assert_file(dir, "memory.swap.max", "33554432");
	cgroup_destroy(cg);
	assert_false(exists(dir));
	free(dir);
	limits_release(&lim);
	buf_release(&err);
}

static void test_v2_missing_controller(void **state)
{
	struct limits lim = { 0 };
	struct buf err = BUF_INIT;
	struct cgroup *cg;

	/* Like this machine's cgroup2 mount: no cpu or memory controller. */
	put(root, "cgroup.controllers", "pids\n");
	assert_int_equal(limits_set_cpus(&lim, "0.5", &err), 0);
	cg = cgroup_create(&lim, &err);
	assert_null(cg);
	assert_non_null(strstr(err.buf, "'cpu', 'memory' controllers"));
	assert_non_null(strstr(err.buf, "offers: pids"));
	assert_non_null(strstr(err.buf, "--no-limits"));
	assert_non_null(strstr(err.buf, "root"));
	assert_null(lim.backend);
	assert_null(cgroup_backend_name());
	limits_release(&lim);
	buf_release(&err);
}

static void test_v2_unwritable_subtree(void **state)
{
	struct limits lim = { 0 };
	struct buf err = BUF_INIT;
	struct buf p = BUF_INIT;
	struct cgroup *cg;

	/* subtree_control that cannot be written: a directory in its place. */
	buf_addf(&p, "%s/cgroup.subtree_control", root);
	unlink(p.buf);
	assert_int_equal(mkdir(p.buf, 0755), 0);
	assert_int_equal(limits_set_memory(&lim, "64m", &err), 0);
	cg = cgroup_create(&lim, &err);
	assert_null(cg);
	assert_non_null(strstr(err.buf, "cgroup.subtree_control"));
	assert_non_null(strstr(err.buf, "delegate a cgroup v2 subtree"));
	rmdir(p.buf);
	buf_release(&p);
	limits_release(&lim);
	buf_release(&err);
}

static void test_swap_needs_memory(void **state)
{
	struct limits lim = { 0 };
	struct buf err = BUF_INIT;

	assert_int_equal(limits_set_swap(&lim, "64m", &err), 0);
	assert_true(limits_any(&lim));
	assert_int_equal(limits_check(&lim, &err), -1);
	assert_string_equal(err.buf, "--swap needs --memory: swap is only limited beyond a memory limit");
	buf_reset(&err);
	assert_null(cgroup_create(&lim, &err));
	assert_non_null(strstr(err.buf, "--swap needs --memory"));
	assert_int_equal(limits_set_memory(&lim, "64m", &err), 0);
	assert_int_equal(limits_check(&lim, &err), 0);
	limits_release(&lim);
	buf_release(&err);
}

static void test_v1_limits_written(void **state)
{
	struct limits lim = { 0 };
	struct buf err = BUF_INIT;
	struct buf want = BUF_INIT;
	struct cgroup *cg;
	const char *const *joins;
	char *dirs[8] = { NULL };
	size_t n, i;

	assert_int_equal(limits_set_cpus(&lim, "0.1", &err), 0);
	assert_int_equal(limits_set_memory(&lim, "64m", &err), 0);
	assert_int_equal(limits_set_pids(&lim, "16", &err), 0);
	assert_int_equal(limits_set_cpuset(&lim, "0", &err), 0);
	assert_string_equal(cgroup_backend_name(), "cgroup-v1");
	cg = cgroup_create(&lim, &err);
	if (!cg)
		fail_msg("cgroup_create: %s", err.buf);
	assert_string_equal(lim.backend, "cgroup-v1");
	joins = cgroup_join_files(cg);
	for (n = 0; joins[n]; n++)
		dirs[n] = run_dir(joins[n]);
	/* cpu, cpuacct, memory, pids, cpuset: one directory each. */
	assert_int_equal(n, 5);
	for (i = 0; i < n; i++) {
		buf_reset(&want);
		buf_addf(&want, "%s/%s/coldstart-%ld-", root, v1_ctls[i], (long)getpid());
		assert_true(starts_with(dirs[i], want.buf));
	}
	assert_file(dirs[0], "cpu.cfs_period_us", "100000");
	assert_file(dirs[0], "cpu.cfs_quota_us", "10000");
	assert_file(dirs[2], "memory.limit_in_bytes", "67108864");
	/* No swap beyond memory: memory+swap equals memory. */
	assert_file(dirs[2], "memory.memsw.limit_in_bytes", "67108864");
	assert_file(dirs[3], "pids.max", "16");
	assert_file(dirs[4], "cpuset.cpus", "0");
	assert_file(dirs[4], "cpuset.mems", "0");
	assert_null(cgroup_note(cg));
	cgroup_destroy(cg);
	for (i = 0; i < n; i++) {
		assert_false(exists(dirs[i]));
		free(dirs[i]);
	}
	limits_release(&lim);
	buf_release(&err);
	buf_release(&want);
}

static void test_v1_figures(void **state)
{
	struct limits lim = { 0 };
	struct buf err = BUF_INIT;
	struct cg_figures fig;
	struct cgroup *cg;
	const char *const *joins;
	char *cpu, *acct, *mem;

	assert_int_equal(limits_set_preset(&lim, "lambda:512", &err), 0);
	cg = cgroup_create(&lim, &err);
	if (!cg)
		fail_msg("cgroup_create: %s", err.buf);
	joins = cgroup_join_files(cg);
	/* No --pids or --cpuset: only cpu, cpuacct and memory. */
	assert_non_null(joins[2]);
	assert_null(joins[3]);
	cpu = run_dir(joins[0]);
	acct = run_dir(joins[1]);
	mem = run_dir(joins[2]);
	/* 512/1769 of a CPU is a quota of 28943 us per 100 ms. */
	assert_file(cpu, "cpu.cfs_quota_us", "28943");
	assert_file(mem, "memory.limit_in_bytes", "536870912");
	put(acct, "cpuacct.usage", "1234567890\n");
	put(cpu, "cpu.stat",
	    "nr_periods 120\nnr_throttled 100\nthrottled_time 9876543210\n"
	    "nr_bursts 0\nburst_time 0\n");
	put(mem, "memory.max_usage_in_bytes", "67104768\n");
	put(mem, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
	assert_int_equal(cgroup_read_figures(cg, &fig), 0);
	assert_int_equal(fig.cpu_usage_us, 1234567);
	assert_int_equal(fig.nr_periods, 120);
	assert_int_equal(fig.nr_throttled, 100);
	assert_int_equal(fig.throttled_us, 9876543);
	assert_int_equal(fig.memory_peak, 67104768);
	assert_int_equal(fig.oom_kills, 2);
	cgroup_destroy(cg);
	assert_false(exists(cpu));
	assert_false(exists(acct));
	assert_false(exists(mem));
	free(cpu);
	free(acct);
	free(mem);
	limits_release(&lim);
	buf_release(&err);
}

static void test_v1_comounted(void **state)
{
	struct limits lim = { 0 };
	struct buf err = BUF_INIT, p = BUF_INIT, t = BUF_INIT;
	struct cg_figures fig;
	struct cgroup *cg;
	const char *const *joins;
	char *cpu, *mem;

	/* cpu,cpuacct mounted together: the two names are one directory. */
	buf_addf(&p, "%s/cpuacct", root);
	rm_rf(p.buf);
	assert_int_equal(symlink("cpu", p.buf), 0);
	assert_int_equal(limits_set_cpus(&lim, "0.25", &err), 0);
	cg = cgroup_create(&lim, &err);
	if (!cg)
		fail_msg("cgroup_create: %s", err.buf);
	joins = cgroup_join_files(cg);
	/* One join file per directory: cpu(+cpuacct) and memory. */
	assert_non_null(joins[0]);
	assert_non_null(joins[1]);
	assert_null(joins[2]);
	cpu = run_dir(joins[0]);
	mem = run_dir(joins[1]);
	buf_addf(&t, "%s/cpu/", root);
	assert_true(starts_with(cpu, t.buf));
	assert_file(cpu, "cpu.cfs_quota_us", "25000");
	put(cpu, "cpuacct.usage", "5000000\n");
	assert_int_equal(cgroup_read_figures(cg, &fig), 0);
	assert_int_equal(fig.cpu_usage_us, 5000);
	assert_int_equal(fig.memory_peak, UNKNOWN);
	cgroup_destroy(cg);
	assert_false(exists(cpu));
	assert_false(exists(mem));
	free(cpu);
	free(mem);
	limits_release(&lim);
	buf_release(&err);
	buf_release(&p);
	buf_release(&t);
}

static void test_v1_no_memsw(void **state)
{
	struct limits lim = { 0 };
	struct buf err = BUF_INIT, p = BUF_INIT;
	struct cgroup *cg;
	const char *note;

	/* Swap accounting off: no memsw file.  Said, not fatal. */
	buf_addf(&p, "%s/memory/memory.memsw.limit_in_bytes", root);
	assert_int_equal(unlink(p.buf), 0);
	assert_int_equal(limits_set_memory(&lim, "64m", &err), 0);
	cg = cgroup_create(&lim, &err);
	if (!cg)
		fail_msg("cgroup_create: %s", err.buf);
	note = cgroup_note(cg);
	assert_non_null(note);
	assert_non_null(strstr(note, "no swap limit could be set"));
	assert_non_null(strstr(note, "memory.memsw.limit_in_bytes"));
	assert_non_null(strstr(note, "swap"));
	cgroup_destroy(cg);
	limits_release(&lim);
	buf_release(&err);
	buf_release(&p);
}

static void test_v1_missing_hierarchy(void **state)
{
	struct limits lim = { 0 };
	struct buf err = BUF_INIT, p = BUF_INIT;
	DIR *d;
	struct dirent *de;
	size_t left = 0;

	buf_addf(&p, "%s/pids", root);
	rm_rf(p.buf);
	assert_int_equal(limits_set_pids(&lim, "10", &err), 0);
	assert_null(cgroup_create(&lim, &err));
	assert_non_null(strstr(err.buf, "'pids' controller is not mounted"));
	assert_non_null(strstr(err.buf, "--no-limits"));
	/* Nothing half-made is left in the other hierarchies. */
	buf_reset(&p);
	buf_addf(&p, "%s/cpu", root);
	d = opendir(p.buf);
	assert_non_null(d);
	while ((de = readdir(d)))
		left += starts_with(de->d_name, "coldstart-");
	closedir(d);
	assert_int_equal(left, 0);
	limits_release(&lim);
	buf_release(&err);
	buf_release(&p);
}

static void test_cleanup_stale(void **state)
{
	struct buf dead = BUF_INIT, mine = BUF_INIT, init = BUF_INIT, other = BUF_INIT;
	pid_t pid;
	int status;

	/* A pid that surely is not running: a child already reaped. */
	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	buf_addf(&dead, "%s/coldstart-%ld-3", root, (long)pid);
	buf_addf(&mine, "%s/coldstart-%ld-0", root, (long)getpid());
	/* pid 1 lives and started long before this directory. */
	buf_addf(&init, "%s/coldstart-1-0", root);
	buf_addf(&other, "%s/coldstart-web", root);
	assert_int_equal(mkdir(dead.buf, 0755), 0);
	put(dead.buf, "memory.max", "1\n");
	assert_int_equal(mkdir(mine.buf, 0755), 0);
	assert_int_equal(mkdir(init.buf, 0755), 0);
	assert_int_equal(mkdir(other.buf, 0755), 0);
	cgroup_cleanup_stale();
	assert_false(exists(dead.buf));
	assert_true(exists(mine.buf));
	assert_true(exists(init.buf));
	assert_true(exists(other.buf));
	buf_release(&dead);
	buf_release(&mine);
	buf_release(&init);
	buf_release(&other);
}

static void test_cleanup_stale_v1(void **state)
{
	struct buf a = BUF_INIT, b = BUF_INIT;
	pid_t pid;
	int status;

	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	buf_addf(&a, "%s/memory/coldstart-%ld-0", root, (long)pid);
	buf_addf(&b, "%s/cpu/coldstart-%ld-0", root, (long)pid);
	assert_int_equal(mkdir(a.buf, 0755), 0);
	assert_int_equal(mkdir(b.buf, 0755), 0);
	cgroup_cleanup_stale();
	assert_false(exists(a.buf));
	assert_false(exists(b.buf));
	buf_release(&a);
	buf_release(&b);
}

/* A run without limits still gets a cgroup: on v2 no controller is enabled, nothing is limited. */
static void test_unlimited_v2(void **state)
{
	struct buf err = BUF_INIT, limit = BUF_INIT;
	struct cgroup *cg = cgroup_create_unlimited(&err);
	const char *const *joins;
	char *dir;

	assert_non_null(cg);
	joins = cgroup_join_files(cg);
	assert_non_null(joins[0]);
	assert_null(joins[1]);
	dir = run_dir(joins[0]);
	assert_true(exists(dir));
	assert_file(root, "cgroup.subtree_control", "");
	buf_addf(&limit, "%s/memory.max", dir);
	assert_false(exists(limit.buf));
	assert_null(cgroup_note(cg));
	cgroup_destroy(cg);
	assert_false(exists(dir));
	free(dir);
	buf_release(&err);
	buf_release(&limit);
}

/* On v1 one hierarchy holds the run: pids first. */
static void test_unlimited_v1(void **state)
{
	struct buf err = BUF_INIT, want = BUF_INIT;
	struct cgroup *cg = cgroup_create_unlimited(&err);
	const char *const *joins;

	assert_non_null(cg);
	joins = cgroup_join_files(cg);
	buf_addf(&want, "%s/pids/", root);
	assert_true(starts_with(joins[0], want.buf));
	assert_null(joins[1]);
	cgroup_destroy(cg);
	buf_release(&err);
	buf_release(&want);
}

/* A live owner's cgroup is kept by its lock, whatever the pid in its name says. */
static void test_cleanup_stale_keeps_locked(void **state)
{
	struct buf dir = BUF_INIT, err = BUF_INIT;
	struct cgroup *mine;
	pid_t pid;
	int status, lock;

	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	buf_addf(&dir, "%s/coldstart-%ld-7", root, (long)pid);
	assert_int_equal(mkdir(dir.buf, 0755), 0);
	lock = leftover_lock(dir.buf);
	assert_true(lock >= 0);
	mine = cgroup_create_unlimited(&err);
	assert_non_null(mine);
	cgroup_cleanup_stale();
	assert_true(exists(dir.buf));
	close(lock);
	cgroup_cleanup_stale();
	assert_false(exists(dir.buf));
	/* Ours (named after our live pid, and locked) stayed through both. */
	assert_true(cgroup_nr_procs(mine) >= 0);
	cgroup_destroy(mine);
	buf_release(&dir);
	buf_release(&err);
}

static void test_no_cgroupfs(void **state)
{
	struct limits lim = { 0 };
	struct buf err = BUF_INIT;
	char *empty = xstrdup(tmpl);

	assert_non_null(mkdtemp(empty));
	setenv("COLDSTART_CGROUP_ROOT", empty, 1);
	assert_int_equal(limits_set_cpus(&lim, "1", &err), 0);
	assert_null(cgroup_create(&lim, &err));
	assert_non_null(strstr(err.buf, "cannot apply resource limits"));
	assert_non_null(strstr(err.buf, "holds neither a cgroup2 tree"));
	assert_non_null(strstr(err.buf, "--no-limits"));
	assert_null(cgroup_backend_name());
	assert_null(cgroup_create_unlimited(&err));
	unsetenv("COLDSTART_CGROUP_ROOT");
	rmdir(empty);
	free(empty);
	limits_release(&lim);
	buf_release(&err);
}

static void test_destroy_null(void **state)
{
	struct cg_figures fig;

	cgroup_destroy(NULL);
	assert_int_equal(cgroup_kill_all(NULL), 0);
	assert_int_equal(cgroup_read_figures(NULL, &fig), -1);
	assert_null(cgroup_note(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_v2_limits_written, fake_v2, fake_done),
		cmocka_unit_test_setup_teardown(test_v2_figures, fake_v2, fake_done),
		cmocka_unit_test_setup_teardown(test_v2_figures_missing, fake_v2, fake_done),
		cmocka_unit_test_setup_teardown(test_v2_swap_and_cpuset, fake_v2, fake_done),
		cmocka_unit_test_setup_teardown(test_v2_missing_controller, fake_v2, fake_done),
		cmocka_unit_test_setup_teardown(test_v2_unwritable_subtree, fake_v2, fake_done),
		cmocka_unit_test_setup_teardown(test_swap_needs_memory, fake_v2, fake_done),
		cmocka_unit_test_setup_teardown(test_v1_limits_written, fake_v1, fake_done),
		cmocka_unit_test_setup_teardown(test_v1_figures, fake_v1, fake_done),
		cmocka_unit_test_setup_teardown(test_v1_comounted, fake_v1, fake_done),
		cmocka_unit_test_setup_teardown(test_v1_no_memsw, fake_v1, fake_done),
		cmocka_unit_test_setup_teardown(test_v1_missing_hierarchy, fake_v1, fake_done),
		cmocka_unit_test_setup_teardown(test_cleanup_stale, fake_v2, fake_done),
		cmocka_unit_test_setup_teardown(test_cleanup_stale_v1, fake_v1, fake_done),
		cmocka_unit_test_setup_teardown(test_unlimited_v2, fake_v2, fake_done),
		cmocka_unit_test_setup_teardown(test_unlimited_v1, fake_v1, fake_done),
		cmocka_unit_test_setup_teardown(test_cleanup_stale_keeps_locked, fake_v2, fake_done),
		cmocka_unit_test(test_no_cgroupfs),
		cmocka_unit_test(test_destroy_null),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
