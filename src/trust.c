/*
 * The rule for programs a file's content names: owned by root or the user,
 * writable by nobody else, and so are the directories above (trust.h).
 */
#include "trust.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The file exec would run for a bare name: the first executable one in PATH. */
static char *search_path(const char *name)
{
	const char *path = getenv("PATH"), *p, *end;

	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path;; p = end + 1) {
		struct buf b = BUF_INIT;

		end = strchrnul(p, ':');
		if (end == p)
			buf_addf(&b, "./%s", name);
		else
			buf_addf(&b, "%.*s/%s", (int)(end - p), p, name);
		if (access(b.buf, X_OK) == 0)
			return buf_detach(&b, NULL);
		buf_release(&b);
		if (!*end)
			return NULL;
	}
}

static int check_one(const char *path, const struct stat *st, bool dir, struct buf *why)
{
	uid_t me = geteuid();

	if (st->st_uid != 0 && st->st_uid != me) {
		buf_addf(why, "'%s' is owned by uid %ld, not by root or uid %ld who runs coldstart", path,
			 (long)st->st_uid, (long)me);
		return -1;
	}
	if ((st->st_mode & 022) && !(dir && st->st_uid == 0 && (st->st_mode & S_ISVTX))) {
		buf_addf(why, "'%s' is writable by %s", path, st->st_mode & 002 ? "everyone" : "its group");
		return -1;
	}
	return 0;
}

/* The directory part of path (".", "/" or what is before the last '/'). */
static char *dir_part(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return xstrdup(".");
	return xstrndup(path, slash == path ? 1 : (size_t)(slash - path));
}

/* Checks the directory dir (resolved here) and each one above it, up to /. */
static int check_dir_chain(const char *dir, struct buf *why)
{
	char *d = realpath(dir, NULL), *slash;
	struct stat st;
	int ret = -1;

	if (!d) {
		buf_addf(why, "'%s': %s", dir, strerror(errno));
		return -1;
	}
	for (;;) {
		if (stat(d, &st) < 0) {
			buf_addf(why, "'%s': %s", d, strerror(errno));
			goto out;
		}
		if (check_one(d, &st, true, why) < 0)
			goto out;
		if (!strcmp(d, "/"))
			break;
		slash = strrchr(d, '/');
		if (slash == d)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	ret = 0;
out:
	free(d);
	return ret;
}

int trust_check_program(const char *path, struct buf *why)
{
	char *found = NULL, *real = NULL, *dir = NULL, *given = NULL;
	struct stat st;
	int ret = -1;

	if (!strchr(path, '/')) {
		if (!(found = search_path(path))) {
			buf_addf(why, "'%s' is not found in PATH", path);
			return -1;
		}
		path = found;
	}
	if (!(real = realpath(path, NULL)) || stat(real, &st) < 0) {
		buf_addf(why, "'%s': %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		buf_addf(why, "'%s' is not a regular file", real);
		goto out;
	}
	if (check_one(real, &st, false, why) < 0)
		goto out;
	/*
	 * Each directory above, up to /: whoever may write one could swap what
	 * it holds.  Those of the name as given too, when a link led elsewhere
	 * (a virtualenv's bin/python): the link itself could be swapped.
	 */
	dir = dir_part(real);
	given = dir_part(path);
	if (check_dir_chain(dir, why) < 0 || check_dir_chain(given, why) < 0)
		goto out;
	ret = 0;
out:
	free(found);
	free(real);
	free(dir);
	free(given);
	return ret;
}
