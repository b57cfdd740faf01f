/*
 * Snapshots of a working directory's tree for `coldstart plan --verify`
 * (see plan_files.h).
 */
#include "plan/plan_files.h"
#include "outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_ENTRIES 20000
#define MAX_BYTES ((uint64_t)256 << 20)

struct entry {
	char *path; /* relative to the root */
	mode_t mode;
	uint64_t size;
	uint64_t hash; /* of a regular file's contents */
	struct timespec mtime;
	char *copy; /* a regular file's copy in the store (snapshots only) */
	char *link; /* a symbolic link's target */
};

struct plan_files {
	char *root;
	char *skip;
	struct entry *e;
	size_t nr, alloc;
	uint64_t bytes;
};

/* A walk: the tree into t; copies into store/prefix-N when store is set. */
struct walk {
	struct plan_files *t;
	const char *store;
	const char *prefix;
	struct buf *err;
	bool contents; /* hash the files (and copy them when store is set) */
};

static void fnv(uint64_t *h, const char *p, size_t n)
{
	while (n--) {
		*h ^= (unsigned char)*p++;
		*h *= 1099511628211ULL;
	}
}

/* Hashes the file at fd (and copies it to out >= 0); -1 on a read or write error. */
static int hash_copy(int fd, int out, uint64_t *hash, uint64_t *size)
{
	char chunk[65536];
	ssize_t n;

	*hash = 14695981039346656037ULL;
	*size = 0;
	while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
		fnv(hash, chunk, n);
		*size += n;
		if (out >= 0 && write_full(out, chunk, n) < 0)
			return -1;
	}
	return n < 0 ? -1 : 0;
}

static int add_entry(struct walk *w, const char *rel, const char *full, const struct stat *st)
{
	struct plan_files *t = w->t;
	struct entry *e;

	if (t->nr >= MAX_ENTRIES) {
		buf_addf(w->err, "more than %d files and directories", MAX_ENTRIES);
		return -1;
	}
	ALLOC_GROW(t->e, t->nr + 1, t->alloc);
	e = &t->e[t->nr++];
	memset(e, 0, sizeof(*e));
	e->path = xstrdup(rel);
	e->mode = st->st_mode;
	e->mtime = st->st_mtim;
	if (S_ISLNK(st->st_mode)) {
		char target[4096];
		ssize_t n = readlink(full, target, sizeof(target) - 1);

		target[n > 0 ? n : 0] = '\0';
		e->link = xstrdup(target);
	} else if (S_ISREG(st->st_mode) && !w->contents) {
		e->size = (uint64_t)st->st_size;
		t->bytes += e->size;
		if (t->bytes > MAX_BYTES) {
			buf_addf(w->err, "more than %llu MiB of files", (unsigned long long)(MAX_BYTES >> 20));
			return -1;
		}
	} else if (S_ISREG(st->st_mode)) {
		int fd = open(full, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), out = -1, rc;
		struct buf copy = BUF_INIT;

		if (fd < 0) {
			buf_addf(w->err, "cannot read '%s': %s", full, strerror(errno));
			return -1;
		}
		if (w->store) {
			buf_addf(&copy, "%s/%s-%zu", w->store, w->prefix, t->nr);
			out = open(copy.buf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		}
		rc = w->store && out < 0 ? -1 : hash_copy(fd, out, &e->hash, &e->size);
		close(fd);
		if (out >= 0 && close(out) < 0)
			rc = -1;
		if (rc < 0) {
			buf_addf(w->err, "cannot copy '%s': %s", full, strerror(errno));
			if (copy.len)
				unlink(copy.buf);
			buf_release(&copy);
			return -1;
		}
		if (w->store)
			e->copy = buf_detach(&copy, NULL);
		buf_release(&copy);
		t->bytes += e->size;
		if (w->store && t->bytes > MAX_BYTES) {
			buf_addf(w->err, "more than %llu MiB of files", (unsigned long long)(MAX_BYTES >> 20));
			return -1;
		}
	}
	return 0;
}

static int walk_dir(struct walk *w, const char *rel)
{
	struct buf full = BUF_INIT, sub = BUF_INIT;
	struct dirent *de;
	DIR *d;
	int ret = 0;

	buf_addf(&full, "%s%s%s", w->t->root, *rel ? "/" : "", rel);
	d = opendir(full.buf);
	if (!d) {
		buf_addf(w->err, "cannot read '%s': %s", full.buf, strerror(errno));
		buf_release(&full);
		return -1;
	}
	while (!ret && (de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, "__pycache__"))
			continue;
		buf_reset(&sub);
		buf_addf(&sub, "%s%s%s", rel, *rel ? "/" : "", de->d_name);
		buf_reset(&full);
		buf_addf(&full, "%s/%s", w->t->root, sub.buf);
		if (w->t->skip && !strcmp(full.buf, w->t->skip))
			continue;
		if (lstat(full.buf, &st) < 0)
			continue; /* gone meanwhile */
		if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode))
			continue;
		ret = add_entry(w, sub.buf, full.buf, &st);
		if (!ret && S_ISDIR(st.st_mode))
			ret = walk_dir(w, sub.buf);
	}
	closedir(d);
	buf_release(&full);
	buf_release(&sub);
	return ret;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->path, ((const struct entry *)b)->path);
}

/* The tree at root now (no copies), sorted; NULL with err. */
static struct plan_files *scan(const char *root, const char *skip, const char *store, const char *prefix, bool contents,
			       struct buf *err)
{
	struct plan_files *t = xcalloc(1, sizeof(*t));
	struct walk w = { t, store, prefix, err, contents };

	t->root = xstrdup(root);
	t->skip = skip ? xstrdup(skip) : NULL;
	if (walk_dir(&w, "") < 0) {
		plan_files_free(t);
		return NULL;
	}
	qsort(t->e, t->nr, sizeof(*t->e), by_path);
	return t;
}

struct plan_files *plan_files_snapshot(const char *dir, const char *store, const char *prefix, const char *skip,
				       struct buf *err)
{
	/* Sizes first: a tree over the limits is not copied at all. */
	struct plan_files *t = scan(dir, skip, NULL, NULL, false, err);

	if (!t)
		return NULL;
	plan_files_free(t);
	return scan(dir, skip, store, prefix, true, err);
}

void plan_files_free(struct plan_files *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nr; i++) {
		free(t->e[i].path);
		free(t->e[i].copy);
		free(t->e[i].link);
	}
	free(t->e);
	free(t->root);
	free(t->skip);
	free(t);
}

static bool same_entry(const struct entry *a, const struct entry *b)
{
	if ((a->mode & S_IFMT) != (b->mode & S_IFMT))
		return false;
	if (S_ISREG(a->mode))
		return a->size == b->size && a->hash == b->hash;
	if (S_ISLNK(a->mode))
		return !strcmp(a->link, b->link);
	return true;
}

static void describe(struct buf *out, const char *what, const struct entry *e)
{
	buf_addf(out, "%s %s%s", what, e->path, S_ISDIR(e->mode) ? "/" : "");
	if (S_ISREG(e->mode))
		buf_addf(out, " %llu %016llx", (unsigned long long)e->size, (unsigned long long)e->hash);
	else if (S_ISLNK(e->mode))
		buf_addf(out, " -> %s", e->link);
	buf_addch(out, '\n');
}

void plan_files_diff(const struct plan_files *snap, struct buf *out)
{
	struct buf err = BUF_INIT;
	struct plan_files *now = scan(snap->root, snap->skip, NULL, NULL, true, &err);
	size_t i = 0, j = 0;

	if (!now) {
		buf_addf(out, "cannot read the tree: %s\n", err.buf);
		buf_release(&err);
		return;
	}
	while (i < snap->nr || j < now->nr) {
		int c = i == snap->nr ? 1 : j == now->nr ? -1 : strcmp(snap->e[i].path, now->e[j].path);

		if (c < 0) {
			describe(out, "removed", &snap->e[i++]);
		} else if (c > 0) {
			describe(out, "created", &now->e[j++]);
		} else {
			if (!same_entry(&snap->e[i], &now->e[j]))
				describe(out, "changed", &now->e[j]);
			i++;
			j++;
		}
	}
	plan_files_free(now);
	buf_release(&err);
}

static int remove_entry(const char *root, const struct entry *e, struct buf *err)
{
	struct buf full = BUF_INIT;
	int rc;

	buf_addf(&full, "%s/%s", root, e->path);
	rc = S_ISDIR(e->mode) ? rmdir(full.buf) : unlink(full.buf);
	if (rc < 0 && errno == ENOENT)
		rc = 0;
	if (rc < 0 && !err->len)
		buf_addf(err, "cannot remove '%s': %s", full.buf, strerror(errno));
	buf_release(&full);
	return rc;
}

static int make_entry(const char *root, const struct entry *e, bool exists, struct buf *err)
{
	struct buf full = BUF_INIT;
	int ret = 0;

	buf_addf(&full, "%s/%s", root, e->path);
	if (S_ISDIR(e->mode)) {
		if (!exists && mkdir(full.buf, e->mode & 07777) < 0)
			ret = -1;
	} else if (S_ISLNK(e->mode)) {
		ret = symlink(e->link, full.buf);
	} else {
		int in = open(e->copy, O_RDONLY | O_CLOEXEC), out = -1;
		uint64_t h, n;
		struct timespec times[2];

		if (in >= 0)
			out = open(full.buf, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, e->mode & 07777);
		times[0].tv_nsec = UTIME_OMIT;
		times[0].tv_sec = 0;
		times[1] = e->mtime;
		if (in < 0 || out < 0 || hash_copy(in, out, &h, &n) < 0 || fchmod(out, e->mode & 07777) < 0 ||
		    futimens(out, times) < 0)
			ret = -1;
		if (in >= 0)
			close(in);
		if (out >= 0 && close(out) < 0)
			ret = -1;
	}
	if (ret < 0 && !err->len)
		buf_addf(err, "cannot restore '%s': %s", full.buf, strerror(errno));
	buf_release(&full);
	return ret;
}

int plan_files_restore(const struct plan_files *snap, struct buf *err)
{
	struct plan_files *now = scan(snap->root, snap->skip, NULL, NULL, true, err);
	bool *keep, *present;
	size_t i, j;
	int ret = 0;

	if (!now)
		return -1;
	keep = xcalloc(now->nr + 1, sizeof(*keep));
	present = xcalloc(snap->nr + 1, sizeof(*present));
	/* What both have with the same kind stays (rewritten when it differs). */
	for (i = j = 0; i < snap->nr && j < now->nr;) {
		int c = strcmp(snap->e[i].path, now->e[j].path);

		if (c < 0) {
			i++;
		} else if (c > 0) {
			j++;
		} else {
			if ((snap->e[i].mode & S_IFMT) == (now->e[j].mode & S_IFMT) &&
			    (S_ISDIR(snap->e[i].mode) || same_entry(&snap->e[i], &now->e[j]))) {
				keep[j] = true;
				present[i] = true;
			}
			i++;
			j++;
		}
	}
	/* The rest goes, children before their directories. */
	for (j = now->nr; j-- > 0;)
		if (!keep[j] && remove_entry(now->root, &now->e[j], err) < 0)
			ret = -1;
	for (i = 0; i < snap->nr; i++)
		if (!present[i] && make_entry(snap->root, &snap->e[i], false, err) < 0)
			ret = -1;
	free(keep);
	free(present);
	plan_files_free(now);
	return ret;
}
