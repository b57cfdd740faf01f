/*
 * Putting a finished plan in place (see plan_place.h): a rename out of the
 * run's private directory, or a copy made whole beside the destination.
 */
#include "plan/plan_place.h"
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plan/plan_head.h"
#include "plan/plan_verify.h"

/*
 * Puts the file src of the run's private directory at dst, mode 0666 less
 * the umask (as a file the command creates): a rename on the same file
 * system; else a copy into a new file beside dst (mkstemp: O_EXCL, a fresh
 * name, so nothing planted there is written through), with src's mtime,
 * renamed over dst.  dst is replaced whole or not at all.
 */
static int place_file(const char *src, const char *dst, struct buf *err)
{
	mode_t mask = umask(0);
	struct buf tmp = BUF_INIT;
	const char *slash = strrchr(dst, '/');
	struct timespec times[2];
	char chunk[65536];
	struct stat st;
	int in, out = -1, ret = -1;
	ssize_t n;

	umask(mask);
	in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0 || fstat(in, &st) < 0 || fchmod(in, 0666 & ~mask) < 0) {
		buf_addf(err, "cannot read '%s': %s", src, strerror(errno));
		goto out;
	}
	if (!rename(src, dst)) {
		ret = 0;
		goto out;
	}
	if (errno != EXDEV) {
		buf_addf(err, "cannot write '%s': %s", dst, strerror(errno));
		goto out;
	}
	if (slash)
		buf_addf(&tmp, "%.*s/.%s.XXXXXX", (int)(slash - dst), dst, slash + 1);
	else
		buf_addf(&tmp, ".%s.XXXXXX", dst);
	out = mkostemp(tmp.buf, O_CLOEXEC);
	if (out < 0) {
		buf_addf(err, "cannot write beside '%s': %s", dst, strerror(errno));
		buf_reset(&tmp);
		goto out;
	}
	while ((n = read(in, chunk, sizeof(chunk))) > 0)
		if (write_full(out, chunk, n) < 0)
			break;
	times[0] = st.st_atim;
	times[1] = st.st_mtim;
	if (n != 0 || fchmod(out, 0666 & ~mask) < 0 || futimens(out, times) < 0 || fsync(out) < 0 || close(out) < 0) {
		buf_addf(err, "cannot write '%s': %s", tmp.buf, strerror(errno));
		if (out >= 0)
			close(out);
		goto out;
	}
	out = -1;
	if (rename(tmp.buf, dst) < 0) {
		buf_addf(err, "cannot write '%s': %s", dst, strerror(errno));
		goto out;
	}
	buf_reset(&tmp);
	ret = 0;
out:
	if (tmp.len)
		unlink(tmp.buf);
	if (out >= 0)
		close(out);
	if (in >= 0)
		close(in);
	buf_release(&tmp);
	return ret;
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

int plan_place_finish(json_t *root, const char *tmp, const char *output, const char *code_tmp, const char *code_out,
		      struct buf *err)
{
	json_t *code = json_object_get(root, "code");

	if (json_is_object(code) && !access(code_tmp, F_OK)) {
		/*
		 * The head part makes applying the plan cheaper; without it
		 * (an archive that could not be written) the plan is the same.
		 */
		if (plan_head_seal(root, code_tmp, err) < 0)
			buf_reset(err);
		if (place_file(code_tmp, code_out, err) < 0)
			return -1;
		/*
		 * Relative to the plan's directory, where the archive is put
		 * beside it: a plan built in CI and copied into an image with
		 * its archive keeps finding it.
		 */
		json_object_set_new(code, "path", json_string(basename_of(code_out)));
		if (plan_write_json(root, tmp, err) < 0)
			return -1;
	}
	return place_file(tmp, output, err);
}
