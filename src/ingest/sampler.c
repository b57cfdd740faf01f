/*
 * The C side of the start-up sampler (sampler.h): switches it on in a traced
 * child's environment and turns its samples files into the processes'
 * timelines after the run.
 */
#include "ingest/sampler.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "datadir.h"
#include "model/profile.h"
#include "model/samples.h"
#include "model/timeline.h"
#include "ingest/timeline_build.h"
#include "ingest/trace_build.h"

int tl_until_from_name(const char *s)
{
	if (!strcmp(s, "ready"))
		return TL_UNTIL_READY;
	if (!strcmp(s, "first-response"))
		return TL_UNTIL_FIRST_RESPONSE;
	if (!strcmp(s, "exit"))
		return TL_UNTIL_EXIT;
	return -1;
}

int sampler_prepare(const char *trace_dir, const char *python, const struct timeline_opts *o, struct strvec *env,
		    struct buf *note, struct buf *err)
{
	const char *datadir = coldstart_datadir();
	char *so = NULL, *slash;
	char interval[32];

	if (!datadir) {
		buf_addf(err, "cannot find coldstart's python directory (set COLDSTART_DATADIR)");
		return -1;
	}
	if (!python) {
		buf_addf(err, "the target's interpreter is not known (give --python)");
		return -1;
	}
	if (ext_build_ensure(python, datadir, "_sampler", trace_dir, &so, note, err) < 0)
		return -1;
	slash = strrchr(so, '/');
	if (slash)
		*slash = '\0';
	snprintf(interval, sizeof(interval), "%lld", (long long)o->interval_us);
	strvec_setenv(env, "COLDSTART_SAMPLER_PATH", so);
	strvec_setenv(env, "COLDSTART_TIMELINE", interval);
	free(so);
	return 0;
}

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * The traced process a samples file belongs to: the one with its pid that
 * started last before sampling did (a pid reused by exec has several).
 */
static struct proc *proc_of(struct run *r, const struct samples_file *sf)
{
	struct proc *best = NULL;
	size_t i;

	for (i = 0; i < r->nr_procs; i++) {
		struct proc *pr = &r->procs[i];

		if (pr->pid != sf->pid || pr->timeline)
			continue;
		if (pr->start_ns >= 0 && pr->start_ns > sf->start_ns)
			continue;
		if (!best || pr->start_ns > best->start_ns)
			best = pr;
	}
	return best;
}

/* Where the timeline of r ends, absolute, and what that is. */
static int64_t cut_at(const struct run *r, const struct sampler_times *t, const struct timeline_opts *o,
		      enum tl_end *end, struct profile *p)
{
	int64_t ready = r->ready_ns > 0			      ? r->ready_ns
			: r->ready_us >= 0 && t->exec_ns >= 0 ? t->exec_ns + r->ready_us * 1000
							      : UNKNOWN;

	*end = TL_END_EXIT;
	switch (o->until) {
	case TL_UNTIL_EXIT: return UNKNOWN;
	case TL_UNTIL_FIRST_RESPONSE:
		if (ready >= 0 && r->first_response_us >= 0) {
			*end = TL_END_FIRST_RESPONSE;
			return ready + r->first_response_us * 1000;
		}
		profile_add_warning(p, 0, "timeline: no first response was measured; it ends at %s",
				    ready >= 0 ? "readiness" : "the exit");
		break;
	case TL_UNTIL_READY:
		if (ready < 0)
			profile_add_warning(p, 0, "timeline: the target never became ready; it ends at the exit");
		break;
	case TL_UNTIL_DEFAULT: break;
	}
	if (ready >= 0) {
		*end = TL_END_READY;
		return ready;
	}
	return UNKNOWN;
}

static void collect_one(const char *path, const char *name, struct profile *p, struct run *r,
			const struct sampler_times *t, int64_t end_ns, enum tl_end end)
{
	struct samples_file sf;
	struct buf err = BUF_INIT;
	struct timeline *tl = NULL;
	struct tl_cut cut = { .origin_ns = UNKNOWN, .end_ns = end_ns, .end = end, .exit_ns = UNKNOWN };
	struct proc *pr;

	samples_init(&sf);
	if (samples_read_file(&sf, path, &err) < 0) {
		profile_add_warning(p, 0, "timeline: samples '%s': %s", name, err.buf);
		goto out;
	}
	if (!sf.nr_samples)
		goto out; /* a fork that only exec'd, or a process too short to sample */
	pr = proc_of(r, &sf);
	if (!pr) {
		profile_add_warning(p, 0, "timeline: samples of pid %ld, which wrote no trace, left out", sf.pid);
		goto out;
	}
	if (end_ns >= 0 && sf.start_ns > end_ns)
		goto out; /* started after the end of the profile's time */
	if (pr->pid == t->pid && t->exec_ns >= 0 && !sf.forked) {
		/* The runner's own child: its timeline spans the run's wall time, exec to exit. */
		cut.origin_ns = t->exec_ns;
		if (t->exit_ns > t->exec_ns)
			cut.exit_ns = t->exit_ns;
	}
	if (sf.faults || sf.bad_records)
		profile_add_warning(p, 0, "timeline of pid %ld: %llu samples abandoned, %zu unreadable records", sf.pid,
				    (unsigned long long)sf.faults, sf.bad_records);
	tl = xmalloc(sizeof(*tl));
	timeline_init(tl);
	if (timeline_build(tl, &sf, pr, &cut, &err) < 0) {
		profile_add_warning(p, 0, "timeline of pid %ld: %s", sf.pid, err.buf);
		timeline_free(tl);
		goto out;
	}
	pr->timeline = tl;
out:
	samples_release(&sf);
	buf_release(&err);
}

void sampler_collect(const char *trace_dir, struct profile *p, struct run *r, const struct sampler_times *t,
		     const struct timeline_opts *o)
{
	DIR *d = trace_dir ? opendir(trace_dir) : NULL;
	struct dirent *de;
	char **files = NULL;
	size_t nr = 0, alloc = 0, i;
	struct buf path = BUF_INIT;
	enum tl_end end;
	int64_t end_ns = cut_at(r, t, o, &end, p);

	if (!d) {
		profile_add_warning(p, 0, "timeline: cannot open '%s': %s", trace_dir ? trace_dir : "(none)",
				    strerror(errno));
		return;
	}
	while ((de = readdir(d))) {
		if (!ends_with(de->d_name, ".samples"))
			continue;
		ALLOC_GROW(files, nr + 1, alloc);
		files[nr++] = xstrdup(de->d_name);
	}
	closedir(d);
	if (nr)
		qsort(files, nr, sizeof(*files), cmp_cstr);
	for (i = 0; i < nr; i++) {
		buf_reset(&path);
		buf_addf(&path, "%s/%s", trace_dir, files[i]);
		collect_one(path.buf, files[i], p, r, t, end_ns, end);
		free(files[i]);
	}
	free(files);
	if (!nr || !r->nr_procs || !r->procs[0].timeline)
		profile_add_warning(p, 0, "timeline: the target's process was not sampled%s",
				    nr ? "" : " (no samples file: not Python 3.7+, or the sampler could not start)");
	buf_release(&path);
}
