/*
 * Output files written whole or not at all: a temporary beside the name,
 * renamed over it when complete; links followed under the kernel's
 * protected-symlinks rule (outfile.h).
 */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * The temporary being written, for outfile_unlink_pending in a signal
 * handler: one at a time (the writers run one after the other).
 */
static char pending_tmp[PATH_MAX];

/*
 * While a temporary exists, SIGINT and the like remove it first and then
 * do what they did before (end coldstart, or the handler in place).
 */
static const int cleanup_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
static struct sigaction saved_actions[ARRAY_SIZE(cleanup_signals)];
static bool installed[ARRAY_SIZE(cleanup_signals)];

static void on_signal(int sig)
{
	size_t i;

	outfile_unlink_pending();
	for (i = 0; i < ARRAY_SIZE(cleanup_signals); i++)
		if (cleanup_signals[i] == sig && installed[i]) {
			sigaction(sig, &saved_actions[i], NULL);
			installed[i] = false;
		}
	raise(sig); /* delivered once this handler returns, as before */
}

static void set_pending(const char *tmp)
{
	struct sigaction sa;
	size_t i;

	if (strlen(tmp) >= sizeof(pending_tmp))
		return;
	memcpy(pending_tmp, tmp, strlen(tmp) + 1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < ARRAY_SIZE(cleanup_signals); i++) {
		if (installed[i] || sigaction(cleanup_signals[i], NULL, &saved_actions[i]) < 0 ||
		    saved_actions[i].sa_handler == SIG_IGN)
			continue;
		installed[i] = sigaction(cleanup_signals[i], &sa, NULL) == 0;
	}
}

static void clear_pending(void)
{
	size_t i;

	pending_tmp[0] = '\0';
	for (i = 0; i < ARRAY_SIZE(cleanup_signals); i++)
		if (installed[i]) {
			sigaction(cleanup_signals[i], &saved_actions[i], NULL);
			installed[i] = false;
		}
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

static const char *base_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/*
 * fs.protected_symlinks (and protected_regular for a file): in a sticky,
 * world-writable directory, a link is followed, and a file replaced, only
 * when it belongs to the writer or to the directory's owner.
 */
static bool link_refused(const struct stat *link, const char *dir)
{
	struct stat d;

	if (stat(dir, &d) < 0)
		return false;
	return (d.st_mode & S_ISVTX) && (d.st_mode & S_IWOTH) && link->st_uid != geteuid() && link->st_uid != d.st_uid;
}

/* Whether dir lies in /proc, where links name open descriptors (/dev/stdout, /dev/fd/N). */
static bool in_proc(const char *dir)
{
	char *real = realpath(dir, NULL);
	bool yes = real && (!strcmp(real, "/proc") || starts_with(real, "/proc/"));

	free(real);
	return yes;
}

/*
 * path with its links followed (see outfile.h); *fd_alias set when a link
 * in /proc stands for an open descriptor, which no name can replace.
 */
static char *resolve(const char *path, bool *fd_alias, struct buf *err)
{
	char *cur = xstrdup(path);
	int hops;

	*fd_alias = false;
	for (hops = 0;; hops++) {
		char target[PATH_MAX], *dir;
		struct stat st;
		ssize_t n;

		if (lstat(cur, &st) < 0 || !S_ISLNK(st.st_mode))
			return cur;
		dir = dir_of(cur);
		if (in_proc(dir)) {
			/* "pipe:[123]", a deleted file: the descriptor is what gets written. */
			*fd_alias = true;
			free(dir);
			return cur;
		}
		if (hops == 40) {
			buf_addf(err, "cannot write '%s': too many levels of symbolic links", path);
			goto fail;
		}
		if (link_refused(&st, dir)) {
			buf_addf(err,
				 "cannot write '%s': '%s' is a symbolic link owned by uid %u in the shared directory "
				 "'%s' (sticky, writable by everyone), which anyone could have planted there; "
				 "remove it or write elsewhere",
				 path, cur, (unsigned)st.st_uid, dir);
			goto fail;
		}
		n = readlink(cur, target, sizeof(target) - 1);
		if (n < 0) {
			buf_addf(err, "cannot write '%s': cannot read the link '%s': %s", path, cur, strerror(errno));
			goto fail;
		}
		target[n] = '\0';
		free(cur);
		if (target[0] == '/') {
			cur = xstrdup(target);
		} else {
			struct buf b = BUF_INIT;

			buf_addf(&b, "%s/%s", dir, target);
			cur = buf_detach(&b, NULL);
		}
		free(dir);
		continue;
fail:
		free(dir);
		free(cur);
		return NULL;
	}
}

char *outfile_resolve(const char *path, bool *fd_alias, struct buf *err)
{
	bool alias;

	return resolve(path, fd_alias ? fd_alias : &alias, err);
}

static mode_t new_file_mode(void)
{
	mode_t mask = umask(0);

	umask(mask);
	return 0666 & ~mask;
}

/* Creates a temporary beside of->path, 0600 until complete; old: the file it replaces, if any. */
static int open_temp(struct outfile *of, const struct stat *old, struct buf *err)
{
	char *dir = dir_of(of->path);
	unsigned long seed = (unsigned long)now_ns() ^ ((unsigned long)getpid() << 16);
	int tries, ret = -1;

	for (tries = 0; tries < 100; tries++) {
		struct buf b = BUF_INIT;

		seed = seed * 6364136223846793005UL + 1442695040888963407UL;
		buf_addf(&b, "%s/.%s.%06lx.tmp", dir, base_of(of->path), (seed >> 33) & 0xffffff);
		of->fd = open(b.buf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
		if (of->fd >= 0) {
			of->tmp = buf_detach(&b, NULL);
			break;
		}
		buf_release(&b);
		if (errno != EEXIST)
			break;
	}
	if (of->fd < 0) {
		buf_addf(err, "cannot write '%s': cannot create a file in '%s': %s", of->name, dir, strerror(errno));
		goto out;
	}
	set_pending(of->tmp);
	if (old) {
		of->old_uid = old->st_uid;
		of->old_gid = old->st_gid;
		of->mode = old->st_mode & 07777;
		of->keep_owner = true;
	} else {
		of->mode = new_file_mode();
	}
	ret = 0;
out:
	free(dir);
	return ret;
}

static void outfile_release(struct outfile *of)
{
	if (of->fd >= 0)
		close(of->fd);
	if (of->tmp)
		clear_pending();
	free(of->name);
	free(of->path);
	free(of->tmp);
	memset(of, 0, sizeof(*of));
	of->fd = -1;
}

static int open_common(struct outfile *of, const char *path, bool append, struct buf *err)
{
	struct stat st;
	bool fd_alias;

	memset(of, 0, sizeof(*of));
	of->fd = -1;
	of->name = xstrdup(path);
	of->append = append;
	if (!(of->path = resolve(path, &fd_alias, err)))
		goto fail;
	if (fd_alias) {
		/*
		 * /dev/stdout and the like: the descriptor's file, pipe or
		 * terminal, in place.  O_APPEND: a new open of a file the shell
		 * opened with >> (or wrote to before) starts at 0 otherwise.
		 */
		of->fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY);
		if (of->fd < 0) {
			buf_addf(err, "cannot write '%s': %s", path, strerror(errno));
			goto fail;
		}
		of->append_from = -1;
		return 0;
	}
	if (stat(of->path, &st) < 0) {
		if (errno != ENOENT) {
			buf_addf(err, "cannot write '%s': %s", path, strerror(errno));
			goto fail;
		}
		if (append) {
			of->fd = open(of->path,
				      O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0666);
			if (of->fd < 0) {
				buf_addf(err, "cannot write '%s': %s", path, strerror(errno));
				goto fail;
			}
			return 0;
		}
		if (open_temp(of, NULL, err) < 0)
			goto fail;
		return 0;
	}
	if (S_ISDIR(st.st_mode)) {
		buf_addf(err, "cannot write '%s': it is a directory", path);
		goto fail;
	}
	if (S_ISREG(st.st_mode)) {
		char *dir = dir_of(of->path);
		bool foreign = link_refused(&st, dir);

		if (foreign)
			buf_addf(err,
				 "cannot write '%s': '%s' belongs to uid %u in the shared directory '%s' (sticky, "
				 "writable by everyone), where anyone could have put it; remove it or write elsewhere",
				 path, of->path, (unsigned)st.st_uid, dir);
		free(dir);
		if (foreign)
			goto fail;
	}
	if (S_ISREG(st.st_mode) && !append) {
		/* A file its owner made read-only stays so, though the directory would allow the rename. */
		if (access(of->path, W_OK) < 0) {
			buf_addf(err, "cannot write '%s': %s", path, strerror(errno));
			goto fail;
		}
		if (open_temp(of, &st, err) < 0)
			goto fail;
		return 0;
	}
	/* A device, a FIFO, a socket, or an append: in place. */
	of->fd = open(of->path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | (append ? O_APPEND : 0));
	if (of->fd < 0) {
		buf_addf(err, "cannot write '%s': %s", path, strerror(errno));
		goto fail;
	}
	if (append && S_ISREG(st.st_mode)) {
		off_t end = lseek(of->fd, 0, SEEK_END);

		of->append_from = end < 0 ? -1 : (long long)end;
	} else {
		of->append_from = -1;
	}
	return 0;
fail:
	outfile_release(of);
	return -1;
}

int outfile_open(struct outfile *of, const char *path, struct buf *err)
{
	return open_common(of, path, false, err);
}

int outfile_open_append(struct outfile *of, const char *path, struct buf *err)
{
	return open_common(of, path, true, err);
}

void outfile_abort(struct outfile *of)
{
	if (of->tmp)
		unlink(of->tmp);
	else if (of->append && of->fd >= 0 && of->append_from >= 0)
		(void)ftruncate(of->fd, (off_t)of->append_from);
	outfile_release(of);
}

int outfile_commit(struct outfile *of, struct buf *err)
{
	int ret = -1;

	if (!of->tmp) {
		int fd = of->fd;

		of->fd = -1;
		if (close(fd) < 0) {
			buf_addf(err, "cannot write '%s': %s", of->name, strerror(errno));
			if (of->append && of->append_from >= 0) {
				/* The descriptor is gone: cut back through the name. */
				(void)truncate(of->path, (off_t)of->append_from);
			}
			goto out;
		}
		ret = 0;
		goto out;
	}
	/* The data on disk before the name points at it, or a crash could leave an empty file there. */
	if (fsync(of->fd) < 0 && errno != EINVAL && errno != EROFS) {
		buf_addf(err, "cannot write '%s': %s", of->name, strerror(errno));
		goto out;
	}
	/*
	 * The old file's owner where allowed and its mode (a new one as open()
	 * would make it), only now: whoever gets it cannot change it meanwhile.
	 */
	if (of->keep_owner && fchown(of->fd, of->old_uid, of->old_gid) < 0)
		(void)fchown(of->fd, (uid_t)-1, of->old_gid);
	(void)fchmod(of->fd, of->mode);
	if (close(of->fd) < 0) {
		of->fd = -1;
		buf_addf(err, "cannot write '%s': %s", of->name, strerror(errno));
		goto out;
	}
	of->fd = -1;
	if (rename(of->tmp, of->path) < 0) {
		buf_addf(err, "cannot write '%s': cannot rename '%s' over it: %s", of->name, of->tmp, strerror(errno));
		goto out;
	}
	free(of->tmp);
	of->tmp = NULL;
	clear_pending();
	ret = 0;
out:
	if (ret < 0 && of->tmp)
		unlink(of->tmp);
	outfile_release(of);
	return ret;
}

void outfile_unlink_pending(void)
{
	if (pending_tmp[0])
		unlink(pending_tmp);
}

int write_full(int fd, const char *data, size_t len)
{
	while (len) {
		ssize_t w = write(fd, data, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		data += w;
		len -= (size_t)w;
	}
	return 0;
}

static int write_with(struct outfile *of, const char *data, size_t len, struct buf *err)
{
	if (write_full(of->fd, data, len) < 0) {
		buf_addf(err, "cannot write '%s': %s", of->name, strerror(errno));
		outfile_abort(of);
		return -1;
	}
	return outfile_commit(of, err);
}

int outfile_write(const char *path, const char *data, size_t len, struct buf *err)
{
	struct outfile of = OUTFILE_INIT;

	if (outfile_open(&of, path, err) < 0)
		return -1;
	return write_with(&of, data, len, err);
}

int outfile_append(const char *path, const char *data, size_t len, struct buf *err)
{
	struct outfile of = OUTFILE_INIT;

	if (outfile_open_append(&of, path, err) < 0)
		return -1;
	return write_with(&of, data, len, err);
}
