/*
 * The owner-alive rule for what runs leave behind (see leftover.h), and the
 * private temporary directories of a run that follow it.
 */
#include "sys/leftover.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* The kinds of private directory that are removed once their owner is gone. */
static const char *const stale_kinds[] = { "trace", "fn", "plan" };

static const char *tmp_base(void)
{
	const char *tmp = getenv("TMPDIR");

	return tmp && *tmp == '/' ? tmp : "/tmp";
}

/* Realtime start of a process in seconds, -1 when unknown. */
static double proc_start_time(pid_t pid)
{
	char path[64], text[1024];
	const char *p;
	double ret = -1;
	ssize_t n;
	int fd, field;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	text[n] = '\0';
	/* After "pid (comm)", field 3 is the state; starttime is field 22. */
	p = strrchr(text, ')');
	for (field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return -1;
	f = fopen("/proc/stat", "re");
	if (f) {
		char line[256];
		long hz = sysconf(_SC_CLK_TCK);

		while (fgets(line, sizeof(line), f))
			if (starts_with(line, "btime ") && hz > 0)
				ret = (double)strtoll(line + 6, NULL, 10) +
				      (double)strtoull(p + 1, NULL, 10) / (double)hz;
		fclose(f);
	}
	return ret;
}

/*
 * The rule of coldstarts that take no lock: the pid lives and its process
 * started no later than the directory was made (a later start means the pid
 * was reused after the owner was SIGKILLed).
 */
static bool pid_alive(pid_t pid, const struct stat *st)
{
	double start;

	if (pid == getpid())
		return true;
	if (kill(pid, 0) && errno == ESRCH)
		return false;
	start = proc_start_time(pid);
	if (start < 0)
		return true;
	/* btime has a one-second grain, so allow two. */
	return start <= (double)st->st_ctim.tv_sec + 2.0;
}

int leftover_lock(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);

	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

bool leftover_is_stale(const char *dir, pid_t owner, int *lock_fd)
{
	struct stat st;
	int fd = leftover_lock(dir);

	*lock_fd = -1;
	if (fd < 0)
		return false;
	if (fstat(fd, &st) || pid_alive(owner, &st)) {
		close(fd);
		return false;
	}
	*lock_fd = fd;
	return true;
}

pid_t leftover_owner(const char *name, const char *prefix, bool digits_rest)
{
	const char *p;
	char *end;
	long pid;

	if (!starts_with(name, prefix))
		return 0;
	p = name + strlen(prefix);
	if (!isdigit((unsigned char)*p))
		return 0;
	errno = 0;
	pid = strtol(p, &end, 10);
	if (errno || *end != '-' || pid <= 0 || !end[1])
		return 0;
	for (p = end + 1; digits_rest && *p; p++)
		if (!isdigit((unsigned char)*p))
			return 0;
	return (pid_t)pid;
}

/* Unlinks the entries of dir (not subdirectories) and removes it if it is then empty. */
static void empty_and_remove(const char *dir)
{
	struct buf path = BUF_INIT;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (d) {
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			buf_reset(&path);
			buf_addf(&path, "%s/%s", dir, de->d_name);
			unlink(path.buf);
		}
		closedir(d);
	}
	rmdir(dir);
	buf_release(&path);
}

int private_dir_create(struct private_dir *d, const char *kind, struct buf *err)
{
	struct buf path = BUF_INIT;

	d->path = NULL;
	d->lock_fd = -1;
	buf_addf(&path, "%s/coldstart-%s-%ld-XXXXXX", tmp_base(), kind, (long)getpid());
	if (!mkdtemp(path.buf)) {
		buf_addf(err, "cannot create '%s': %s", path.buf, strerror(errno));
		buf_release(&path);
		return -1;
	}
	d->lock_fd = leftover_lock(path.buf);
	d->path = buf_detach(&path, NULL);
	return 0;
}

void private_dir_remove(struct private_dir *d)
{
	if (d->path)
		empty_and_remove(d->path);
	private_dir_forget(d);
}

void private_dir_forget(struct private_dir *d)
{
	if (d->lock_fd >= 0)
		close(d->lock_fd);
	free(d->path);
	d->path = NULL;
	d->lock_fd = -1;
}

void leftover_cleanup_dirs(void)
{
	const char *base = tmp_base();
	struct buf path = BUF_INIT, prefix = BUF_INIT;
	struct dirent *de;
	DIR *d = opendir(base);
	size_t k;

	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat st;
		pid_t owner = 0;
		int fd;

		if (!starts_with(de->d_name, "coldstart-"))
			continue;
		for (k = 0; k < ARRAY_SIZE(stale_kinds) && !owner; k++) {
			buf_reset(&prefix);
			buf_addf(&prefix, "coldstart-%s-", stale_kinds[k]);
			owner = leftover_owner(de->d_name, prefix.buf, false);
		}
		if (!owner)
			continue;
		buf_reset(&path);
		buf_addf(&path, "%s/%s", base, de->d_name);
		/* Never another user's, never through a symlink. */
		if (lstat(path.buf, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
			continue;
		if (!leftover_is_stale(path.buf, owner, &fd))
			continue;
		empty_and_remove(path.buf);
		close(fd);
	}
	closedir(d);
	buf_release(&path);
	buf_release(&prefix);
}
