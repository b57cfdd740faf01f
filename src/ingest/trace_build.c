/*
 * On-demand build of the tracer extension for any target interpreter, cached
 * per ABI, so interpreters other than the one the Makefile built for get the
 * C tracer too (trace_build.h).
 */
#include "ingest/trace_build.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/launch.h"

static const char query_script[] = "import sys, sysconfig\n"
				   "print(sys.version.split()[0])\n"
				   "print(sysconfig.get_config_var('EXT_SUFFIX') or '')\n"
				   "print(sysconfig.get_paths().get('include') or '')\n"
				   "print(getattr(getattr(sys, 'implementation', None), 'cache_tag', None) or '')\n";

/* Runs argv and collects stdout or stderr (the other is inherited / dropped). */
static int run_capture(const char *const *argv, bool want_stdout, struct buf *out, int *status, struct buf *err)
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

/* Number of components of an absolute path ("/a/b" has 2). */
static size_t path_depth(const char *path)
{
	size_t n = 0;
	const char *p;

	for (p = path; *p; p++)
		if (*p != '/' && (p == path || p[-1] == '/'))
			n++;
	return n;
}

/*
 * Whether a directory on the way to the cache can be trusted: only root or
 * the effective user may own it (anyone else could rename it or what is in
 * it), and nobody else may write to it, except in a root-owned sticky
 * directory like /tmp, where others can add entries but not replace ours.
 * mine: the cache itself, which must belong to the effective user alone.
 */
static int check_dir(const char *path, const struct stat *st, bool mine, struct buf *err)
{
	uid_t me = geteuid();

	if (!S_ISDIR(st->st_mode)) {
		buf_addf(err, "'%s' is not a directory", path);
		return -1;
	}
	if (st->st_uid != me && (mine || st->st_uid != 0)) {
		buf_addf(err, "'%s' is owned by uid %ld, not by uid %ld who runs coldstart", path, (long)st->st_uid,
			 (long)me);
		return -1;
	}
	if ((st->st_mode & 022) && (mine || st->st_uid != 0 || !(st->st_mode & S_ISVTX))) {
		buf_addf(err, "'%s' is writable by %s (chmod go-w '%s')", path,
			 st->st_mode & 002 ? "others" : "its group", path);
		return -1;
	}
	return 0;
}

/*
 * Opens the directory path (absolute), creating what is missing of it
 * (mode 0700), such that nobody but the effective user and root can change
 * what it holds: every directory from / down is checked by check_dir, with
 * the cache's rules for its last mine components.  Symbolic links in the
 * existing part are resolved first, and the walk then refuses any
 * (O_NOFOLLOW), so what was checked is what the path names.  Returns a directory fd and the resolved path in *real, or
 * -1 with the reason in err.
 */
static int open_private_dir(const char *path, size_t mine, char **real, struct buf *err)
{
	struct buf have = BUF_INIT, rest = BUF_INIT, walked = BUF_INIT;
	char *resolved = NULL, *comp, *end;
	size_t depth = 0, mine_from;
	struct stat st;
	int fd = -1, next;

	*real = NULL;
	if (path[0] != '/') {
		buf_addf(err, "the cache directory '%s' is not an absolute path", path);
		return -1;
	}
	/* The longest part that exists, resolved; the rest is made below. */
	buf_adds(&have, path);
	while (have.len > 1 && lstat(have.buf, &st) < 0) {
		char *slash = strrchr(have.buf, '/');

		buf_reset(&rest);
		buf_adds(&rest, slash + 1);
		buf_adds(&rest, path + have.len);
		buf_setlen(&have, slash == have.buf ? 1 : (size_t)(slash - have.buf));
	}
	resolved = realpath(have.buf, NULL);
	if (!resolved) {
		buf_addf(err, "cannot resolve '%s': %s", have.buf, strerror(errno));
		goto fail;
	}
	buf_adds(&walked, resolved);
	if (rest.len) {
		if (walked.len > 1)
			buf_addch(&walked, '/');
		buf_addf(&walked, "%s", rest.buf + (rest.buf[0] == '/'));
	}
	mine_from = path_depth(walked.buf) + 1 > mine ? path_depth(walked.buf) + 1 - mine : 0;
	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || check_dir("/", &st, mine_from == 0, err) < 0)
		goto fail;
	for (comp = walked.buf + 1; *comp; comp = *end ? end + 1 : end) {
		bool own = ++depth >= mine_from;
		char *name, *so_far;

		end = strchrnul(comp, '/');
		if (end == comp)
			continue;
		name = xstrndup(comp, (size_t)(end - comp));
		so_far = xstrndup(walked.buf, (size_t)(end - walked.buf));
		if (!strcmp(name, "..") || !strcmp(name, ".")) {
			buf_addf(err, "the cache directory '%s' has a '%s' component", path, name);
			next = -1;
		} else if (mkdirat(fd, name, 0700) < 0 && errno != EEXIST) {
			buf_addf(err, "cannot create '%s': %s", so_far, strerror(errno));
			next = -1;
		} else if ((next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
			buf_addf(err, "cannot open '%s': %s", so_far,
				 errno == ELOOP || errno == ENOTDIR ? "not a directory (a symbolic link?)"
								    : strerror(errno));
		} else if (fstat(next, &st) < 0 || check_dir(so_far, &st, own, err) < 0) {
			close(next);
			next = -1;
		}
		free(name);
		free(so_far);
		close(fd);
		fd = next;
		if (fd < 0)
			goto fail;
	}
	*real = buf_detach(&walked, NULL);
	goto out;
fail:
	if (fd >= 0)
		close(fd);
	fd = -1;
out:
	free(resolved);
	buf_release(&have);
	buf_release(&rest);
	buf_release(&walked);
	return fd;
}

/*
 * Whether the extension name in dir can be loaded: a regular file (not a
 * symbolic link: opened with O_NOFOLLOW) owned by the effective user and
 * writable by nobody else.  0 yes, 1 no (with the reason in why), -1 when
 * it does not exist.
 */
static int check_extension(int dir, const char *name, struct buf *why)
{
	struct stat st;
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0) {
		if (errno == ENOENT)
			return -1;
		buf_addf(why, "'%s' cannot be opened without following links: %s", name, strerror(errno));
		return 1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		buf_addf(why, "'%s' is not a regular file", name);
	} else if (st.st_uid != geteuid()) {
		buf_addf(why, "'%s' is owned by uid %ld, not %ld", name, (long)st.st_uid, (long)geteuid());
	} else if (st.st_mode & 022) {
		buf_addf(why, "'%s' is writable by group or others", name);
	}
	close(fd);
	return why->len ? 1 : 0;
}

static bool newer_or_same(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa) < 0 || stat(b, &sb) < 0)
		return false;
	return sa.st_mtime >= sb.st_mtime;
}

/*
 * Reads an extension's source (srcpath, in dir) into src, followed by each
 * header beside it that it includes with #include "NAME" (_fill.h, the
 * _plancode parts), whose paths go to headers: the cache's hash and the
 * Makefile build's freshness cover them all.  Headers not beside it (Python's
 * own) are not ours.  0, or -1 with err set.
 */
static int read_sources(const char *dir, const char *srcpath, struct buf *src, struct strvec *headers, struct buf *err)
{
	struct buf path = BUF_INIT;
	const char *p, *end;
	size_t len;
	int ret = -1;

	if (buf_read_file(src, srcpath) < 0) {
		buf_addf(err, "cannot read '%s': %s", srcpath, strerror(errno));
		return -1;
	}
	len = src->len;
	for (p = src->buf; p < src->buf + len; p = end + 1) {
		const char *name, *close;

		end = memchr(p, '\n', src->buf + len - p);
		if (!end)
			end = src->buf + len;
		if ((size_t)(end - p) <= strlen("#include \"\"") || strncmp(p, "#include \"", 10))
			continue;
		name = p + 10;
		close = memchr(name, '"', end - name);
		if (!close || close == name || memchr(name, '/', close - name))
			continue;
		buf_reset(&path);
		buf_addf(&path, "%s/%.*s", dir, (int)(close - name), name);
		if (access(path.buf, F_OK) < 0)
			continue;
		/* src may move as it grows: p and end are offsets from here on. */
		{
			size_t at = p - src->buf, stop = end - src->buf;

			if (buf_read_file(src, path.buf) < 0) {
				buf_addf(err, "cannot read '%s': %s", path.buf, strerror(errno));
				goto out;
			}
			p = src->buf + at;
			end = src->buf + stop;
		}
		strvec_push(headers, path.buf);
	}
	ret = 0;
out:
	buf_release(&path);
	return ret;
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
	char *p, *ver, *suffix, *inc, *tag;
	int status = 0, ret = -1;

	memset(info, 0, sizeof(*info));
	if (run_capture(argv, true, &out, &status, err) < 0)
		goto out;
	p = out.buf;
	ver = next_line(&p);
	suffix = ver ? next_line(&p) : NULL;
	inc = suffix ? next_line(&p) : NULL;
	tag = inc ? next_line(&p) : NULL;
	if (status != 0 || !tag || sscanf(ver, "%d.%d", &info->major, &info->minor) != 2) {
		buf_addf(err, "'%s' did not describe itself (exit status %d)", python, status);
		goto out;
	}
	info->version = xstrdup(ver);
	info->ext_suffix = xstrdup(suffix);
	info->include_dir = xstrdup(inc);
	info->cache_tag = xstrdup(tag);
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
	free(info->cache_tag);
	memset(info, 0, sizeof(*info));
}

char *trace_build_cache_root(void)
{
	const char *env = getenv("COLDSTART_CACHE_DIR");
	struct buf b = BUF_INIT;
	struct passwd *pw;

	if (env && *env)
		return xstrdup(env);
	env = getenv("XDG_CACHE_HOME");
	if (env && *env == '/') {
		buf_addf(&b, "%s/coldstart", env);
		return buf_detach(&b, NULL);
	}
	env = getenv("HOME");
	if (!env || *env != '/') {
		/* cron, env -i, many containers: the password database knows the home. */
		pw = getpwuid(geteuid());
		env = pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
	}
	if (!env || !strcmp(env, "/") || !strcmp(env, "/nonexistent"))
		return NULL;
	buf_addf(&b, "%s/.cache/coldstart", env);
	return buf_detach(&b, NULL);
}

/*
 * Compiles the extension's source for the interpreter into a temporary name
 * in dirfd (the directory real) and renames it to name there, writable by us
 * alone; 0 on success.
 */
static int compile_into(const struct py_info *info, const char *python, const char *ext, const char *srcpath, int dirfd,
			const char *real, const char *name, struct buf *err)
{
	struct buf hdr = BUF_INIT, out = BUF_INIT, tmp = BUF_INIT, tmpname = BUF_INIT;
	const char *cc = getenv("CC");
	int status = 0, ret = -1, fd;

	buf_addf(&hdr, "%s/Python.h", info->include_dir);
	if (access(hdr.buf, R_OK) < 0) {
		buf_addf(err, "no '%s' for '%s' (install its development headers)", hdr.buf, python);
		goto out;
	}
	buf_addf(&tmpname, "%s.tmp.%ld", name, (long)getpid());
	buf_addf(&tmp, "%s/%s", real, tmpname.buf);
	{
		const char *argv[] = {
			cc && *cc ? cc : "cc", "-shared", "-fPIC", "-O2", "-std=c11", "-o", tmp.buf, "-I",
			info->include_dir,     srcpath,	  NULL
		};

		if (run_capture(argv, false, &out, &status, err) < 0)
			goto out;
		if (status != 0) {
			buf_addf(err, "cannot build the %s for '%s' (%s exit status %d)", ext + 1, python, argv[0],
				 status);
			add_head(err, &out, 3);
			unlinkat(dirfd, tmpname.buf, 0);
			goto out;
		}
	}
	/* Writable by us alone whatever the umask: check_extension refuses anything else. */
	fd = openat(dirfd, tmpname.buf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchmod(fd, 0755) < 0 || renameat(dirfd, tmpname.buf, dirfd, name) < 0) {
		buf_addf(err, "cannot install '%s': %s", tmp.buf, strerror(errno));
		if (fd >= 0)
			close(fd);
		unlinkat(dirfd, tmpname.buf, 0);
		goto out;
	}
	close(fd);
	ret = 0;
out:
	buf_release(&hdr);
	buf_release(&out);
	buf_release(&tmp);
	buf_release(&tmpname);
	return ret;
}

static int ext_build_for(const char *python, const struct py_info *ip, const char *datadir, const char *ext,
			 const char *scratch, char **so_path, struct buf *note, struct buf *err)
{
	const struct py_info info = *ip;
	struct buf src = BUF_INIT, path = BUF_INIT, dir = BUF_INIT, why = BUF_INIT;
	struct buf srcpath = BUF_INIT, name = BUF_INIT;
	struct strvec headers = STRVEC_INIT;
	char *root = NULL, *real = NULL;
	int ret = -1, dirfd = -1;

	*so_path = NULL;
	if (info.major < 3 || (info.major == 3 && info.minor < 7)) {
		buf_addf(err, "'%s' is Python %s; the %s needs 3.7 or newer", python, info.version, ext + 1);
		goto out;
	}
	if (!*info.ext_suffix || strchr(info.ext_suffix, '/')) {
		buf_addf(err, "'%s' reports no usable EXT_SUFFIX", python);
		goto out;
	}
	buf_addf(&dir, "%s/coldstart", datadir);
	buf_addf(&srcpath, "%s/%s.c", dir.buf, ext);
	if (read_sources(dir.buf, srcpath.buf, &src, &headers, err) < 0)
		goto out;
	buf_reset(&dir);

	/*
	 * The Makefile's build beside the source, when it is current: it is
	 * as trusted as the bootstrap beside it, which every target runs.
	 */
	buf_addf(&path, "%s/coldstart/%s%s", datadir, ext, info.ext_suffix);
	if (!access(path.buf, R_OK) && newer_or_same(path.buf, srcpath.buf)) {
		bool current = true;

		for (size_t i = 0; i < headers.nr; i++)
			current = current && newer_or_same(path.buf, headers.v[i]);
		if (current) {
			*so_path = buf_detach(&path, NULL);
			ret = 0;
			goto out;
		}
	}

	buf_addf(&name, "%s%s", ext, info.ext_suffix);
	root = trace_build_cache_root();
	if (!root) {
		buf_adds(note, "no cache directory (no home directory; COLDSTART_CACHE_DIR sets one)");
	} else {
		buf_addf(&dir, "%s/%s/%016llx", root, ext + 1, (unsigned long long)hash_bytes(src.buf, src.len));
		/* The cache root, tracer/ (sampler/) and the hash directory are the user's. */
		dirfd = open_private_dir(dir.buf, 3, &real, &why);
		if (dirfd < 0)
			buf_addf(note, "the cache is not used: %s", why.buf);
	}
	if (dirfd < 0) {
		if (!scratch) {
			buf_adds(err, note->buf);
			goto out;
		}
		buf_addf(note, "; the %s is built for this run only", ext + 1);
		dirfd = open_private_dir(scratch, 1, &real, err);
		if (dirfd < 0)
			goto out;
	}
	buf_reset(&path);
	buf_addf(&path, "%s/%s", real, name.buf);
	buf_reset(&why);
	switch (check_extension(dirfd, name.buf, &why)) {
	case 0:
		*so_path = buf_detach(&path, NULL);
		ret = 0;
		goto out;
	case 1:
		/* In a directory only we can write to: ours to replace. */
		if (unlinkat(dirfd, name.buf, 0) < 0) {
			buf_addf(err, "cannot remove the untrusted '%s': %s", path.buf, strerror(errno));
			goto out;
		}
		buf_addf(note, "%s%s in the cache, so it was built again", note->len ? "; " : "", why.buf);
		break;
	default: break;
	}

	if (compile_into(&info, python, ext, srcpath.buf, dirfd, real, name.buf, err) < 0)
		goto out;
	*so_path = buf_detach(&path, NULL);
	ret = 0;
out:
	if (dirfd >= 0)
		close(dirfd);
	free(root);
	free(real);
	buf_release(&src);
	buf_release(&path);
	buf_release(&dir);
	buf_release(&name);
	buf_release(&why);
	buf_release(&srcpath);
	strvec_clear(&headers);
	return ret;
}

int ext_build_ensure(const char *python, const char *datadir, const char *ext, const char *scratch, char **so_path,
		     struct buf *note, struct buf *err)
{
	struct py_info info;
	int ret;

	*so_path = NULL;
	if (py_info_query(python, &info, err) < 0)
		return -1;
	ret = ext_build_for(python, &info, datadir, ext, scratch, so_path, note, err);
	py_info_release(&info);
	return ret;
}

/* Reads the little-endian 32-bit word at p. */
static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * Whether the .pyc name in dir (a __pycache__) is one the interpreter will
 * use for the source whose stat is src: a trusted file (check_extension)
 * with a timestamp header (3.7+: magic, flags 0, mtime, size) that matches
 * it.  The magic number is the interpreter's to check: on a mismatch it
 * compiles the source, as without the cache.  0 yes, 1 no (why), -1 none.
 */
static int check_pyc(int dir, const char *name, const struct stat *src, struct buf *why)
{
	unsigned char h[16];
	int fd, ret = check_extension(dir, name, why);

	if (ret)
		return ret;
	fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || read(fd, h, sizeof(h)) != (ssize_t)sizeof(h) || le32(h + 4) != 0 ||
	    le32(h + 8) != (uint32_t)src->st_mtime || le32(h + 12) != (uint32_t)src->st_size)
		buf_addf(why, "'%s' is not the bytecode of the bootstrap beside it", name);
	if (fd >= 0)
		close(fd);
	return why->len ? 1 : 0;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Writes data to name in dir atomically (a temporary name, then rename), mode 0644. */
static int write_private_file(int dir, const char *name, const struct buf *data)
{
	struct buf tmp = BUF_INIT;
	int fd, ret = -1;

	buf_addf(&tmp, "%s.tmp.%ld", name, (long)getpid());
	unlinkat(dir, tmp.buf, 0);
	fd = openat(dir, tmp.buf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		goto out;
	if (write_all(fd, data->buf, data->len) == 0 && fchmod(fd, 0644) == 0 && close(fd) == 0) {
		fd = -1;
		ret = renameat(dir, tmp.buf, dir, name);
	}
	if (fd >= 0)
		close(fd);
	if (ret < 0)
		unlinkat(dir, tmp.buf, 0);
out:
	buf_release(&tmp);
	return ret;
}

static const char compile_script[] = "import py_compile, sys\n"
				     "py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True,\n"
				     "                   invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)\n";

/*
 * Has python compile real/file into pycache (the directory pcfd) as pyc:
 * into a temporary name there, then renamed.  0, or -1 with the reason in why.
 */
static int compile_pyc(const char *python, const char *real, const char *file, int pcfd, const char *pycache,
		       const char *pyc, struct buf *why)
{
	struct buf src = BUF_INIT, dst = BUF_INIT, tmp = BUF_INIT, out = BUF_INIT;
	const char *argv[] = { python, "-S", "-E", "-c", compile_script, NULL, NULL, NULL };
	int status = 0, ret;

	buf_addf(&src, "%s/%s", real, file);
	buf_addf(&tmp, "%s.tmp.%ld", pyc, (long)getpid());
	buf_addf(&dst, "%s/%s", pycache, tmp.buf);
	argv[5] = src.buf;
	argv[6] = dst.buf;
	ret = run_capture(argv, false, &out, &status, why);
	if (!ret && status) {
		buf_addf(why, "'%s' did not compile it (exit status %d)", python, status);
		add_head(why, &out, 3);
		ret = -1;
	}
	if (!ret && renameat(pcfd, tmp.buf, pcfd, pyc) < 0) {
		buf_addf(why, "cannot install '%s/%s': %s", pycache, pyc, strerror(errno));
		ret = -1;
	}
	if (ret)
		unlinkat(pcfd, tmp.buf, 0);
	buf_release(&src);
	buf_release(&dst);
	buf_release(&tmp);
	buf_release(&out);
	return ret;
}

/*
 * The bootstrap's cache directory for python: <root>/_boot/<source hash>/
 * with a copy of the bootstrap and its bytecode in __pycache__, compiled by
 * python once.  NULL (note says why, unless there is nothing to say) when
 * the source bootstrap has to be used.
 */
static char *boot_cache_for(const char *python, const struct py_info *info, const char *datadir, const char *boot,
			    struct buf *note)
{
	static const char file[] = "sitecustomize.py";
	struct buf src = BUF_INIT, have = BUF_INIT, path = BUF_INIT, why = BUF_INIT, pyc = BUF_INIT;
	char *root = NULL, *real = NULL, *ret = NULL;
	int dirfd = -1, pcfd = -1;
	bool said;
	struct stat st;

	/* Older interpreters have another .pyc header and only hand over. */
	if (info->major < 3 || (info->major == 3 && info->minor < 7) || !*info->cache_tag ||
	    strchr(info->cache_tag, '/'))
		goto out;
	buf_addf(&path, "%s/coldstart/%s/%s", datadir, boot, file);
	if (buf_read_file(&src, path.buf) < 0)
		goto out;
	root = trace_build_cache_root();
	if (!root)
		goto out; /* the tracer's note says so */
	buf_reset(&path);
	buf_addf(&path, "%s/_boot/%016llx", root, (unsigned long long)hash_bytes(src.buf, src.len));
	dirfd = open_private_dir(path.buf, 3, &real, &why);
	if (dirfd < 0)
		goto refused;
	/* The copy: ours, written by nobody else, the same bytes, or written again. */
	buf_reset(&path);
	buf_addf(&path, "%s/%s", real, file);
	if (check_extension(dirfd, file, &why) != 0 || buf_read_file(&have, path.buf) < 0 || have.len != src.len ||
	    memcmp(have.buf, src.buf, src.len)) {
		buf_reset(&why);
		if ((unlinkat(dirfd, file, 0) < 0 && errno != ENOENT) || write_private_file(dirfd, file, &src) < 0) {
			buf_addf(&why, "cannot write '%s/%s': %s", real, file, strerror(errno));
			goto refused;
		}
	}
	if (fstatat(dirfd, file, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		buf_addf(&why, "cannot stat '%s/%s': %s", real, file, strerror(errno));
		goto refused;
	}
	if (mkdirat(dirfd, "__pycache__", 0700) < 0 && errno != EEXIST) {
		buf_addf(&why, "cannot create '%s/__pycache__': %s", real, strerror(errno));
		goto refused;
	}
	buf_reset(&path);
	buf_addf(&path, "%s/__pycache__", real);
	pcfd = openat(dirfd, "__pycache__", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (pcfd < 0) {
		buf_addf(&why, "cannot open '%s': not a directory (a symbolic link?)", path.buf);
		goto refused;
	}
	{
		struct stat pst;

		if (fstat(pcfd, &pst) < 0 || check_dir(path.buf, &pst, true, &why) < 0)
			goto refused;
	}
	buf_addf(&pyc, "sitecustomize.%s.pyc", info->cache_tag);
	switch (check_pyc(pcfd, pyc.buf, &st, &why)) {
	case 0: break;
	case 1:
		if (unlinkat(pcfd, pyc.buf, 0) < 0) {
			buf_addf(&why, "; cannot remove it: %s", strerror(errno));
			goto refused;
		}
		/* fall through */
	default:
		buf_reset(&why);
		if (compile_pyc(python, real, file, pcfd, path.buf, pyc.buf, &why) < 0 ||
		    check_pyc(pcfd, pyc.buf, &st, &why) != 0)
			goto refused;
	}
	ret = real;
	real = NULL;
	goto out;
refused:
	if (!why.len)
		buf_adds(&why, strerror(errno));
	/* The tracer's note already says why when the cache is refused. */
	said = note->len && strstr(note->buf, why.buf);
	buf_addf(note, "%sthe bootstrap is compiled in every process", note->len ? "; " : "");
	if (!said)
		buf_addf(note, ": %s", why.buf);
out:
	if (pcfd >= 0)
		close(pcfd);
	if (dirfd >= 0)
		close(dirfd);
	free(root);
	free(real);
	buf_release(&src);
	buf_release(&have);
	buf_release(&path);
	buf_release(&why);
	buf_release(&pyc);
	return ret;
}

char *boot_cache_ensure(const char *python, const char *datadir, const char *boot, struct buf *note)
{
	struct py_info info;
	struct buf err = BUF_INIT;
	char *dir = NULL;

	if (py_info_query(python, &info, &err) == 0) {
		dir = boot_cache_for(python, &info, datadir, boot, note);
		py_info_release(&info);
	}
	buf_release(&err);
	return dir;
}

int trace_build_ensure(const char *python, const char *datadir, const char *scratch, char **so_path, char **boot_dir,
		       struct buf *note, struct buf *err)
{
	struct py_info info;
	int ret;

	*so_path = NULL;
	*boot_dir = NULL;
	if (py_info_query(python, &info, err) < 0)
		return -1;
	ret = ext_build_for(python, &info, datadir, "_tracer", scratch, so_path, note, err);
	*boot_dir = boot_cache_for(python, &info, datadir, "_boot", note);
	py_info_release(&info);
	return ret;
}
