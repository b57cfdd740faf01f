/*
 * Statistics across repeated runs: median, min, max and the median absolute
 * deviation, overall and per module of the target's main process.
 */
#ifndef COLDSTART_STATS_H
#define COLDSTART_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "model/profile.h"

struct summary {
	size_t n; /* values that were known */
	int64_t median, min, max;
	int64_t mad; /* median absolute deviation */
};

/* Summarises v (UNKNOWN entries are skipped); v is reordered: its known values first, sorted. */
void summarize(int64_t *v, size_t nr, struct summary *out);
/* True when the spread is large relative to the median (MAD > 10% of it). */
int summary_unstable(const struct summary *s);

struct module_stats {
	char *name;
	struct summary cum, self;
	size_t present; /* runs the module appeared in */
};

/*
 * Per-module statistics over the measured (non-warmup) runs, keyed by module
 * name in each run's main process; sorted by median cumulative, largest
 * first.  Free with module_stats_free.
 */
/* Times in the profile's metric (profile_metric: CPU time under a CPU limit). */
struct module_stats *profile_module_stats(const struct profile *p, size_t *nr);
void module_stats_free(struct module_stats *m, size_t nr);

/* Which run best represents the profile: the one with the median wall time. */
size_t profile_median_run(const struct profile *p);
/* Total import time of a run's main process (excluding start-up or not). */
int64_t run_import_total_us(const struct run *r, int include_startup);

#endif
