/*
 * Where cgroups can be made and how their files are touched: the cgroup
 * mounts of /proc/self/mountinfo (or the plain tree that stands in for them
 * in tests), small-file reads and writes, and the two ways of touching a
 * cgroup directory (see cgroup_fs.h).
 */
#include "sys/cgroup_fs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const cg_v1_names[V1__COUNT] = { "cpu", "cpuacct", "memory", "pids", "cpuset" };

static bool path_exists(const char *path)
{
	struct stat st;

	return !stat(path, &st);
}

static void push_unique(struct strvec *sv, const char *path)
{
	size_t i;

	for (i = 0; i < sv->nr; i++)
		if (!strcmp(sv->v[i], path))
			return;
	strvec_push(sv, path);
}

/*
 * Joins a mount point and a cgroup path; the mount's own root (field 4 of
 * mountinfo, not "/" inside some containers) is taken off the path first.
 */
static void join_mount(struct buf *out, const char *mnt, const char *mroot, const char *cgpath)
{
	size_t rl = strlen(mroot);

	buf_reset(out);
	buf_adds(out, mnt);
	if (strcmp(mroot, "/") && !strncmp(cgpath, mroot, rl) && (cgpath[rl] == '/' || !cgpath[rl]))
		cgpath += rl;
	if (strcmp(cgpath, "/"))
		buf_adds(out, cgpath);
}

static char *own_cgroup(const char *cgroup_file, const char *ctl)
{
	const char *line = cgroup_file;
	char *found = NULL;

	while (line && *line && !found) {
		const char *c1 = strchr(line, ':');
		const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		const char *nl = strchr(line, '\n');
		size_t end = nl ? (size_t)(nl - line) : strlen(line);

		if (c2 && (size_t)(c2 - line) < end) {
			struct buf ctls = BUF_INIT;

			buf_add(&ctls, c1 + 1, (size_t)(c2 - c1 - 1));
			for (char *p = ctls.buf; *p; p++)
				if (*p == ',')
					*p = ' ';
			if ((!*ctl && !ctls.len && !strncmp(line, "0:", 2)) || (*ctl && cg_has_word(ctls.buf, ctl)))
				found = xstrndup(c2 + 1, end - (size_t)(c2 + 1 - line));
			buf_release(&ctls);
		}
		line = nl ? nl + 1 : NULL;
	}
	return found;
}

static void add_v2_candidates(struct cg_places *pl, const char *mnt, const char *path)
{
	char *parent;
	char *slash;

	push_unique(&pl->v2, path);
	parent = xstrdup(path);
	slash = strrchr(parent, '/');
	if (slash && slash > parent && strlen(parent) > strlen(mnt)) {
		*slash = '\0';
		push_unique(&pl->v2, parent);
	}
	free(parent);
}

/* The plain tree at root: a cgroup2 tree with ROOT/cgroup.controllers, else ROOT/<controller>/ for v1. */
static void find_plain_tree(struct cg_places *pl, const char *root)
{
	struct buf path = BUF_INIT;
	size_t i;

	pl->fs = &cgfs_plain_tree;
	pl->root = root;
	if (cg_file_in(root, "cgroup.controllers")) {
		strvec_push(&pl->v2, root);
		return;
	}
	for (i = 0; i < V1__COUNT; i++) {
		buf_reset(&path);
		buf_addf(&path, "%s/%s", root, cg_v1_names[i]);
		if (cg_file_in(path.buf, "cgroup.procs"))
			strvec_push(&pl->v1[i], path.buf);
	}
	buf_release(&path);
}

/*
 * One line of mountinfo, split into fields f (sep: the index of "-"): a
 * cgroup2 mount adds v2 candidates, a v1 mount its controllers' places.
 * cgf is /proc/self/cgroup, which says where we are in each hierarchy.
 */
static void add_mount(struct cg_places *pl, const struct strvec *f, size_t sep, const char *cgf)
{
	const char *fstype = f->v[sep + 1];
	const char *mroot = f->v[3], *mnt = f->v[4];
	struct buf path = BUF_INIT;
	size_t i;

	if (!strcmp(fstype, "cgroup2")) {
		char *own = own_cgroup(cgf, "");

		if (own) {
			join_mount(&path, mnt, mroot, own);
			add_v2_candidates(pl, mnt, path.buf);
			free(own);
		}
	} else if (!strcmp(fstype, "cgroup")) {
		struct buf opts = BUF_INIT;

		buf_adds(&opts, f->v[sep + 3]);
		for (char *q = opts.buf; *q; q++)
			if (*q == ',')
				*q = ' ';
		for (i = 0; i < V1__COUNT; i++) {
			char *own;

			if (!cg_has_word(opts.buf, cg_v1_names[i]))
				continue;
			own = own_cgroup(cgf, cg_v1_names[i]);
			if (own) {
				join_mount(&path, mnt, mroot, own);
				push_unique(&pl->v1[i], path.buf);
				free(own);
			}
			push_unique(&pl->v1[i], mnt);
		}
		buf_release(&opts);
	}
	buf_release(&path);
}

/* Writes value into path, opened with flags; -1 with a message in err (when not NULL). */
static int write_file(const char *path, int flags, const char *value, struct buf *err)
{
	size_t len = strlen(value);
	ssize_t n = -1;
	int fd = open(path, flags | O_WRONLY | O_CLOEXEC, 0644);

	if (fd >= 0) {
		do
			n = write(fd, value, len);
		while (n < 0 && errno == EINTR);
		if (n >= 0 && (size_t)n != len)
			errno = EIO;
		close(fd);
	}
	if (fd < 0 || n < 0 || (size_t)n != len) {
		if (err)
			buf_addf(err, "cannot write '%s' to '%s': %s", value, path, strerror(errno));
		return -1;
	}
	return 0;
}

/* On a cgroupfs a missing file means a missing controller: the write must fail. */
static int kernel_write(const char *dir, const char *file, const char *value, struct buf *err)
{
	struct buf p = BUF_INIT;
	int ret;

	buf_addf(&p, "%s/%s", dir, file);
	ret = write_file(p.buf, 0, value, err);
	buf_release(&p);
	return ret;
}

static int kernel_make(const char *dir)
{
	return mkdir(dir, 0755);
}

static int kernel_remove(const char *dir)
{
	return rmdir(dir);
}

static int kernel_kill(pid_t pid)
{
	/* Never ourselves, nor init. */
	if (pid > 1 && pid != getpid())
		kill(pid, SIGKILL);
	return 0;
}

static bool kernel_has_control(const char *dir, const char *file)
{
	return cg_file_in(dir, file);
}

/*
 * A plain tree creates the file it is written to, and emulates the one
 * write whose meaning is not its content: "+ctl" into cgroup.subtree_control
 * adds ctl to the list.
 */
static int plain_write(const char *dir, const char *file, const char *value, struct buf *err)
{
	struct buf p = BUF_INIT, list = BUF_INIT;
	int ret;

	buf_addf(&p, "%s/%s", dir, file);
	if (!strcmp(file, "cgroup.subtree_control") && value[0] == '+') {
		if (cg_read_small(p.buf, &list) && errno != ENOENT) {
			if (err)
				buf_addf(err, "cannot write '%s' to '%s': %s", value, p.buf, strerror(errno));
			ret = -1;
			goto out;
		}
		cg_trim(&list);
		if (!cg_has_word(list.buf, value + 1))
			buf_addf(&list, "%s%s", list.len ? " " : "", value + 1);
		value = list.buf;
	}
	ret = write_file(p.buf, O_CREAT | O_TRUNC, value, err);
out:
	buf_release(&p);
	buf_release(&list);
	return ret;
}

/* The kernel gives a new cgroup its cgroup.procs; a plain tree gets an empty one. */
static int plain_make(const char *dir)
{
	struct buf p = BUF_INIT;
	int ret;

	if (mkdir(dir, 0755))
		return -1;
	buf_addf(&p, "%s/cgroup.procs", dir);
	ret = write_file(p.buf, O_CREAT | O_TRUNC, "", NULL);
	buf_release(&p);
	return ret;
}

/* The files a plain tree's cgroup holds go first: rmdir of a cgroupfs directory needs no such step. */
static int plain_remove(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct buf p = BUF_INIT;

	if (d) {
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			buf_reset(&p);
			buf_addf(&p, "%s/%s", dir, de->d_name);
			unlink(p.buf);
		}
		closedir(d);
	}
	buf_release(&p);
	return rmdir(dir);
}

/* The pids of a plain tree are fiction. */
static int plain_kill(pid_t pid)
{
	return -1;
}

/* Every control file a write creates is there. */
static bool plain_has_control(const char *dir, const char *file)
{
	return true;
}

const struct cgfs_ops cgfs_kernel = {
	.write = kernel_write,
	.make = kernel_make,
	.remove = kernel_remove,
	.kill = kernel_kill,
	.has_control = kernel_has_control,
};

const struct cgfs_ops cgfs_plain_tree = {
	.write = plain_write,
	.make = plain_make,
	.remove = plain_remove,
	.kill = plain_kill,
	.has_control = plain_has_control,
};

void cg_places_init(struct cg_places *pl)
{
	size_t i;

	pl->fs = &cgfs_kernel;
	pl->root = NULL;
	strvec_init(&pl->v2);
	for (i = 0; i < V1__COUNT; i++)
		strvec_init(&pl->v1[i]);
}

void cg_places_release(struct cg_places *pl)
{
	size_t i;

	strvec_clear(&pl->v2);
	for (i = 0; i < V1__COUNT; i++)
		strvec_clear(&pl->v1[i]);
}

bool cg_file_in(const char *dir, const char *file)
{
	struct buf p = BUF_INIT;
	bool ok;

	buf_addf(&p, "%s/%s", dir, file);
	ok = path_exists(p.buf);
	buf_release(&p);
	return ok;
}

int cg_read_small(const char *path, struct buf *sb)
{
	char chunk[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	buf_reset(sb);
	if (fd < 0)
		return -1;
	while ((n = read(fd, chunk, sizeof(chunk))) != 0) {
		if (n < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			close(fd);
			errno = e;
			return -1;
		}
		buf_add(sb, chunk, (size_t)n);
	}
	close(fd);
	return 0;
}

void cg_trim(struct buf *sb)
{
	size_t n = sb->len;

	while (n && isspace((unsigned char)sb->buf[n - 1]))
		n--;
	buf_setlen(sb, n);
}

int cg_read(const char *dir, const char *file, struct buf *sb)
{
	struct buf p = BUF_INIT;
	int ret;

	buf_addf(&p, "%s/%s", dir, file);
	ret = cg_read_small(p.buf, sb);
	buf_release(&p);
	return ret;
}

int64_t cg_keyed_value(const char *text, const char *key)
{
	size_t klen = strlen(key);
	const char *line = text;

	while (line && *line) {
		if (!strncmp(line, key, klen) && line[klen] == ' ') {
			char *end;
			long long v;

			errno = 0;
			v = strtoll(line + klen + 1, &end, 10);
			if (!errno && end != line + klen + 1 && v >= 0)
				return v;
			return UNKNOWN;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return UNKNOWN;
}

int64_t cg_keyed(const char *dir, const char *file, const char *key)
{
	struct buf sb = BUF_INIT;
	int64_t v = UNKNOWN;

	if (dir && !cg_read(dir, file, &sb))
		v = cg_keyed_value(sb.buf, key);
	buf_release(&sb);
	return v;
}

int64_t cg_number(const char *dir, const char *file)
{
	struct buf sb = BUF_INIT;
	int64_t v = UNKNOWN;
	char *end;
	long long n;

	if (dir && !cg_read(dir, file, &sb) && isdigit((unsigned char)sb.buf[0])) {
		errno = 0;
		n = strtoll(sb.buf, &end, 10);
		if (!errno && (*end == '\n' || !*end))
			v = n;
	}
	buf_release(&sb);
	return v;
}

bool cg_has_word(const char *list, const char *word)
{
	size_t wl = strlen(word);
	const char *p = list;

	while (*p) {
		while (*p && isspace((unsigned char)*p))
			p++;
		if (!strncmp(p, word, wl) && (!p[wl] || isspace((unsigned char)p[wl])))
			return true;
		while (*p && !isspace((unsigned char)*p))
			p++;
	}
	return false;
}

int cg_read_procs(const char *dir, pid_t **pids, size_t *nr, size_t *alloc)
{
	struct buf sb = BUF_INIT;
	char *p, *end;

	if (cg_read(dir, "cgroup.procs", &sb)) {
		int e = errno;

		buf_release(&sb);
		/* Gone already, or a plain tree's directory that a test laid out without one. */
		return e == ENOENT ? 0 : -1;
	}
	for (p = sb.buf; *p; p = end) {
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (end == p) {
			end = p + 1;
			continue;
		}
		if (!errno && v > 0) {
			ALLOC_GROW(*pids, *nr + 1, *alloc);
			(*pids)[(*nr)++] = (pid_t)v;
		}
	}
	buf_release(&sb);
	return 0;
}

void cg_swap_note(struct buf *note, const char *file)
{
	struct buf sb = BUF_INIT;
	bool host_swap = false;

	/* /proc/swaps has a header line, then one line per swap area. */
	if (!cg_read_small("/proc/swaps", &sb)) {
		char *nl = strchr(sb.buf, '\n');

		host_swap = nl && nl[1];
	}
	buf_addf(note, "no swap limit could be set ('%s' is missing: swap accounting is off); %s", file,
		 host_swap ? "this host has swap, so a run may swap beyond --memory instead of being OOM-killed"
			   : "this host has no swap, so runs cannot swap anyway");
	buf_release(&sb);
}

void cg_places_find(struct cg_places *pl)
{
	const char *root = getenv("COLDSTART_CGROUP_ROOT");
	struct buf mi = BUF_INIT, cgf = BUF_INIT;
	const char *line;

	if (root && *root) {
		find_plain_tree(pl, root);
		return;
	}
	pl->fs = &cgfs_kernel;
	if (cg_read_small("/proc/self/mountinfo", &mi) || cg_read_small("/proc/self/cgroup", &cgf))
		goto out;
	for (line = mi.buf; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		struct strvec f = STRVEC_INIT;
		const char *nl = strchr(line, '\n');
		char *copy = xstrndup(line, nl ? (size_t)(nl - line) : strlen(line));
		char *p = copy;
		size_t sep = 0;

		/*
		 * Fields are space-separated; a mount point with a space would
		 * read as \040, which cgroup mounts do not use.
		 */
		while (*p) {
			char *e = strchr(p, ' ');

			if (e)
				*e = '\0';
			strvec_push(&f, p);
			if (!strcmp(p, "-") && !sep)
				sep = f.nr - 1;
			if (!e)
				break;
			p = e + 1;
		}
		if (sep && f.nr >= sep + 4 && f.nr > 5)
			add_mount(pl, &f, sep, cgf.buf);
		strvec_clear(&f);
		free(copy);
	}
out:
	buf_release(&mi);
	buf_release(&cgf);
}
