/*
 * On-demand build of the tracer extension for any target interpreter, cached
 * per ABI, so interpreters other than the one the Makefile built for get the
 * C tracer too (trace_build.h).
 */
#include "trace_build.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch.h"

static const char query_script[] =
	"import sys, sysconfig\n"
	"print(sys.version.split()[0])\n"
	"print(sysconfig.get_config_var('EXT_SUFFIX') or '')\n"
	"print(sysconfig.get_paths().get('include') or '')\n";

/* Runs argv and collects stdout or stderr (the other is inherited / dropped). */
static int run_capture(const char *const *argv, bool want_stdout, struct buf *out, int *status,
		       struct buf *err)
{
	struct child c;
	struct child_exit ex;
	char chunk[4096];
	ssize_t n;
	int fd, ret = -1;

	child_init(&c);
	strvec_pushv(&c.args, argv);
	c.null_stdin = true;
	c.capture_stdout = want_stdout;
	c.capture_stderr = !want_stdout;
	if (child_start(&c, err) < 0)
		goto out;
	fd = want_stdout ? c.out_fd : c.err_fd;
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (out->len < 64 * 1024)
			buf_add(out, chunk, (size_t)n);
	}
	if (child_finish(&c, &ex) < 0) {
		buf_addf(err, "cannot wait for '%s'", argv[0]);
		goto out;
	}
	*status = ex.signaled ? 128 + ex.term_signal : ex.exit_code;
	ret = 0;
out:
	child_release(&c);
	return ret;
}

static char *next_line(char **p)
{
	char *s = *p, *nl = strchr(s, '\n');

	if (!nl)
		return NULL;
	*nl = '\0';
	*p = nl + 1;
	return s;
}

static int mkdir_p(const char *path)
{
	char *copy = xstrdup(path), *p;
	int ret = 0;

	for (p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, 0755) < 0 && errno != EEXIST)
			ret = -1;
		*p = '/';
	}
	if (mkdir(copy, 0755) < 0 && errno != EEXIST)
		ret = -1;
	free(copy);
	return ret;
}

static bool newer_or_same(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa) < 0 || stat(b, &sb) < 0)
		return false;
	return sa.st_mtime >= sb.st_mtime;
}

/* Keeps the first few lines of compiler output for the error message. */
static void add_head(struct buf *err, const struct buf *text, int lines)
{
	const char *p = text->buf;

	while (*p && lines-- > 0) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		buf_adds(err, "; ");
		buf_add(err, p, len);
		p += len + (nl ? 1 : 0);
	}
}

int py_info_query(const char *python, struct py_info *info, struct buf *err)
{
	const char *argv[] = { python, "-S", "-E", "-c", query_script, NULL };
	struct buf out = BUF_INIT;
	char *p, *ver, *suffix, *inc;
	int status = 0, ret = -1;

	memset(info, 0, sizeof(*info));
	if (run_capture(argv, true, &out, &status, err) < 0)
		goto out;
	p = out.buf;
	ver = next_line(&p);
	suffix = ver ? next_line(&p) : NULL;
	inc = suffix ? next_line(&p) : NULL;
	if (status != 0 || !inc || sscanf(ver, "%d.%d", &info->major, &info->minor) != 2) {
		buf_addf(err, "'%s' did not describe itself (exit status %d)", python, status);
		goto out;
	}
	info->version = xstrdup(ver);
	info->ext_suffix = xstrdup(suffix);
	info->include_dir = xstrdup(inc);
	ret = 0;
out:
	buf_release(&out);
	return ret;
}

void py_info_release(struct py_info *info)
{
	free(info->version);
	free(info->ext_suffix);
	free(info->include_dir);
	memset(info, 0, sizeof(*info));
}

char *trace_build_cache_root(void)
{
	const char *env = getenv("COLDSTART_CACHE_DIR");
	struct buf b = BUF_INIT;

	if (env && *env)
		return xstrdup(env);
	env = getenv("XDG_CACHE_HOME");
	if (env && *env == '/') {
		buf_addf(&b, "%s/coldstart", env);
		return buf_detach(&b, NULL);
	}
	env = getenv("HOME");
	buf_addf(&b, "%s/.cache/coldstart", env && *env ? env : "/tmp");
	return buf_detach(&b, NULL);
}

int ext_build_ensure(const char *python, const char *datadir, const char *name, char **so_path, struct buf *err)
{
	struct py_info info;
	struct buf src = BUF_INIT, path = BUF_INIT, dir = BUF_INIT, tmp = BUF_INIT;
	struct buf hdr = BUF_INIT, out = BUF_INIT, srcpath = BUF_INIT;
	char *root = NULL;
	const char *cc = getenv("CC");
	int status = 0, ret = -1;
	bool have_info = false;

	*so_path = NULL;
	if (py_info_query(python, &info, err) < 0)
		goto out;
	have_info = true;
	if (info.major < 3 || (info.major == 3 && info.minor < 7)) {
		buf_addf(err, "'%s' is Python %s; %s needs 3.7 or newer", python, info.version, name);
		goto out;
	}
	if (!*info.ext_suffix) {
		buf_addf(err, "'%s' reports no EXT_SUFFIX", python);
		goto out;
	}
	buf_addf(&srcpath, "%s/coldstart/%s.c", datadir, name);
	if (buf_read_file(&src, srcpath.buf) < 0) {
		buf_addf(err, "cannot read '%s': %s", srcpath.buf, strerror(errno));
		goto out;
	}

	/* The Makefile's build beside the source, when it is current. */
	buf_addf(&path, "%s/coldstart/%s%s", datadir, name, info.ext_suffix);
	if (!access(path.buf, R_OK) && newer_or_same(path.buf, srcpath.buf)) {
		*so_path = buf_detach(&path, NULL);
		ret = 0;
		goto out;
	}

	root = trace_build_cache_root();
	buf_addf(&dir, "%s/%s/%016llx", root, name + 1, (unsigned long long)hash_bytes(src.buf, src.len));
	buf_reset(&path);
	buf_addf(&path, "%s/%s%s", dir.buf, name, info.ext_suffix);
	if (!access(path.buf, R_OK)) {
		*so_path = buf_detach(&path, NULL);
		ret = 0;
		goto out;
	}

	buf_addf(&hdr, "%s/Python.h", info.include_dir);
	if (access(hdr.buf, R_OK) < 0) {
		buf_addf(err, "no '%s' for '%s' (install its development headers)", hdr.buf, python);
		goto out;
	}
	if (mkdir_p(dir.buf) < 0) {
		buf_addf(err, "cannot create '%s': %s", dir.buf, strerror(errno));
		goto out;
	}
	buf_addf(&tmp, "%s.tmp.%ld", path.buf, (long)getpid());
	{
		const char *argv[] = { cc && *cc ? cc : "cc", "-shared", "-fPIC", "-O2", "-std=c11",
				       "-o", tmp.buf, "-I", info.include_dir, srcpath.buf, NULL };

		if (run_capture(argv, false, &out, &status, err) < 0)
			goto out;
		if (status != 0) {
			buf_addf(err, "cannot build %s for '%s' (%s exit status %d)", name, python, argv[0],
				 status);
			add_head(err, &out, 3);
			unlink(tmp.buf);
			goto out;
		}
	}
	if (rename(tmp.buf, path.buf) < 0) {
		buf_addf(err, "cannot rename '%s': %s", tmp.buf, strerror(errno));
		unlink(tmp.buf);
		goto out;
	}
	*so_path = buf_detach(&path, NULL);
	ret = 0;
out:
	if (have_info)
		py_info_release(&info);
	free(root);
	buf_release(&src);
	buf_release(&path);
	buf_release(&dir);
	buf_release(&tmp);
	buf_release(&hdr);
	buf_release(&out);
	buf_release(&srcpath);
	return ret;
}

int trace_build_ensure(const char *python, const char *datadir, char **so_path, struct buf *err)
{
	return ext_build_ensure(python, datadir, "_tracer", so_path, err);
}
