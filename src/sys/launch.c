/*
 * Starting and reaping the profiled process: fork/exec with an exec-error
 * pipe, optional stderr/stdout pipes, joining cgroups before exec, and
 * killing whole process trees found through /proc.
 */
#include "sys/launch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* STAGE_EXEC_AT is not a failure: it carries the moment exec was called. */
enum exec_stage { STAGE_EXEC_AT = 0, STAGE_JOIN, STAGE_DIR, STAGE_EXEC, STAGE_IO };

struct exec_report {
	int stage;
	int err;
	int64_t t_ns; /* STAGE_EXEC_AT: CLOCK_MONOTONIC just before execve */
};

/* Writes v in decimal, right-aligned and zero-padded, into the n bytes at out (async-signal-safe). */
static void put_digits(char *out, size_t n, uint64_t v)
{
	while (n--) {
		out[n] = (char)('0' + v % 10);
		v /= 10;
	}
}

/* Fills the COLDSTART_EXEC placeholder of env, if any, with our pid and t_ns (see launch.h). */
static void mark_exec(struct strvec *env, int64_t t_ns)
{
	static const char key[] = LAUNCH_EXEC_ENV "=";
	size_t i;

	for (i = 0; i < env->nr; i++) {
		char *e = (char *)env->v[i];

		if (!strncmp(e, key, sizeof(key) - 1) && strlen(e) == sizeof(LAUNCH_EXEC_PLACEHOLDER) - 1) {
			put_digits(e + sizeof(key) - 1, 20, (uint64_t)getpid());
			put_digits(e + sizeof(key) - 1 + 21, 20, (uint64_t)t_ns);
		}
	}
}

static int64_t mono_now(void)
{
	struct timespec ts;

	/* clock_gettime is async-signal-safe; now_ns() is not promised to be. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void send_report_at(int fd, int stage, int err, int64_t t_ns)
{
	struct exec_report rep = { .stage = stage, .err = err, .t_ns = t_ns };
	ssize_t w;

	do
		w = write(fd, &rep, sizeof(rep));
	while (w < 0 && errno == EINTR);
}

static void send_report(int fd, int stage, int err)
{
	send_report_at(fd, stage, err, mono_now());
}

/* Only async-signal-safe calls between fork and exec. */
static _Noreturn void child_fail(int fd, int stage)
{
	send_report(fd, stage, errno);
	_exit(127);
}

static int write_all_fd(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

static void child_exec(struct child *c, int report_fd, int err_w, int out_w)
{
	const char *const *f;
	sigset_t none;
	int sig;

	for (sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* If coldstart is killed outright, the target must not run on alone. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);

	for (f = c->join_files; f && *f; f++) {
		int fd = open(*f, O_WRONLY | O_CLOEXEC);

		if (fd < 0 || write_all_fd(fd, "0\n", 2) < 0)
			child_fail(report_fd, STAGE_JOIN);
		close(fd);
	}
	if (c->null_stdin) {
		int fd = open("/dev/null", O_RDONLY);

		if (fd < 0 || dup2(fd, 0) < 0)
			child_fail(report_fd, STAGE_IO);
		close(fd);
	}
	if (c->stdout_fd >= 0 && dup2(c->stdout_fd, 1) < 0)
		child_fail(report_fd, STAGE_IO);
	if (err_w >= 0 && dup2(err_w, 2) < 0)
		child_fail(report_fd, STAGE_IO);
	if (out_w >= 0 && dup2(out_w, 1) < 0)
		child_fail(report_fd, STAGE_IO);
	if (c->dir && chdir(c->dir) < 0)
		child_fail(report_fd, STAGE_DIR);
	{
		int64_t t = mono_now();

		mark_exec(&c->env, t);
		send_report_at(report_fd, STAGE_EXEC_AT, 0, t);
	}
	if (c->env.nr)
		execvpe(c->args.v[0], (char *const *)c->args.v, (char *const *)c->env.v);
	else
		execvp(c->args.v[0], (char *const *)c->args.v);
	child_fail(report_fd, STAGE_EXEC);
}

static int64_t tv_us(const struct timeval *tv)
{
	return (int64_t)tv->tv_sec * 1000000 + tv->tv_usec;
}

static void fill_exit(struct child *c, int status, const struct rusage *ru, struct child_exit *ex)
{
	memset(ex, 0, sizeof(*ex));
	if (WIFSIGNALED(status)) {
		ex->signaled = true;
		ex->term_signal = WTERMSIG(status);
	} else {
		ex->exit_code = WEXITSTATUS(status);
	}
	ex->wall_us = (now_ns() - c->exec_ns) / 1000;
	ex->user_us = tv_us(&ru->ru_utime);
	ex->sys_us = tv_us(&ru->ru_stime);
	ex->maxrss_kb = ru->ru_maxrss;
}

void child_init(struct child *c)
{
	memset(c, 0, sizeof(*c));
	strvec_init(&c->args);
	strvec_init(&c->env);
	c->pid = -1;
	c->pidfd = -1;
	c->err_fd = -1;
	c->out_fd = -1;
	c->stdout_fd = -1;
}

/*
 * A descriptor that becomes readable when pid exits (Linux 5.3); -1 where the
 * kernel has none, or with COLDSTART_NO_PIDFD set (callers then rely on
 * SIGCHLD, which is how that path is tested).
 */
static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
	const char *no = getenv("COLDSTART_NO_PIDFD");
	int fd;

	if (no && *no)
		return -1;
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd >= 0)
		fcntl(fd, F_SETFD, FD_CLOEXEC);
	return fd;
#else
	return -1;
#endif
}

/* Closes whichever ends of the three pipes are still open, errno kept for the caller's message. */
static void close_pipes(int report[2], int errp[2], int outp[2])
{
	int saved = errno;
	int fds[] = { report[0], report[1], errp[0], errp[1], outp[0], outp[1] };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	errno = saved;
}

int child_start(struct child *c, struct buf *err)
{
	int report[2] = { -1, -1 }, errp[2] = { -1, -1 }, outp[2] = { -1, -1 };
	struct exec_report rep;
	ssize_t n;
	int ret = -1;

	if (!c->args.nr) {
		buf_addf(err, "no command to run");
		errno = EINVAL;
		return -1;
	}
	if (pipe2(report, O_CLOEXEC) < 0 || (c->capture_stderr && pipe2(errp, O_CLOEXEC) < 0) ||
	    (c->capture_stdout && pipe2(outp, O_CLOEXEC) < 0)) {
		buf_addf(err, "cannot create a pipe: %s", strerror(errno));
		goto out;
	}
	fflush(NULL);
	c->start_ns = now_ns();
	c->pid = fork();
	if (c->pid < 0) {
		buf_addf(err, "cannot fork: %s", strerror(errno));
		goto out;
	}
	if (!c->pid) {
		close(report[0]);
		child_exec(c, report[1], errp[1], outp[1]);
	}
	close(report[1]);
	report[1] = -1;
	/* The moment of exec, then end of file (the pipe closes on exec) or a failure. */
	c->exec_ns = 0;
	for (;;) {
		n = read(report[0], &rep, sizeof(rep));
		if (n < 0 && errno == EINTR)
			continue;
		if (n == (ssize_t)sizeof(rep) && rep.stage == STAGE_EXEC_AT) {
			c->exec_ns = rep.t_ns;
			continue;
		}
		break;
	}
	if (!c->exec_ns)
		c->exec_ns = now_ns();
	if (n == (ssize_t)sizeof(rep)) {
		static const char *const what[] = {
			[STAGE_JOIN] = "cannot join the run's cgroup before running",
			[STAGE_DIR] = "cannot change directory to run",
			[STAGE_EXEC] = "cannot run",
			[STAGE_IO] = "cannot set up standard streams for",
		};
		int status;

		while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
			;
		c->pid = -1;
		buf_addf(err, "%s '%s': %s", rep.stage > 0 && rep.stage <= STAGE_IO ? what[rep.stage] : "cannot run",
			 c->args.v[0], strerror(rep.err));
		errno = rep.err;
		goto out;
	}
	if (errp[0] >= 0) {
		c->err_fd = errp[0];
		errp[0] = -1;
	}
	if (outp[0] >= 0) {
		c->out_fd = outp[0];
		outp[0] = -1;
	}
	c->pidfd = open_pidfd(c->pid);
	ret = 0;
out:
	close_pipes(report, errp, outp);
	return ret;
}

int child_poll(struct child *c, struct child_exit *ex)
{
	struct rusage ru;
	int status;
	pid_t p;

	if (c->pid < 0)
		return -1;
	do
		p = wait4(c->pid, &status, WNOHANG, &ru);
	while (p < 0 && errno == EINTR);
	if (p < 0)
		return -1;
	if (!p)
		return 0;
	fill_exit(c, status, &ru, ex);
	c->pid = -1;
	return 1;
}

int child_finish(struct child *c, struct child_exit *ex)
{
	struct rusage ru;
	int status;
	pid_t p;

	if (c->pid < 0)
		return -1;
	do
		p = wait4(c->pid, &status, 0, &ru);
	while (p < 0 && errno == EINTR);
	if (p < 0)
		return -1;
	fill_exit(c, status, &ru, ex);
	c->pid = -1;
	return 0;
}

void child_release(struct child *c)
{
	strvec_clear(&c->args);
	strvec_clear(&c->env);
	if (c->err_fd >= 0)
		close(c->err_fd);
	if (c->out_fd >= 0)
		close(c->out_fd);
	if (c->pidfd >= 0)
		close(c->pidfd);
	c->err_fd = c->out_fd = c->pidfd = -1;
}

struct pp {
	pid_t pid, ppid;
};

static size_t read_procs(struct pp **out)
{
	struct pp *v = NULL;
	size_t nr = 0, alloc = 0;
	DIR *d = opendir("/proc");
	struct dirent *de;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char path[64], line[512], *rp;
		pid_t pid = (pid_t)atoi(de->d_name);
		FILE *f;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f) && (rp = strrchr(line, ')')) && rp[1] && rp[2]) {
			int ppid = 0;

			/* "pid (comm) S ppid ..." where comm may hold spaces and ')'. */
			if (sscanf(rp + 2, "%*c %d", &ppid) == 1) {
				ALLOC_GROW(v, nr + 1, alloc);
				v[nr].pid = pid;
				v[nr].ppid = ppid;
				nr++;
			}
		}
		fclose(f);
	}
	closedir(d);
	*out = v;
	return nr;
}

size_t launch_descendants(pid_t root, pid_t **out)
{
	struct pp *all = NULL;
	pid_t *tree = NULL;
	size_t nr_all, nr = 0, alloc = 0, i, scan;

	nr_all = read_procs(&all);
	ALLOC_GROW(tree, 1, alloc);
	tree[nr++] = root;
	for (scan = 0; scan < nr; scan++)
		for (i = 0; i < nr_all; i++)
			if (all[i].ppid == tree[scan] && all[i].pid != tree[scan]) {
				ALLOC_GROW(tree, nr + 1, alloc);
				tree[nr++] = all[i].pid;
			}
	free(all);
	*out = tree;
	return nr;
}

bool launch_holds(pid_t pid, bool (*match)(const char *target, const void *arg), const void *arg)
{
	char dir[64], link[384], target[4096];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%ld/fd", (long)pid);
	d = opendir(dir);
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, de->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		found = match(target, arg);
	}
	closedir(d);
	return found;
}

int kill_tree(pid_t pid, int sig, bool include_root)
{
	pid_t *tree = NULL;
	size_t nr, i;
	int count = 0;

	if (pid <= 0)
		return 0;
	/* Freeze the root first so it cannot fork while we walk. */
	if (sig == SIGKILL && include_root)
		kill(pid, SIGSTOP);
	nr = launch_descendants(pid, &tree);
	for (i = nr; i > (include_root ? 0 : 1); i--)
		if (!kill(tree[i - 1], sig)) {
			count++;
			if (sig != SIGKILL && sig != SIGSTOP && sig != SIGCONT)
				kill(tree[i - 1], SIGCONT);
		}
	free(tree);
	return count;
}

int launch_open_std_fds(void)
{
	int fd;

	for (fd = 0; fd <= 2; fd++) {
		int got;

		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* The lowest free descriptor: fd itself. */
		got = open("/dev/null", O_RDWR);
		if (got < 0)
			return -1;
		if (got != fd) {
			dup2(got, fd);
			close(got);
		}
	}
	return 0;
}

void launch_become_subreaper(void)
{
	prctl(PR_SET_CHILD_SUBREAPER, 1);
}

void launch_reap_orphans(void)
{
	int status;

	while (waitpid(-1, &status, WNOHANG) > 0)
		;
}
