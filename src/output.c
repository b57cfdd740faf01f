/*
 * Output paths and descriptors named on a command line (see output.h).
 */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"

/*
 * Creates path and removes it again: access() passes for root wherever the
 * mode bits say no, and says nothing of /proc, /sys or a read-only mount.
 */
static int create_probe(const char *path, const char *dir, struct buf *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0666);

	if (fd < 0 && errno == EEXIST)
		return 0; /* made meanwhile: the write will say what is wrong with it */
	if (fd < 0) {
		buf_addf(err, "cannot write '%s': cannot create a file in '%s': %s", path, dir, strerror(errno));
		return -1;
	}
	close(fd);
	unlink(path);
	return 0;
}

int output_path_check(const char *path, struct buf *err)
{
	struct stat st;
	char *dir = NULL, *slash;
	int ret = -1;

	if (!strcmp(path, "-"))
		return 0;
	if (!*path) {
		buf_adds(err, "an empty output path");
		return -1;
	}
	if (!stat(path, &st)) {
		if (S_ISDIR(st.st_mode))
			buf_addf(err, "cannot write '%s': it is a directory", path);
		else if (access(path, W_OK) < 0)
			buf_addf(err, "cannot write '%s': %s", path, strerror(errno));
		else
			ret = 0;
		return ret;
	}
	if (errno != ENOENT) {
		buf_addf(err, "cannot write '%s': %s", path, strerror(errno));
		return -1;
	}
	dir = xstrdup(path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		dir[1] = '\0';
	else if (slash)
		*slash = '\0';
	else {
		free(dir);
		dir = xstrdup(".");
	}
	if (stat(dir, &st) < 0)
		buf_addf(err, "cannot write '%s': no directory '%s'", path, dir);
	else if (!S_ISDIR(st.st_mode))
		buf_addf(err, "cannot write '%s': '%s' is not a directory", path, dir);
	else if (access(dir, W_OK | X_OK) < 0)
		buf_addf(err, "cannot write '%s': directory '%s': %s", path, dir, strerror(errno));
	else
		ret = create_probe(path, dir, err);
	free(dir);
	return ret;
}

int output_fd_arg(const char *v, const char *option, int *fd, struct buf *err)
{
	char *end;
	long n;
	int fl;

	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || end == v || *end || n < 0 || n > 1000000) {
		buf_addf(err, "%s needs a descriptor number, not '%s'", option, v);
		return -1;
	}
	if (n == 1)
		return 1;
	fl = fcntl((int)n, F_GETFL);
	if (fl < 0) {
		buf_addf(err, "%s %ld: no such open descriptor (open it in the shell: %ld>FILE)", option, n, n);
		return ARGS_FAILED;
	}
	if ((fl & O_ACCMODE) == O_RDONLY) {
		buf_addf(err, "%s %ld: the descriptor is open for reading only", option, n);
		return ARGS_FAILED;
	}
	/* The target must not inherit the channel (it would hold it open, or write to it). */
	fcntl((int)n, F_SETFD, fcntl((int)n, F_GETFD) | FD_CLOEXEC);
	*fd = (int)n;
	return 0;
}

int output_take_stdout(int *users, const char *what, struct buf *err)
{
	if ((*users)++) {
		buf_addf(err, "%s: only one output can go to stdout (--json, -o -, an output to '-')", what);
		return -1;
	}
	return 0;
}
