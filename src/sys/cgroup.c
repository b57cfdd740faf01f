/*
 * Resource limits applied to a local run: a cgroup per run on cgroup v2 or
 * v1 (cgroup_v2.c, cgroup_v1.c), with its figures (CPU, throttling, peak
 * memory, OOM kills), killing what is inside, a removal that works on every
 * path, and the cleanup of what a SIGKILLed coldstart left.  The limits
 * themselves are runlimits.c's; the files are touched through cgroup_fs.c.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sys/cgroup.h"

#include "sys/cgroup_fs.h"
#include "sys/cgroup_v1.h"
#include "sys/cgroup_v2.h"
#include "sys/leftover.h"

/* How long destroy waits for processes to die and for rmdir to succeed. */
#define KILL_WAIT_MS 3000
#define RMDIR_WAIT_MS 1000
#define WHAT_TO_DO "run coldstart as root, delegate a cgroup v2 subtree to your user, or pass --no-limits"

static unsigned run_counter;

static size_t cg_dirs(const struct cgroup *cg, const char **dirs)
{
	size_t n = 0, c;

	if (cg->dir)
		dirs[n++] = cg->dir;
	for (c = 0; c < V1__COUNT; c++)
		if (cg->v1_dir[c])
			dirs[n++] = cg->v1_dir[c];
	return n;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * One pass: SIGKILLs every process listed in cg's directories.  Returns how
 * many were listed; *stuck (when not NULL) is set when one of them cannot be
 * signalled at all (a plain tree's pids are fiction), so waiting is useless.
 */
static long kill_pass(struct cgroup *cg, bool *stuck)
{
	const char *dirs[V1__COUNT + 1];
	size_t nd = cg_dirs(cg, dirs), i, nr = 0, alloc = 0;
	pid_t *pids = NULL;

	for (i = 0; i < nd; i++)
		cg_read_procs(dirs[i], &pids, &nr, &alloc);
	for (i = 0; i < nr; i++)
		if (cg->fs->kill(pids[i]) < 0 && stuck)
			*stuck = true;
	free(pids);
	if (cg->stale)
		cg->seen += (long)nr;
	return (long)nr;
}

/*
 * Removes one run directory.  rmdir says EBUSY while a dying process is
 * still accounted, so it is retried for a bounded time, killing again.
 */
static int remove_dir(struct cgroup *cg, const char *dir)
{
	int64_t deadline = now_ns() + (int64_t)RMDIR_WAIT_MS * 1000000;

	for (;;) {
		if (!cg->fs->remove(dir) || errno == ENOENT)
			return 0;
		/*
		 * A stale cgroup that stays busy with nothing listed holds
		 * processes this pid namespace cannot see: not ours to wait
		 * for, a later run tries again.
		 */
		if (errno != EBUSY || now_ns() > deadline || (cg->stale && !cg->seen))
			return -1;
		kill_pass(cg, NULL);
		sleep_ms(10);
	}
}

/*
 * A new handle; name NULL means the next coldstart-<our pid>-<n>.  Nothing
 * is created on disk yet.
 */
static struct cgroup *cg_new(const struct cgfs_ops *fs, int version, const char *name)
{
	struct cgroup *cg = xcalloc(1, sizeof(*cg));

	cg->version = version;
	cg->fs = fs;
	if (name) {
		cg->name = xstrdup(name);
	} else {
		struct buf b = BUF_INIT;

		buf_addf(&b, "coldstart-%ld-%u", (long)getpid(), run_counter++);
		cg->name = buf_detach(&b, NULL);
	}
	strvec_init(&cg->joins);
	buf_init(&cg->note, 0);
	for (size_t i = 0; i < ARRAY_SIZE(cg->locks); i++)
		cg->locks[i] = -1;
	return cg;
}

/* Takes the owner's lock on each of cg's directories, so no later run takes them for stale. */
static void cg_lock_dirs(struct cgroup *cg)
{
	const char *dirs[V1__COUNT + 1];
	size_t nd = cg_dirs(cg, dirs), i;

	for (i = 0; i < nd; i++)
		cg->locks[i] = leftover_lock(dirs[i]);
}

static void cleanup_base(const struct cgfs_ops *fs, const char *base, int version)
{
	DIR *d = opendir(base);
	struct dirent *de;
	struct buf p = BUF_INIT;

	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat st;
		pid_t pid = leftover_owner(de->d_name, "coldstart-", true);
		struct cgroup *cg;
		int lock;

		if (!pid)
			continue;
		buf_reset(&p);
		buf_addf(&p, "%s/%s", base, de->d_name);
		if (stat(p.buf, &st) || !S_ISDIR(st.st_mode) || !leftover_is_stale(p.buf, pid, &lock))
			continue;
		cg = cg_new(fs, version, de->d_name);
		cg->stale = true;
		cg->locks[0] = lock;
		if (version == 2)
			cg->dir = buf_detach(&p, NULL);
		else
			cg->v1_dir[V1_CPU] = buf_detach(&p, NULL);
		cgroup_destroy(cg);
	}
	closedir(d);
	buf_release(&p);
}

struct cgroup *cgroup_create(struct limits *lim, struct buf *err)
{
	struct cg_places pl;
	struct cgroup *cg = NULL;
	struct buf why2 = BUF_INIT, why1 = BUF_INIT;
	bool v2_ok = false, v1_any = false;
	size_t i;

	cg_places_init(&pl);
	if (limits_check(lim, err))
		goto out;
	cg_places_find(&pl);
	for (i = 0; i < pl.v2.nr; i++)
		v2_ok = v2_ok || cg_v2_usable(pl.v2.v[i], lim, NULL);
	for (i = 0; i < V1__COUNT; i++)
		v1_any = v1_any || pl.v1[i].nr;

	/* v2 when its controllers are there; v1 otherwise, or when v2 fails. */
	if (v2_ok) {
		cg = cg_new(pl.fs, 2, NULL);
		if (cg_v2_create(cg, &pl, lim, &why2)) {
			cgroup_destroy(cg);
			cg = NULL;
		}
	} else if (pl.v2.nr) {
		cg_v2_usable(pl.v2.v[0], lim, &why2);
	}
	if (!cg && v1_any) {
		cg = cg_new(pl.fs, 1, NULL);
		if (cg_v1_create(cg, &pl, lim, &why1)) {
			cgroup_destroy(cg);
			cg = NULL;
		}
	}
	if (cg) {
		cg_lock_dirs(cg);
		limits_set_backend(lim, cg->version == 2 ? "cgroup-v2" : "cgroup-v1");
		goto out;
	}
	buf_adds(err, "cannot apply resource limits: ");
	if (!pl.v2.nr && !v1_any && pl.root)
		buf_addf(err,
			 "$COLDSTART_CGROUP_ROOT '%s' holds neither a cgroup2 tree (cgroup.controllers) "
			 "nor v1 hierarchies (<controller>/cgroup.procs)",
			 pl.root);
	else if (!pl.v2.nr && !v1_any)
		buf_adds(err, "no cgroup filesystem is mounted");
	buf_add(err, why2.buf, why2.len);
	if (why1.len)
		buf_addf(err, "%s%s", why2.len ? "; " : "", why1.buf);
	buf_adds(err, "; " WHAT_TO_DO);
out:
	cg_places_release(&pl);
	buf_release(&why1);
	buf_release(&why2);
	return cg;
}

/* v2: a child of the first candidate that takes one; no controller is needed. */
static struct cgroup *unlimited_v2(const struct cg_places *pl, struct buf *why)
{
	struct cgroup *cg = cg_new(pl->fs, 2, NULL);
	struct buf dir = BUF_INIT;
	size_t i;

	for (i = 0; i < pl->v2.nr && !cg->dir; i++) {
		buf_reset(&dir);
		buf_addf(&dir, "%s/%s", pl->v2.v[i], cg->name);
		if (!pl->fs->make(dir.buf))
			cg->dir = buf_detach(&dir, NULL);
		else
			buf_addf(why, "%scannot create '%s': %s", why->len ? "; " : "", dir.buf, strerror(errno));
	}
	buf_release(&dir);
	if (!cg->dir) {
		cgroup_destroy(cg);
		return NULL;
	}
	strvec_pushf(&cg->joins, "%s/cgroup.procs", cg->dir);
	return cg;
}

/* v1: one hierarchy is enough to find the tree (cpuset is not: it needs cpus and mems). */
static struct cgroup *unlimited_v1(const struct cg_places *pl, struct buf *why)
{
	static const enum v1_ctl order[] = { V1_PIDS, V1_CPU, V1_CPUACCT, V1_MEMORY };
	struct cgroup *cg = cg_new(pl->fs, 1, NULL);
	struct buf dir = BUF_INIT;
	size_t k, i;

	for (k = 0; k < ARRAY_SIZE(order) && !cg->joins.nr; k++) {
		enum v1_ctl c = order[k];

		for (i = 0; i < pl->v1[c].nr && !cg->v1_dir[c]; i++) {
			buf_reset(&dir);
			buf_addf(&dir, "%s/%s", pl->v1[c].v[i], cg->name);
			if (pl->fs->make(dir.buf)) {
				buf_addf(why, "%scannot create '%s': %s", why->len ? "; " : "", dir.buf,
					 strerror(errno));
				continue;
			}
			cg->v1_dir[c] = buf_detach(&dir, NULL);
			strvec_pushf(&cg->joins, "%s/cgroup.procs", cg->v1_dir[c]);
		}
	}
	buf_release(&dir);
	if (!cg->joins.nr) {
		cgroup_destroy(cg);
		return NULL;
	}
	return cg;
}

struct cgroup *cgroup_create_unlimited(struct buf *err)
{
	struct cg_places pl;
	struct cgroup *cg;
	struct buf why = BUF_INIT;

	cg_places_init(&pl);
	cg_places_find(&pl);
	cg = unlimited_v2(&pl, &why);
	if (!cg)
		cg = unlimited_v1(&pl, &why);
	if (cg)
		cg_lock_dirs(cg);
	else
		buf_addf(err, "%s", why.len ? why.buf : "no cgroup filesystem is mounted");
	cg_places_release(&pl);
	buf_release(&why);
	return cg;
}

const char *const *cgroup_join_files(const struct cgroup *cg)
{
	return (const char *const *)cg->joins.v;
}

const char *cgroup_note(const struct cgroup *cg)
{
	return cg && cg->note.len ? cg->note.buf : NULL;
}

int cgroup_read_figures(struct cgroup *cg, struct cg_figures *out)
{
	out->has = true;
	out->cpu_usage_us = out->nr_periods = out->nr_throttled = UNKNOWN;
	out->throttled_us = out->memory_peak = out->oom_kills = UNKNOWN;
	if (!cg)
		return -1;
	if (cg->version == 2)
		cg_v2_figures(cg, out);
	else
		cg_v1_figures(cg, out);
	if (out->cpu_usage_us == UNKNOWN && out->nr_periods == UNKNOWN && out->memory_peak == UNKNOWN &&
	    out->oom_kills == UNKNOWN)
		return -1;
	return 0;
}

int cgroup_nr_procs(struct cgroup *cg)
{
	const char *dirs[V1__COUNT + 1];
	size_t nd = cg_dirs(cg, dirs), i;
	size_t most = 0;
	int readable = 0;

	/* A v1 process is listed once per hierarchy: count the fullest. */
	for (i = 0; i < nd; i++) {
		size_t nr = 0, alloc = 0;
		pid_t *pids = NULL;

		if (!cg_read_procs(dirs[i], &pids, &nr, &alloc)) {
			readable++;
			if (nr > most)
				most = nr;
		}
		free(pids);
	}
	return readable ? (int)most : -1;
}

int cgroup_kill_all(struct cgroup *cg)
{
	int64_t deadline = now_ns() + (int64_t)KILL_WAIT_MS * 1000000;

	if (!cg)
		return 0;
	/*
	 * cgroup.kill (Linux 5.14) also catches processes forking meanwhile,
	 * but also those this pid namespace cannot see: not for a stale
	 * cgroup, whose invisible processes are not ours to judge.
	 */
	if (cg->dir && !cg->stale && cg->fs->has_control(cg->dir, "cgroup.kill"))
		cg->fs->write(cg->dir, "cgroup.kill", "1", NULL);
	for (;;) {
		bool stuck = false;

		if (!kill_pass(cg, &stuck))
			return 0;
		if (stuck || now_ns() > deadline)
			return -1;
		sleep_ms(5);
	}
}

void cgroup_destroy(struct cgroup *cg)
{
	const char *dirs[V1__COUNT + 1];
	size_t nd, i;

	if (!cg)
		return;
	cgroup_kill_all(cg);
	nd = cg_dirs(cg, dirs);
	for (i = 0; i < nd; i++)
		remove_dir(cg, dirs[i]);
	free(cg->name);
	free(cg->dir);
	for (i = 0; i < V1__COUNT; i++)
		free(cg->v1_dir[i]);
	strvec_clear(&cg->joins);
	buf_release(&cg->note);
	for (i = 0; i < ARRAY_SIZE(cg->locks); i++)
		if (cg->locks[i] >= 0)
			close(cg->locks[i]);
	free(cg);
}

void cgroup_cleanup_stale(void)
{
	struct cg_places pl;
	size_t i, c;

	cg_places_init(&pl);
	cg_places_find(&pl);
	for (i = 0; i < pl.v2.nr; i++)
		cleanup_base(pl.fs, pl.v2.v[i], 2);
	for (c = 0; c < V1__COUNT; c++)
		for (i = 0; i < pl.v1[c].nr; i++)
			cleanup_base(pl.fs, pl.v1[c].v[i], 1);
	cg_places_release(&pl);
}

const char *cgroup_backend_name(void)
{
	struct cg_places pl;
	struct limits lim = { .cpus = 1, .memory = 1 };
	const char *ret = NULL;
	size_t i;

	cg_places_init(&pl);
	cg_places_find(&pl);
	for (i = 0; i < pl.v2.nr && !ret; i++)
		if (cg_v2_usable(pl.v2.v[i], &lim, NULL))
			ret = "cgroup-v2";
	if (!ret && pl.v1[V1_CPU].nr && pl.v1[V1_MEMORY].nr)
		ret = "cgroup-v1";
	cg_places_release(&pl);
	return ret;
}
