/*
 * The cgroup v1 backend: one directory per hierarchy the run needs (cpu,
 * cpuacct and memory always, for the figures; pids and cpuset when
 * limited), with cfs_quota_us, limit_in_bytes, memsw, pids.max and the
 * cpuset written, and cpuacct.usage, cpu.stat, max_usage_in_bytes and
 * oom_control read back (see cgroup_fs.h).
 */
#include "sys/cgroup_v1.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

static bool wants(const struct limits *lim, enum v1_ctl c)
{
	switch (c) {
	case V1_CPU: return lim->cpus > 0;
	case V1_MEMORY: return lim->memory > 0;
	case V1_PIDS: return lim->pids > 0;
	case V1_CPUSET: return lim->cpuset != NULL;
	default: return false;
	}
}

static int64_t div_known(int64_t v, int64_t d)
{
	return v == UNKNOWN ? UNKNOWN : v / d;
}

/* cpuset.mems of the parent: a v1 cpuset cannot take tasks while empty. */
static void parent_mems(const char *base, struct buf *out)
{
	buf_reset(out);
	if (cg_read(base, "cpuset.mems", out) || (cg_trim(out), !out->len)) {
		if (cg_read(base, "cpuset.effective_mems", out) || (cg_trim(out), !out->len)) {
			buf_reset(out);
			buf_adds(out, "0");
		}
	}
}

static int apply(struct cgroup *cg, const struct limits *lim, const char *const *base, struct buf *err)
{
	const struct cgfs_ops *fs = cg->fs;
	struct buf v = BUF_INIT;
	const char *d;
	int ret = -1;

	if ((d = cg->v1_dir[V1_CPU]) && lim->cpus > 0) {
		buf_addf(&v, "%d", LIMITS_CPU_PERIOD_US);
		if (fs->write(d, "cpu.cfs_period_us", v.buf, err))
			goto out;
		buf_reset(&v);
		buf_addf(&v, "%lld", (long long)limits_cpu_quota_us(lim));
		if (fs->write(d, "cpu.cfs_quota_us", v.buf, err))
			goto out;
	}
	if ((d = cg->v1_dir[V1_MEMORY]) && lim->memory > 0) {
		buf_reset(&v);
		buf_add_i64(&v, lim->memory);
		if (fs->write(d, "memory.limit_in_bytes", v.buf, err))
			goto out;
		/*
		 * memsw counts memory plus swap, so memory + swap; with no
		 * memsw file (swap accounting off) no swap limit exists.
		 */
		if (lim->swap >= 0) {
			if (!cg_file_in(base[V1_MEMORY], "memory.memsw.limit_in_bytes")) {
				cg_swap_note(&cg->note, "memory.memsw.limit_in_bytes");
			} else {
				buf_reset(&v);
				buf_add_i64(&v, lim->memory + lim->swap);
				if (fs->write(d, "memory.memsw.limit_in_bytes", v.buf, err))
					goto out;
			}
		}
	}
	if ((d = cg->v1_dir[V1_PIDS]) && lim->pids > 0) {
		buf_reset(&v);
		buf_addf(&v, "%ld", lim->pids);
		if (fs->write(d, "pids.max", v.buf, err))
			goto out;
	}
	if ((d = cg->v1_dir[V1_CPUSET]) && lim->cpuset) {
		if (fs->write(d, "cpuset.cpus", lim->cpuset, err))
			goto out;
		parent_mems(base[V1_CPUSET], &v);
		if (fs->write(d, "cpuset.mems", v.buf, err))
			goto out;
	}
	ret = 0;
out:
	buf_release(&v);
	return ret;
}

/* Index of the controller whose run directory is path (a co-mount), or -1. */
static int same_dir(const struct cgroup *cg, const char *path)
{
	struct stat a, b;
	int c;

	if (stat(path, &a))
		return -1;
	for (c = 0; c < V1__COUNT; c++)
		if (cg->v1_dir[c] && !stat(cg->v1_dir[c], &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return c;
	return -1;
}

/*
 * Makes the run's directory for controller c in the first of its places
 * that takes it, setting cg->v1_dir[c] and base[c].  Returns 1 when it is a
 * directory of its own, 0 when it is an earlier controller's (co-mounted,
 * as cpu,cpuacct can be) or none was made, with what was tried in tried.
 */
static int make_in_hierarchy(struct cgroup *cg, const struct cg_places *pl, size_t c, const char **base,
			     struct buf *tried)
{
	struct buf dir = BUF_INIT;
	size_t i;
	int shared, ret = 0;

	for (i = 0; i < pl->v1[c].nr && !cg->v1_dir[c]; i++) {
		buf_reset(&dir);
		buf_addf(&dir, "%s/%s", pl->v1[c].v[i], cg->name);
		if (!cg->fs->make(dir.buf)) {
			cg->v1_dir[c] = buf_detach(&dir, NULL);
			base[c] = pl->v1[c].v[i];
			ret = 1;
		} else if (errno == EEXIST && (shared = same_dir(cg, dir.buf)) >= 0) {
			cg->v1_dir[c] = buf_detach(&dir, NULL);
			base[c] = base[shared];
		} else {
			buf_addf(tried, "%scannot create '%s': %s", tried->len ? "; " : "", dir.buf, strerror(errno));
		}
	}
	buf_release(&dir);
	return ret;
}

/*
 * Makes the run's directory in every v1 hierarchy it needs (the limited
 * ones) or can use for figures (cpu, cpuacct, memory), trying our own
 * cgroup first and the hierarchy root second.
 */
int cg_v1_create(struct cgroup *cg, const struct cg_places *pl, const struct limits *lim, struct buf *why)
{
	const char *base[V1__COUNT] = { NULL };
	struct buf p = BUF_INIT, tried = BUF_INIT;
	bool any = false;
	int ret = -1;
	size_t c;

	for (c = 0; c < V1__COUNT; c++) {
		bool need = wants(lim, (enum v1_ctl)c);
		int own;

		if (!need && c != V1_CPU && c != V1_CPUACCT && c != V1_MEMORY)
			continue;
		buf_reset(&tried);
		own = make_in_hierarchy(cg, pl, c, base, &tried);
		if (!cg->v1_dir[c] && need) {
			if (why->len)
				buf_adds(why, "; ");
			if (!pl->v1[c].nr)
				buf_addf(why, "the cgroup v1 '%s' controller is not mounted", cg_v1_names[c]);
			else
				buf_add(why, tried.buf, tried.len);
			goto out;
		}
		if (own) {
			any = true;
			buf_reset(&p);
			buf_addf(&p, "%s/cgroup.procs", cg->v1_dir[c]);
			strvec_push(&cg->joins, p.buf);
		}
	}
	if (!any) {
		if (why->len)
			buf_adds(why, "; ");
		buf_adds(why, "no cgroup v1 hierarchy could be used");
		goto out;
	}
	buf_reset(why);
	if (apply(cg, lim, base, why))
		goto out;
	ret = 0;
out:
	buf_release(&p);
	buf_release(&tried);
	return ret;
}

void cg_v1_figures(const struct cgroup *cg, struct cg_figures *out)
{
	const char *cpu = cg->v1_dir[V1_CPU], *mem = cg->v1_dir[V1_MEMORY];

	out->cpu_usage_us = div_known(cg_number(cg->v1_dir[V1_CPUACCT], "cpuacct.usage"), 1000);
	out->nr_periods = cg_keyed(cpu, "cpu.stat", "nr_periods");
	out->nr_throttled = cg_keyed(cpu, "cpu.stat", "nr_throttled");
	out->throttled_us = div_known(cg_keyed(cpu, "cpu.stat", "throttled_time"), 1000);
	out->memory_peak = cg_number(mem, "memory.max_usage_in_bytes");
	out->oom_kills = cg_keyed(mem, "memory.oom_control", "oom_kill");
}
