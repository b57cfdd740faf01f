/*
 * The cgroup v2 backend: enables the controllers a run needs in the
 * parent's subtree_control, makes the run's directory, writes cpu.max,
 * memory.max, memory.swap.max, pids.max and cpuset.cpus, and reads cpu.stat,
 * memory.peak and memory.events back (see cgroup_fs.h).
 */
#include "sys/cgroup_v2.h"

#include <errno.h>
#include <string.h>

/* Controllers a v2 cgroup needs for lim; memory always, for OOM detection. */
static void needed(const struct limits *lim, struct strvec *need)
{
	if (lim->cpus > 0)
		strvec_push(need, "cpu");
	strvec_push(need, "memory");
	if (lim->pids > 0)
		strvec_push(need, "pids");
	if (lim->cpuset)
		strvec_push(need, "cpuset");
}

/* True when every controller in need is listed in base/cgroup.controllers. */
static bool has_controllers(const char *base, const struct strvec *need, struct buf *why)
{
	struct buf sb = BUF_INIT, missing = BUF_INIT;
	bool ok = true;
	size_t i;

	if (cg_read(base, "cgroup.controllers", &sb)) {
		if (why)
			buf_addf(why, "cannot read '%s/cgroup.controllers': %s", base, strerror(errno));
		ok = false;
		goto out;
	}
	cg_trim(&sb);
	for (i = 0; i < need->nr; i++) {
		if (cg_has_word(sb.buf, need->v[i]))
			continue;
		buf_addf(&missing, "%s'%s'", missing.len ? ", " : "", need->v[i]);
		ok = false;
	}
	if (!ok && why)
		buf_addf(why, "cgroup v2 at '%s' does not offer the %s controller%s (it offers: %s)", base, missing.buf,
			 strchr(missing.buf, ',') ? "s" : "", sb.len ? sb.buf : "none");
out:
	buf_release(&sb);
	buf_release(&missing);
	return ok;
}

/*
 * Makes base/name for a v2 run after enabling the needed controllers in
 * base/cgroup.subtree_control.  Returns the new directory or NULL with the
 * reason appended to why.
 */
static char *make(const struct cgfs_ops *fs, const char *base, const char *name, const struct strvec *need,
		  struct buf *why)
{
	struct buf sb = BUF_INIT, cmd = BUF_INIT, dir = BUF_INIT;
	char *ret = NULL;
	size_t i;

	if (!has_controllers(base, need, why))
		goto out;
	if (cg_read(base, "cgroup.subtree_control", &sb)) {
		buf_addf(why, "cannot read '%s/cgroup.subtree_control': %s", base, strerror(errno));
		goto out;
	}
	for (i = 0; i < need->nr; i++) {
		if (cg_has_word(sb.buf, need->v[i]))
			continue;
		buf_reset(&cmd);
		buf_addf(&cmd, "+%s", need->v[i]);
		/* EBUSY here: base holds processes, so it cannot delegate. */
		if (fs->write(base, "cgroup.subtree_control", cmd.buf, why))
			goto out;
	}
	buf_addf(&dir, "%s/%s", base, name);
	if (fs->make(dir.buf)) {
		buf_addf(why, "cannot create '%s': %s", dir.buf, strerror(errno));
		goto out;
	}
	ret = buf_detach(&dir, NULL);
out:
	buf_release(&sb);
	buf_release(&cmd);
	buf_release(&dir);
	return ret;
}

static int apply(struct cgroup *cg, const struct limits *lim, struct buf *err)
{
	const struct cgfs_ops *fs = cg->fs;
	struct buf v = BUF_INIT;
	int ret = -1;

	if (lim->cpus > 0) {
		buf_addf(&v, "%lld %d", (long long)limits_cpu_quota_us(lim), LIMITS_CPU_PERIOD_US);
		if (fs->write(cg->dir, "cpu.max", v.buf, err))
			goto out;
	}
	if (lim->memory > 0) {
		buf_reset(&v);
		buf_add_i64(&v, lim->memory);
		if (fs->write(cg->dir, "memory.max", v.buf, err))
			goto out;
		buf_reset(&v);
		if (lim->swap < 0)
			buf_adds(&v, "max");
		else
			buf_add_i64(&v, lim->swap);
		/* No memory.swap.max: swap accounting is off, and no swap limit exists. */
		if (!fs->has_control(cg->dir, "memory.swap.max")) {
			if (lim->swap >= 0)
				cg_swap_note(&cg->note, "memory.swap.max");
		} else if (fs->write(cg->dir, "memory.swap.max", v.buf, err)) {
			goto out;
		}
	}
	if (lim->pids > 0) {
		buf_reset(&v);
		buf_addf(&v, "%ld", lim->pids);
		if (fs->write(cg->dir, "pids.max", v.buf, err))
			goto out;
	}
	if (lim->cpuset && fs->write(cg->dir, "cpuset.cpus", lim->cpuset, err))
		goto out;
	ret = 0;
out:
	buf_release(&v);
	return ret;
}

bool cg_v2_usable(const char *base, const struct limits *lim, struct buf *why)
{
	struct strvec need = STRVEC_INIT;
	bool ok;

	needed(lim, &need);
	ok = has_controllers(base, &need, why);
	strvec_clear(&need);
	return ok;
}

int cg_v2_create(struct cgroup *cg, const struct cg_places *pl, const struct limits *lim, struct buf *why)
{
	struct strvec need = STRVEC_INIT;
	struct buf p = BUF_INIT;
	size_t i;
	int ret = -1;

	needed(lim, &need);
	for (i = 0; i < pl->v2.nr && !cg->dir; i++) {
		if (why->len)
			buf_adds(why, "; ");
		cg->dir = make(cg->fs, pl->v2.v[i], cg->name, &need, why);
	}
	if (!cg->dir)
		goto out;
	buf_addf(&p, "%s/cgroup.procs", cg->dir);
	strvec_push(&cg->joins, p.buf);
	buf_reset(why);
	if (apply(cg, lim, why))
		goto out;
	ret = 0;
out:
	strvec_clear(&need);
	buf_release(&p);
	return ret;
}

void cg_v2_figures(const struct cgroup *cg, struct cg_figures *out)
{
	out->cpu_usage_us = cg_keyed(cg->dir, "cpu.stat", "usage_usec");
	out->nr_periods = cg_keyed(cg->dir, "cpu.stat", "nr_periods");
	out->nr_throttled = cg_keyed(cg->dir, "cpu.stat", "nr_throttled");
	out->throttled_us = cg_keyed(cg->dir, "cpu.stat", "throttled_usec");
	out->memory_peak = cg_number(cg->dir, "memory.peak");
	out->oom_kills = cg_keyed(cg->dir, "memory.events", "oom_kill");
}
