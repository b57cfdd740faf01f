/*
 * Findings: rules over a profile, each turning measurements into advice with
 * a stable id, the evidence and a concrete fix (docs/findings.md).  Rules
 * only read the profile and add findings; they never print.
 */
#ifndef COLDSTART_FINDINGS_H
#define COLDSTART_FINDINGS_H

#include "model/profile.h"

struct finding_rule {
	const char *id; /* the id of the findings it adds */
	void (*run)(struct profile *p);
};

/*
 * A table of rules: one per family of rules (findings_exit.h,
 * findings_code.h, findings_heavy.h, findings_lookup.h, elf_report.h, ...).
 */
struct finding_rules {
	const struct finding_rule *v;
	size_t nr;
};

/*
 * Runs the rules of every table in tables (NULL-terminated), in order, over
 * p.  Findings with a rule's id that p already holds are dropped first, so
 * running it again after a change does not duplicate them.
 */
void findings_run(struct profile *p, const struct finding_rules *const *tables);

/*
 * For rules: adds one finding.  title, evidence and fix are copied; module
 * may be NULL; cost_us is UNKNOWN when the finding is not about time.
 */
void finding_add(struct profile *p, const char *id, const char *severity, const char *module, int64_t cost_us,
		 const char *title, const char *evidence, const char *fix);

/*
 * Processes of a run a finding holds in, as indexes into run->procs, kept in
 * run order: the target's process first.
 */
struct proc_set {
	size_t *v;
	size_t nr, alloc;
};
#define PROC_SET_INIT                                                                                                  \
	{                                                                                                              \
		NULL, 0, 0                                                                                             \
	}

/* Adds pi unless s holds it already. */
void proc_set_add(struct proc_set *s, size_t pi);
void proc_set_release(struct proc_set *s);

/*
 * Names the processes of s (docs/findings.md): "pid 12 (master)", "pids 13
 * and 14 (workers)", "all 3 processes: pid 12 (master), pids 13 and 14
 * (workers)" ("both processes: ..." for two); "the target's process" for
 * one without a pid.
 */
void findings_add_procs(struct buf *b, const struct run *r, const struct proc_set *s);

/* As finding_add, for a finding that holds in the processes s of r: they become its pids. */
void finding_add_in(struct profile *p, const struct run *r, const struct proc_set *s, const char *id,
		    const char *severity, const char *module, int64_t cost_us, const char *title, const char *evidence,
		    const char *fix);
/* Sets the pids of p's last finding from s. */
void finding_set_pids(struct profile *p, const struct run *r, const struct proc_set *s);

/*
 * The run rules look at: the run the report shows (profile_median_run: the
 * measured run nearest the median wall) when it has processes, else the
 * first run that is not a warm-up and has processes, else the first run;
 * NULL when there is none.
 */
const struct run *findings_main_run(const struct profile *p);

/* For rules: processes whose imports are multiprocessing's own business, not the app's start-up. */
bool finding_helper_process(const struct proc *pr);
/*
 * For rules: whether node i of pr is an import multiprocessing made for
 * itself, which the user's code never wrote, so "import it later" cannot
 * be the advice: an outermost import of one of its submodules (the package
 * loads its parts as they are used: the start method's popen_*, pool,
 * queues), or pkgutil and runpy in a child it started (spawn's prepare()
 * runs the main module's path through runpy).
 */
bool finding_machinery_import(const struct run *r, const struct proc *pr, int32_t i);
/* A process's role, "process" when it has none. */
const char *finding_role(const struct proc *pr);
/* "pid 12 (worker)", or "the target's process" for an importtime-only one. */
void finding_add_who(struct buf *b, const struct proc *pr);
/* "a -> b -> c (pid 12)": the import chain down to node i of pr. */
void finding_add_chain(struct buf *b, const struct proc *pr, int32_t i);

#define FINDINGS_LIST_MAX 5 /* modules named in one evidence line */

/* Thresholds (docs/findings.md). */
#define HEAVY_SHARE_PCT 10 /* heavy-import: share of the target's import time */
#define HEAVY_MIN_US 5000 /* heavy-import: and at least this much */
#define GC_SHARE_PCT 10 /* gc-pauses: the collector's share of a process's import time */
#define GC_MIN_US 5000 /* gc-pauses: and at least this much */
#define FINDER_SHARE_PCT 10 /* slow-finders: finder time share of import time */
#define FINDER_MIN_US 20000 /* slow-finders: and at least this much */
#define FINDER_MIN_LOOKUPS 50 /* slow-finders: fewer lookups are too few to judge against preemption */
#define FINDER_PATH_ENTRIES 20 /* slow-finders: sys.path this long is reported on its own */
#define FINDER_WARN_PCT 20 /* slow-finders: a warning from this share on */
#define FINDER_FAILED_PCT 30 /* slow-finders: failed lookups' share of finder time worth naming */
#define FINDER_SLOW_LOOKUP_US 300 /* slow-finders: a median lookup this slow means every lookup is */
#define FINDER_TOP 5 /* slow-finders: the slowest lookups named */
#define FINDER_FEW_PCT 50 /* slow-finders: when the slowest FINDER_TOP take this share */
#define FAILED_MIN_US 1000 /* failed-imports: total cost worth a note */
#define EX_CONFIG_STATUS 78

#endif
