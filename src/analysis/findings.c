/*
 * What the findings rules share (see findings.h): adding a finding, the
 * processes it holds in and their names, the run rules look at, and running
 * the tables.  The rules themselves live in one file per family
 * (findings_exit.c, findings_code.c, findings_heavy.c, findings_lookup.c,
 * and elf_report.c, plan_finding.c, timeline_rules.c).
 */
#include "analysis/findings.h"

#include <stdlib.h>
#include <string.h>

#include "model/stats.h"

bool finding_helper_process(const struct proc *pr)
{
	return pr->role && (!strcmp(pr->role, "resource tracker") || !strcmp(pr->role, "forkserver"));
}

/* Whether pr was started by multiprocessing: a spawned child, or a fork of its forkserver. */
static bool multiprocessing_child(const struct run *r, const struct proc *pr)
{
	size_t k;

	if (pr->argv && strstr(pr->argv, "from multiprocessing.spawn import spawn_main"))
		return true;
	for (k = 0; k < r->nr_procs; k++)
		if (r->procs[k].pid == pr->ppid && pr->ppid > 0 && r->procs[k].role &&
		    !strcmp(r->procs[k].role, "forkserver"))
			return true;
	return false;
}

bool finding_machinery_import(const struct run *r, const struct proc *pr, int32_t i)
{
	const char *nm = node_name(pr, i);

	if (pr->nodes[i].parent >= 0)
		return false;
	if (!strncmp(nm, "multiprocessing.", 16))
		return true;
	return (!strcmp(nm, "pkgutil") || !strcmp(nm, "runpy")) && multiprocessing_child(r, pr);
}

const char *finding_role(const struct proc *pr)
{
	return pr->role ? pr->role : "process";
}

void finding_add_who(struct buf *b, const struct proc *pr)
{
	if (pr->pid > 0)
		buf_addf(b, "pid %ld (%s)", pr->pid, finding_role(pr));
	else
		buf_adds(b, "the target's process");
}

void finding_add_chain(struct buf *b, const struct proc *pr, int32_t i)
{
	proc_chain(pr, i, " -> ", b);
	if (pr->pid > 0)
		buf_addf(b, " (pid %ld)", pr->pid);
}

static void drop_findings(struct profile *p, const char *id)
{
	size_t i, w = 0;

	for (i = 0; i < p->nr_findings; i++) {
		struct finding *f = &p->findings[i];

		if (f->id && !strcmp(f->id, id)) {
			free(f->id);
			free(f->severity);
			free(f->title);
			free(f->evidence);
			free(f->fix);
			free(f->module);
			free(f->pids);
			continue;
		}
		p->findings[w++] = *f;
	}
	p->nr_findings = w;
}

void proc_set_add(struct proc_set *s, size_t pi)
{
	size_t k;

	for (k = 0; k < s->nr && s->v[k] < pi; k++)
		;
	if (k < s->nr && s->v[k] == pi)
		return;
	ALLOC_GROW(s->v, s->nr + 1, s->alloc);
	memmove(s->v + k + 1, s->v + k, (s->nr - k) * sizeof(*s->v));
	s->v[k] = pi;
	s->nr++;
}

void proc_set_release(struct proc_set *s)
{
	free(s->v);
	s->v = NULL;
	s->nr = s->alloc = 0;
}

#define PIDS_NAMED 6 /* pids of one role named before "and N more" */

/* "pids 13 and 14 (workers)": the processes of s from k on that have pr's role, marking them done. */
static void add_role_group(struct buf *b, const struct run *r, const struct proc_set *s, size_t k, bool *done)
{
	const char *role = finding_role(&r->procs[s->v[k]]);
	size_t j, n = 0, named = 0;

	for (j = k; j < s->nr; j++)
		if (!done[j] && !strcmp(finding_role(&r->procs[s->v[j]]), role))
			n++;
	buf_adds(b, n == 1 ? "pid " : "pids ");
	for (j = k; j < s->nr; j++) {
		if (done[j] || strcmp(finding_role(&r->procs[s->v[j]]), role))
			continue;
		done[j] = true;
		if (named == PIDS_NAMED)
			continue;
		if (named)
			buf_adds(b, named + 1 == n ? " and " : ", ");
		buf_addf(b, "%ld", r->procs[s->v[j]].pid);
		named++;
	}
	if (n > named)
		buf_addf(b, " and %zu more", n - named);
	buf_addf(b, " (%s%s)", role, n == 1 ? "" : ends_with(role, "s") ? "es" : "s");
}

void findings_add_procs(struct buf *b, const struct run *r, const struct proc_set *s)
{
	bool *done;
	size_t k, groups = 0;

	if (!s->nr)
		return;
	if (s->nr == 1 || r->procs[s->v[0]].pid <= 0) {
		finding_add_who(b, &r->procs[s->v[0]]);
		return;
	}
	if (s->nr == r->nr_procs && s->nr == 2)
		buf_adds(b, "both processes: ");
	else if (s->nr == r->nr_procs)
		buf_addf(b, "all %zu processes: ", s->nr);
	done = xcalloc(s->nr, sizeof(*done));
	for (k = 0; k < s->nr; k++) {
		if (done[k])
			continue;
		if (groups++)
			buf_adds(b, ", ");
		add_role_group(b, r, s, k, done);
	}
	free(done);
}

void finding_set_pids(struct profile *p, const struct run *r, const struct proc_set *s)
{
	struct finding *f = &p->findings[p->nr_findings - 1];
	size_t k;

	free(f->pids);
	f->pids = xcalloc(s->nr ? s->nr : 1, sizeof(*f->pids));
	f->nr_pids = 0;
	for (k = 0; k < s->nr; k++)
		if (r->procs[s->v[k]].pid > 0)
			f->pids[f->nr_pids++] = r->procs[s->v[k]].pid;
}

void finding_add_in(struct profile *p, const struct run *r, const struct proc_set *s, const char *id,
		    const char *severity, const char *module, int64_t cost_us, const char *title, const char *evidence,
		    const char *fix)
{
	finding_add(p, id, severity, module, cost_us, title, evidence, fix);
	finding_set_pids(p, r, s);
}

const struct run *findings_main_run(const struct profile *p)
{
	size_t i = p->nr_runs ? profile_median_run(p) : 0;

	/* The run the report shows (the median by wall with -n), so the findings speak of it. */
	if (p->nr_runs && !p->runs[i].warmup && p->runs[i].nr_procs)
		return &p->runs[i];
	for (i = 0; i < p->nr_runs; i++)
		if (!p->runs[i].warmup && p->runs[i].nr_procs)
			return &p->runs[i];
	return p->nr_runs ? &p->runs[0] : NULL;
}

void finding_add(struct profile *p, const char *id, const char *severity, const char *module, int64_t cost_us,
		 const char *title, const char *evidence, const char *fix)
{
	struct finding f;

	f.id = xstrdup(id);
	f.severity = xstrdup(severity);
	f.title = xstrdup(title);
	f.evidence = xstrdup(evidence);
	f.fix = xstrdup(fix);
	f.module = module ? xstrdup(module) : NULL;
	f.cost_us = cost_us;
	f.pids = NULL;
	f.nr_pids = 0;
	profile_add_finding(p, &f);
}

void findings_run(struct profile *p, const struct finding_rules *const *tables)
{
	size_t t, i;

	for (t = 0; tables[t]; t++)
		for (i = 0; i < tables[t]->nr; i++)
			drop_findings(p, tables[t]->v[i].id);
	for (t = 0; tables[t]; t++)
		for (i = 0; i < tables[t]->nr; i++)
			tables[t]->v[i].run(p);
}
