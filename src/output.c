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
#include "outfile.h"

int output_path_check(const char *path, struct buf *err)
{
	struct outfile of = OUTFILE_INIT;
	struct stat st;
	char *real = NULL, *dir = NULL, *slash;
	bool fd_alias;
	int ret = -1;

	if (!strcmp(path, "-"))
		return 0;
	if (!*path) {
		buf_adds(err, "an empty output path");
		return -1;
	}
	if (!(real = outfile_resolve(path, &fd_alias, err)))
		return -1;
	if (fd_alias) {
		/* /dev/stdout and the like: written in place. */
		if (access(path, W_OK) < 0)
			buf_addf(err, "cannot write '%s': %s", path, strerror(errno));
		else
			ret = 0;
		goto out;
	}
	if (stat(real, &st) < 0) {
		if (errno != ENOENT) {
			buf_addf(err, "cannot write '%s': %s", path, strerror(errno));
			goto out;
		}
	} else if (!S_ISREG(st.st_mode)) {
		if (S_ISDIR(st.st_mode))
			buf_addf(err, "cannot write '%s': it is a directory", path);
		else if (access(real, W_OK) < 0)
			buf_addf(err, "cannot write '%s': %s", path, strerror(errno));
		else
			ret = 0; /* a device or a FIFO, written in place */
		goto out;
	}
	dir = xstrdup(real);
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
	/*
	 * The file is written as a temporary beside it: creating one (and
	 * removing it) asks the kernel, as access() cannot for root, /proc or
	 * a read-only mount.
	 */
	else if (outfile_open(&of, path, err) == 0) {
		outfile_abort(&of);
		ret = 0;
	}
out:
	free(real);
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
