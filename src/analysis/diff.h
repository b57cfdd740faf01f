/*
 * Comparing two profiles: per-module and total import-time changes, with a
 * noise threshold taken from the spread of repeated runs (median and MAD,
 * plus a rank test that the runs separate), or a fixed minimum when a side
 * holds a single run.
 */
#ifndef COLDSTART_DIFF_H
#define COLDSTART_DIFF_H

#include <stdbool.h>
#include <stdint.h>

#include "model/profile.h"
#include "util.h"

/* Default for --min-delta: changes at or below 1 ms are never flagged. */
#define DIFF_MIN_DELTA_US 1000

/*
 * One module (by name, in the main process of every non-warm-up run).  Times
 * are medians across runs in microseconds; a run in which the module is
 * absent counts as 0.
 */
struct diff_entry {
	char *name;
	int64_t a_self_us, b_self_us;
	int64_t a_cum_us, b_cum_us;
	int64_t a_mad_us, b_mad_us; /* median absolute deviation of self */
	int64_t delta_us; /* b_self - a_self */
	int64_t cum_delta_us; /* b_cum - a_cum */
	int64_t threshold_us; /* |delta| must exceed this to be flagged */
	/*
	 * Fraction of (A run, B run) pairs in which B's self time is larger;
	 * -1 with fewer than 3 runs on a side.  With it, a slow-down is only
	 * flagged when >= 0.9 (a speed-up when <= 0.1).
	 */
	double superiority;
	bool flagged;
	bool added; /* in no run of A, in some run of B */
	bool removed; /* in some run of A, in no run of B */
	uint8_t kind; /* enum node_kind, from B when present */
};

struct diff {
	struct diff_entry *entries; /* sorted by name */
	size_t nr, alloc;
	size_t a_runs, b_runs; /* runs compared on each side */
	int64_t min_delta_us;
	/* Main-process import total (start-up included), medians. */
	int64_t a_total_us, b_total_us;
	int64_t a_total_mad_us, b_total_mad_us;
	int64_t total_threshold_us;
	bool total_flagged;
	int64_t a_wall_us, b_wall_us; /* UNKNOWN when not measured */
	int64_t max_abs_delta_us; /* over entries, for colour scales */
	/*
	 * What was compared: the importing thread's CPU time when either side
	 * ran under a CPU limit and both have CPU times (CPU time compares
	 * across limits; wall time under a quota measures the scheduler),
	 * wall time otherwise.
	 */
	enum metric metric;
};

#define DIFF_INIT                                                                                                      \
	{                                                                                                              \
		NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, false, UNKNOWN, UNKNOWN, 0, METRIC_WALL                            \
	}

/*
 * Fills d (initialised with DIFF_INIT) from a and b; returns 0, or -1 with
 * err set when either profile has no run with a process.
 */
int diff_compute(struct diff *d, const struct profile *a, const struct profile *b, int64_t min_delta_us,
		 struct buf *err);
/* The entry for a module name, NULL when neither side has it. */
const struct diff_entry *diff_find(const struct diff *d, const char *name);
/* Number of flagged slow-downs (the total and modules, added ones included). */
size_t diff_regressions(const struct diff *d);
/*
 * Human-readable report: totals, flagged changes (at most top of each list,
 * 0 = all), new and removed modules, and a count of unflagged changes.
 */
void diff_report(const struct diff *d, const char *a_name, const char *b_name, size_t top, struct buf *out);
void diff_release(struct diff *d);

/* The lists of a report. */
enum diff_list {
	DIFF_SLOWER, /* flagged slow-downs of modules in both */
	DIFF_FASTER, /* flagged speed-ups */
	DIFF_NEW, /* in no run of A */
	DIFF_REMOVED, /* in no run of B */
	DIFF_QUIET, /* changed within the noise */
};

/* The entries of one list, largest change first; the caller frees the array. */
const struct diff_entry **diff_select(const struct diff *d, enum diff_list which, size_t *nr);
/*
 * What makes the two profiles not like for like, one sentence each pushed
 * to out: different limits, interpreter (path or version) or target argv.
 */
void diff_mismatches(const struct profile *a, const struct profile *b, struct strvec *out);
/*
 * The report as Markdown for a pull-request comment (the totals, then a
 * table per list, at most top rows each, 0 = all; mismatches as a warning),
 * and as GitHub annotations (one per flagged slow-down, new module and
 * mismatch, then the verdict line): diff_ci.c.
 */
void diff_report_markdown(const struct diff *d, const char *a_name, const char *b_name, size_t top,
			  const struct strvec *mismatches, struct buf *out);
void diff_report_github(const struct diff *d, const char *b_name, size_t top, const struct strvec *mismatches,
			struct buf *out);

/* Median and median absolute deviation of v[0..n) (v is reordered). */
int64_t diff_median(int64_t *v, size_t n);
int64_t diff_mad(const int64_t *v, size_t n, int64_t median);

#endif
