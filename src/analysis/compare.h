/*
 * The statistics of `coldstart compare`: two samples of run times (or of one
 * module's time per run), their medians and spreads, outliers, and whether
 * they differ.  Pure: nothing here runs, prints or allocates beyond its
 * return values.
 *
 * The test is the Mann-Whitney U test (Wilcoxon rank-sum), two-sided.
 * Start-up times are skewed, with a long right tail (the scheduler, a cold
 * page cache, CFS throttling under a CPU limit), and a comparison has 5 to
 * 30 runs a side: too few for a t-test's normal approximation to hold.  The
 * U test compares ranks, so one slow run weighs no more than any other
 * slower run, and its p-value is exact for small samples: the permutation
 * distribution of the rank sum, counted with the samples' own ties
 * (midranks), up to COMPARE_EXACT_MAX values in all; beyond that the normal
 * approximation with tie and continuity corrections.  With 3 runs a side the
 * smallest p possible is 0.1: no difference can be significant at 5%, and
 * compare says so instead of calling it noise.
 */
#ifndef COLDSTART_COMPARE_H
#define COLDSTART_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The exact distribution is counted up to this many values in both samples together. */
#define COMPARE_EXACT_MAX 40
/* Outliers: a modified z-score (0.6745 (x - median) / MAD) beyond this (Iglewicz and Hoaglin). */
#define COMPARE_OUTLIER_Z 3.5

struct mw_result {
	double u; /* U of the first sample: pairs (a, b) with a > b, ties counting one half */
	double p; /* two-sided */
	bool exact; /* from the permutation distribution, not the normal approximation */
	double p_min; /* the smallest p these sample sizes allow (exact), for "cannot be significant" */
};

/* Mann-Whitney U of a[0..na) against b[0..nb); na and nb at least 1. */
void mann_whitney(const int64_t *a, size_t na, const int64_t *b, size_t nb, struct mw_result *out);

/*
 * Holm's step-down adjustment of nr p-values in place (each becomes the
 * smallest family-wise level at which it would be rejected), so "p < alpha"
 * holds for the whole family of comparisons.
 */
void holm_adjust(double *p, size_t nr);

/*
 * Marks outlier[i] for v[i] whose modified z-score exceeds
 * COMPARE_OUTLIER_Z; returns how many.  None when the MAD is 0.
 */
size_t mark_outliers(const int64_t *v, size_t nr, bool *outlier);

#endif
