/*
 * The analysis pass shared by profile, parse, docker and report.
 */
#include "analyze.h"

#include <stdlib.h>
#include <string.h>

#include "elf_report.h"
#include "findings.h"
#include "plan_finding.h"
#include "timeline_rules.h"

/* The rules every analysis runs, in order. */
static const struct finding_rules *const rule_tables[] = { &findings_builtin, &elf_finding_rules,
							    &plan_finding_rules, &timeline_finding_rules, NULL };

void profile_analyze(struct profile *p, const char *const *stdlib_names)
{
	profile_analyze_with(p, stdlib_names, NULL);
}

void profile_analyze_with(struct profile *p, const char *const *stdlib_names, const char *const *site_dirs)
{
	size_t r, i, bad_total = 0;
	struct buf examples = BUF_INIT;

	for (r = 0; r < p->nr_runs; r++) {
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
	findings_run(p, rule_tables);
}
