/*
 * The rules on how the run ended during import (see findings_exit.h).
 */
#include "analysis/findings_exit.h"

#include <stdlib.h>
#include <string.h>

/* The innermost import that raised SystemExit (the first one recorded), -1 if none. */
static int32_t exit_node(const struct proc *pr)
{
	size_t e;

	for (e = 0; e < pr->nr_events; e++)
		if (!strcmp(proc_str(pr, pr->events[e].name), "import.failed") &&
		    !strcmp(proc_str(pr, pr->events[e].detail), "SystemExit") && pr->events[e].node >= 0)
			return pr->events[e].node;
	return -1;
}

static void rule_ex_config(struct profile *p)
{
	struct buf ev = BUF_INIT;
	size_t ri, hits = 0, runs = 0;
	const struct run *first = NULL;
	int32_t node;

	for (ri = 0; ri < p->nr_runs; ri++) {
		const struct run *r = &p->runs[ri];

		if (r->warmup)
			continue;
		runs++;
		if (r->status == RUN_EXITED && r->exit_code == EX_CONFIG_STATUS) {
			hits++;
			if (!first)
				first = r;
		}
	}
	if (!hits)
		return;
	buf_addf(&ev, "the target exited with status 78 (EX_CONFIG) in %zu of %zu run%s", hits, runs,
		 runs == 1 ? "" : "s");
	node = first->nr_procs ? exit_node(&first->procs[0]) : -1;
	if (node >= 0) {
		buf_adds(&ev, "; it exited while importing ");
		finding_add_chain(&ev, &first->procs[0], node);
	}
	finding_add(p, "config-rejected", "error", node >= 0 ? node_name(&first->procs[0], node) : NULL, UNKNOWN,
		    "configuration rejected at start-up (exit status 78)", ev.buf,
		    "the application refused its configuration before serving: its stderr names the "
		    "setting; compare the environment variables and config files it reads with a working "
		    "environment (coldstart passes the environment through unchanged)");
	if (node >= 0) {
		struct proc_set target = PROC_SET_INIT;

		proc_set_add(&target, 0);
		finding_set_pids(p, first, &target);
		proc_set_release(&target);
	}
	buf_release(&ev);
}

/*
 * Appends the innermost open imports: open nodes none of whose children is
 * open.  *first gets the name of the first one.
 */
static void add_open_chains(struct buf *ev, const struct proc *pr, size_t *found, const char **first)
{
	int32_t i, c;

	for (i = pr->first_root; i >= 0; i = proc_preorder_next(pr, i)) {
		bool inner = true;

		if (!(pr->nodes[i].flags & NODE_OPEN))
			continue;
		for (c = pr->nodes[i].first_child; c >= 0; c = pr->nodes[c].next_sibling)
			if (pr->nodes[c].flags & NODE_OPEN)
				inner = false;
		if (!inner)
			continue;
		if (!*found)
			*first = node_name(pr, i);
		buf_adds(ev, *found ? "; and " : "; it was importing ");
		finding_add_chain(ev, pr, i);
		if (pr->timing && pr->timing[i].rss_start_kb >= 0) {
			buf_adds(ev, ", RSS ");
			buf_add_bytes(ev, i64_mul(pr->timing[i].rss_start_kb, 1024));
			buf_adds(ev, " when that import started");
		}
		(*found)++;
	}
}

static void rule_oom(struct profile *p)
{
	struct buf ev = BUF_INIT;
	struct proc_set procs = PROC_SET_INIT;
	size_t ri, pi, found = 0, hits = 0, before;
	const struct run *r = NULL;
	const char *module = NULL;

	for (ri = 0; ri < p->nr_runs; ri++)
		if (p->runs[ri].status == RUN_OOM) {
			if (!r)
				r = &p->runs[ri];
			hits++;
		}
	if (!r)
		return;
	buf_addf(&ev, "killed by the memory limit in %zu run%s", hits, hits == 1 ? "" : "s");
	if (p->limits.memory > 0) {
		buf_adds(&ev, " (limit ");
		buf_add_bytes(&ev, p->limits.memory);
		buf_adds(&ev, ")");
	}
	if (r->cg.has && r->cg.memory_peak > 0) {
		buf_adds(&ev, ", memory peak ");
		buf_add_bytes(&ev, r->cg.memory_peak);
	}
	for (pi = 0; pi < r->nr_procs; pi++) {
		before = found;
		add_open_chains(&ev, &r->procs[pi], &found, &module);
		if (found > before)
			proc_set_add(&procs, pi);
	}
	if (!found)
		buf_adds(&ev, "; no trace says which import was running (run with the tracer)");
	finding_add(p, "oom-during-import", "error", module, UNKNOWN, "out of memory during start-up", ev.buf,
		    "raise the memory limit above what start-up needs, or stop importing the module named "
		    "above at start-up (import it where it is used); measure again with a higher --memory "
		    "to see the peak");
	finding_set_pids(p, r, &procs);
	proc_set_release(&procs);
	buf_release(&ev);
}

static const struct finding_rule exit_rules[] = {
	{ .id = "config-rejected", .run = rule_ex_config },
	{ .id = "oom-during-import", .run = rule_oom },
};

const struct finding_rules findings_exit_rules = { exit_rules, ARRAY_SIZE(exit_rules) };
