/*
 * Choosing the record of the process that answered among those a planning
 * run's processes wrote (see plan_pick.h).
 */
#include "plan/plan_pick.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "plan/plan_verify.h"

struct rec {
	char *path;
	long pid; /* 0: the started process's record */
	json_t *root; /* the record as read, NULL unreadable */
	json_int_t used; /* the summary's "load"; -1 unreadable */
	bool failed; /* the recorder's failure, not a plan */
};

/* The directory and file name of path, split at its last '/'. */
static void split_path(const char *path, struct buf *dir, const char **base)
{
	const char *slash = strrchr(path, '/');

	buf_reset(dir);
	if (slash) {
		buf_add(dir, path, slash == path ? 1 : (size_t)(slash - path));
		*base = slash + 1;
	} else {
		buf_adds(dir, ".");
		*base = path;
	}
}

static void read_rec(struct rec *r)
{
	json_t *load, *fmt;

	r->root = json_load_file(r->path, 0, NULL);
	load = json_object_get(json_object_get(r->root, "summary"), "load");
	fmt = json_object_get(r->root, "format");
	r->used = json_is_integer(load) ? json_integer_value(load) : -1;
	r->failed = json_is_string(fmt) && !strcmp(json_string_value(fmt), "coldstart-plan-error");
}

/*
 * The code archive a forked child's record r names (CODE.pidN, owned by
 * r->root), or NULL; *stem is the length of CODE.
 */
static const char *child_archive(const struct rec *r, size_t *stem)
{
	json_t *path = json_object_get(json_object_get(r->root, "code"), "path");
	char suffix[32];
	const char *s;
	size_t n, k;

	if (!r->pid || !json_is_string(path))
		return NULL;
	s = json_string_value(path);
	k = (size_t)snprintf(suffix, sizeof(suffix), ".pid%ld", r->pid);
	n = strlen(s);
	if (n <= k || strcmp(s + n - k, suffix))
		return NULL;
	*stem = n - k;
	return s;
}

static void remove_rec(const struct rec *r)
{
	size_t stem;
	const char *code = child_archive(r, &stem);

	if (code)
		unlink(code);
	unlink(r->path);
}

/* Moves the forked child's record r (and its archive) to record. */
static int keep_child(const struct rec *r, const char *record, struct buf *err)
{
	struct buf tmp = BUF_INIT;
	const char *code;
	size_t stem;
	int ret = -1;

	if (!r->root) {
		buf_addf(err, "cannot read the record of process %ld", r->pid);
		goto out;
	}
	code = child_archive(r, &stem);
	if (code) {
		char *to = xstrndup(code, stem);

		if (rename(code, to) < 0) {
			buf_addf(err, "cannot move the code archive '%s': %s", code, strerror(errno));
			free(to);
			goto out;
		}
		json_object_set_new(json_object_get(r->root, "code"), "path", json_string(to));
		free(to);
	}
	buf_addf(&tmp, "%s.pick", record);
	if (plan_write_json(r->root, tmp.buf, err) < 0)
		goto out;
	if (rename(tmp.buf, record) < 0) {
		buf_addf(err, "cannot write '%s': %s", record, strerror(errno));
		unlink(tmp.buf);
		goto out;
	}
	unlink(r->path);
	ret = 0;
out:
	buf_release(&tmp);
	return ret;
}

/* r is a better choice than best: a failure first, then more modules used, then the started process. */
static bool better(const struct rec *r, const struct rec *best)
{
	if (r->failed != best->failed)
		return r->failed;
	if (r->used != best->used)
		return r->used > best->used;
	return !r->pid || (best->pid && r->pid < best->pid);
}

int plan_pick_record(const char *record, bool by_use, struct buf *note, struct buf *err)
{
	struct buf dir = BUF_INIT, prefix = BUF_INIT, path = BUF_INIT;
	struct rec *recs = NULL;
	size_t nr = 0, alloc = 0, i, best = 0;
	const char *base;
	struct dirent *de;
	DIR *d;
	int ret = 0;

	split_path(record, &dir, &base);
	buf_addf(&prefix, "%s.pid", base);
	if (!access(record, F_OK)) {
		ALLOC_GROW(recs, nr + 1, alloc);
		recs[nr++] = (struct rec){ .path = xstrdup(record), .pid = 0 };
	}
	d = opendir(dir.buf);
	while (d && (de = readdir(d))) {
		const char *rest;
		char *end;
		long pid;

		if (strncmp(de->d_name, prefix.buf, prefix.len))
			continue;
		rest = de->d_name + prefix.len;
		pid = strtol(rest, &end, 10);
		if (pid <= 0 || *end || !*rest)
			continue;
		buf_reset(&path);
		buf_addf(&path, "%s/%s", dir.buf, de->d_name);
		ALLOC_GROW(recs, nr + 1, alloc);
		recs[nr++] = (struct rec){ .path = xstrdup(path.buf), .pid = pid };
	}
	if (d)
		closedir(d);
	for (i = 0; i < nr; i++)
		read_rec(&recs[i]);
	for (i = 1; by_use && i < nr; i++)
		if (better(&recs[i], &recs[best]))
			best = i;
	if (!by_use && nr && recs[0].pid)
		best = nr; /* the started process wrote none: keep no child's */
	for (i = 0; i < nr; i++)
		if (i != best && recs[i].pid)
			remove_rec(&recs[i]);
	if (best < nr && recs[best].pid) {
		if (recs[0].pid == 0)
			unlink(recs[0].path);
		ret = keep_child(&recs[best], record, err);
	}
	if (by_use && nr > 1 && best < nr)
		buf_addf(note,
			 "%zu processes recorded (%s%zu it forked); the plan is the one of %s, whose "
			 "requests used the most modules (%lld)",
			 nr, recs[0].pid ? "" : "the target and ", recs[0].pid ? nr : nr - 1,
			 recs[best].pid ? "a forked child" : "the target", (long long)recs[best].used);
	for (i = 0; i < nr; i++) {
		free(recs[i].path);
		json_decref(recs[i].root);
	}
	free(recs);
	buf_release(&dir);
	buf_release(&prefix);
	buf_release(&path);
	return ret;
}
