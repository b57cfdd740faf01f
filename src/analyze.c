/*
 * The analysis pass shared by profile, parse, docker and report.
 */
#include "analyze.h"

#include <stdlib.h>
#include <string.h>

#include "elf_report.h"
#include "findings.h"

static int cmp_name_ptr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Without a trace, importtime's rows carry no pid: rows of forked children
 * land in their parent's tree, and a spawned interpreter's header splits
 * the stream where it starts, not where the processes' rows part.  A module
 * imported twice in one tree is the mark of that (an interpreter imports a
 * module once); such trees are flagged and the modules named.
 */
static void check_mixed(struct profile *p, struct run *r, size_t ri)
{
	size_t pi, i;

	for (pi = 0; pi < r->nr_procs; pi++) {
		struct proc *pr = &r->procs[pi];
		const char **names;
		struct buf dups = BUF_INIT;
		size_t nr = 0, nd = 0;

		if (pr->timing || pr->nr_nodes < 2)
			continue;
		names = xmalloc(st_mult(pr->nr_nodes, sizeof(*names)));
		for (i = 0; i < pr->nr_nodes; i++)
			if (!(pr->nodes[i].flags & NODE_CACHED))
				names[nr++] = node_name(pr, (int32_t)i);
		qsort(names, nr, sizeof(*names), cmp_name_ptr);
		for (i = 1; i < nr; i++) {
			if (strcmp(names[i], names[i - 1]) || (i > 1 && !strcmp(names[i], names[i - 2])))
				continue;
			if (nd < 5)
				buf_addf(&dups, "%s'%s'", nd ? ", " : "", names[i]);
			nd++;
		}
		free(names);
		if (nd) {
			pr->mixed = true;
			if (nd > 5)
				buf_addf(&dups, " and %zu more", nd - 5);
			profile_add_warning(p, 0,
					    "run %zu, process %zu: %s imported more than once in one tree: the "
					    "rows of several processes (forks, or interpreters started at the same "
					    "time) share one stderr and carry no pid, and without the tracer they "
					    "cannot be told apart, so this tree and its totals mix their imports; "
					    "profile without --no-trace to attribute each row to its process",
					    ri + 1, pi + 1, dups.buf);
		}
		buf_release(&dups);
	}
	if (r->nr_procs > 1 && !r->procs[0].timing)
		profile_add_warning(p, 0,
				    "run %zu: %zu Python interpreters printed importtime rows into one stderr; "
				    "without the tracer each tree holds the rows that came after its "
				    "interpreter's first row, whichever process printed them",
				    ri + 1, r->nr_procs);
}

void profile_analyze(struct profile *p, const char *const *stdlib_names)
{
	profile_analyze_with(p, stdlib_names, NULL);
}

void profile_analyze_with(struct profile *p, const char *const *stdlib_names, const char *const *site_dirs)
{
	size_t r, i, bad_total = 0;
	struct buf examples = BUF_INIT;

	for (r = 0; r < p->nr_runs; r++) {
		check_mixed(p, &p->runs[r], r);
		for (i = 0; i < p->runs[r].nr_procs; i++) {
			struct proc *pr = &p->runs[r].procs[i];
			size_t bad, k;

			bad = proc_analyze(pr, stdlib_names, site_dirs, 0);
			bad_total += bad;
			for (k = 0; k < pr->nr_nodes && bad && examples.len < 200; k++)
				if (pr->nodes[k].flags & NODE_INCONSISTENT)
					buf_addf(&examples, "%s'%s' (self %lld, cum %lld)", examples.len ? ", " : "",
						 node_name(pr, (int32_t)k), (long long)pr->nodes[k].self_us,
						 (long long)pr->nodes[k].cum_us);
		}
	}
	if (bad_total)
		profile_add_warning(p, 0,
				    "%zu import%s where self != cumulative - children's cumulative (kept as "
				    "printed): %s",
				    bad_total, bad_total == 1 ? "" : "s", examples.buf);
	buf_release(&examples);

	/* Native extensions need the tracer's file names; annotation precedes the rules. */
	{
		struct buf err = BUF_INIT;
		const char *line = NULL;
		char *nl;

		elf_annotate_profile(p, &err);
		for (line = err.buf; *line; line = nl + 1) {
			nl = strchr(line, '\n');
			if (!nl) {
				profile_add_warning(p, 0, "%s", line);
				break;
			}
			*nl = '\0';
			if (*line)
				profile_add_warning(p, 0, "%s", line);
		}
		buf_release(&err);
	}
	elf_register_findings();
	findings_run(p);
}
