/*
 * The --cold side of a measuring session's runs (measure.h): the set of
 * files the target reads (cold.h) evicted by the runner last before each
 * exec (runner_opts.before_exec), learnt after each run, and the measured
 * runs that read a file not evicted before them made again.  measure.c
 * calls these only for a session whose runs evict.
 *
 *	struct measure_cold_run x;
 *
 *	measure_cold_arm(&x, set, &ro, p, r);  (before runner_run: sets ro.before_exec)
 *	runner_run(&ro, p, r, ...);
 *	measure_cold_after_run(&x, failed);    (learns, counts, warns; disarms)
 *	if (measure_cold_redo(p, n, max, &reruns)) ... run n again
 */
#ifndef COLDSTART_MEASURE_COLD_H
#define COLDSTART_MEASURE_COLD_H

#include <stdbool.h>

#include "model/profile.h"
#include "session/runner.h"
#include "sys/cold.h"
#include "util.h"

/* One evicting run, from arm to after_run; the pointers are borrowed. */
struct measure_cold_run {
	struct cold_set *cs;
	struct runner_opts *ro;
	struct profile *p;
	struct run *r; /* in p->runs */
	struct buf err; /* why the eviction failed, said after the run */
};

/*
 * Before run r of p: the runner (ro) will evict the files of cs and check
 * them with mincore into r->cold, last before the target's exec, after
 * everything coldstart prepares for the run.
 */
void measure_cold_arm(struct measure_cold_run *x, struct cold_set *cs, struct runner_opts *ro, struct profile *p,
		      struct run *r);
/*
 * After the run (failed: runner_run made none): learns what it read,
 * counts in r->cold.unevicted the files that were not evicted before it,
 * and records in the profile (and prints) why a run was not cold.
 * Releases x and disarms the runner.
 */
void measure_cold_after_run(struct measure_cold_run *x, bool failed);
/*
 * For the last run of p, measured run n: when it read files that were not
 * evicted before it, it becomes a warm-up (said in the profile) and true
 * is returned so that run n is made again, at most max times in a session
 * (*reruns counts them).
 */
bool measure_cold_redo(struct profile *p, int n, int max, int *reruns);

#endif
