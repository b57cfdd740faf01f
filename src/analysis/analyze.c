/*
 * The analysis pass shared by profile, parse, docker and report.
 */
#include "analysis/analyze.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/elf_report.h"
#include "analysis/findings.h"
#include "analysis/findings_code.h"
#include "analysis/findings_exit.h"
#include "analysis/findings_heavy.h"
#include "analysis/findings_lookup.h"
#include "analysis/plan_finding.h"
#include "analysis/timeline_rules.h"
#include "model/classify.h"

/* The rules every analysis runs, in order. */
static const struct finding_rules *const rule_tables[] = { &findings_exit_rules,    &findings_code_rules,
							   &findings_heavy_rules,   &findings_lookup_rules,
							   &elf_finding_rules,	    &plan_finding_rules,
							   &timeline_finding_rules, NULL };

struct named {
	const char *name;
	int32_t node;
};

static int cmp_named(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->node > y->node) - (x->node < y->node);
}

static bool ancestor_of(const struct proc *pr, int32_t a, int32_t b)
{
	for (b = pr->nodes[b].parent; b >= 0; b = pr->nodes[b].parent)
		if (b == a)
			return true;
	return false;
}

/*
 * Whether node i can be a failed import, which is tried again when
 * retried: a leaf, or `import a.b.c` with no a, where each row's one child
 * is its parent package (a.b.c > a.b > a), down to a leaf.
 */
static bool failed_chain(const struct proc *pr, int32_t i)
{
	int32_t c;

	for (; (c = pr->nodes[i].first_child) >= 0; i = c) {
		const char *nm = node_name(pr, i), *pkg = node_name(pr, c);
		size_t len = strlen(pkg);

		if (pr->nodes[c].next_sibling >= 0 || strncmp(nm, pkg, len) || nm[len] != '.')
			return false;
	}
	return true;
}

/*
 * Whether two rows of one name can be one process's: a failed import
 * retried (importtime cannot mark failures: one of them is then a leaf or
 * a chain of parent packages), or `import pkg.sub` importing pkg inside it
 * (one is inside the other).
 */
static bool one_process(const struct proc *pr, int32_t a, int32_t b)
{
	return failed_chain(pr, a) || failed_chain(pr, b) || ancestor_of(pr, a, b) || ancestor_of(pr, b, a);
}

/*
 * Without a trace, importtime's rows carry no pid: rows of forked children
 * land in their parent's tree, and a spawned interpreter's header splits
 * the stream where it starts, not where the processes' rows part.  A
 * module imported twice in one tree in a way one process cannot is the mark
 * of that; such trees are flagged and the modules named.
 */
static int cmp_cum_desc(const void *a, const void *b, void *arg)
{
	const struct proc *pr = arg;
	int64_t x = pr->nodes[*(const int32_t *)a].cum_us, y = pr->nodes[*(const int32_t *)b].cum_us;

	return x < y ? 1 : x > y ? -1 : 0;
}

static void check_mixed(struct profile *p, struct run *r, size_t ri)
{
	size_t pi, i, j;

	for (pi = 0; pi < r->nr_procs; pi++) {
		struct proc *pr = &r->procs[pi];
		struct named *v;
		int32_t *dup;
		struct buf dups = BUF_INIT;
		size_t nr = 0, nd = 0;

		if (pr->timing || pr->nr_nodes < 2)
			continue;
		v = xmalloc(st_mult(pr->nr_nodes, sizeof(*v)));
		for (i = 0; i < pr->nr_nodes; i++)
			if (!(pr->nodes[i].flags & (NODE_CACHED | NODE_GC))) {
				v[nr].name = node_name(pr, (int32_t)i);
				v[nr++].node = (int32_t)i;
			}
		qsort(v, nr, sizeof(*v), cmp_named);
		dup = xmalloc(st_mult(nr + 1, sizeof(*dup)));
		for (i = 0; i < nr; i = j) {
			bool mixed = false;
			size_t a, b;

			for (j = i + 1; j < nr && !strcmp(v[j].name, v[i].name); j++)
				;
			for (a = i; a < j && !mixed; a++)
				for (b = a + 1; b < j && !mixed; b++)
					mixed = !one_process(pr, v[a].node, v[b].node);
			if (mixed)
				dup[nd++] = v[i].node;
		}
		/* The costliest first: what the mixing distorts most. */
		if (nd)
			qsort_r(dup, nd, sizeof(*dup), cmp_cum_desc, pr);
		for (i = 0; i < nd && i < 5; i++)
			buf_addf(&dups, "%s'%s'", i ? ", " : "", node_name(pr, dup[i]));
		free(v);
		free(dup);
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

static void analyze(struct profile *p, const char *const *stdlib_names, const char *const *site_dirs, bool native)
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
	if (native) {
		struct strvec problems = STRVEC_INIT;

		elf_annotate_profile(p, &problems);
		for (i = 0; i < problems.nr; i++)
			profile_add_warning(p, 0, "%s", problems.v[i]);
		strvec_clear(&problems);
	}
	findings_run(p, rule_tables);
}

void profile_analyze(struct profile *p, const char *const *stdlib_names)
{
	analyze(p, stdlib_names, NULL, true);
}

void profile_analyze_offline(struct profile *p, const char *const *stdlib_names)
{
	analyze(p, stdlib_names, NULL, false);
}

void profile_analyze_with(struct profile *p, const char *const *stdlib_names, const char *const *site_dirs)
{
	analyze(p, stdlib_names, site_dirs, true);
}
