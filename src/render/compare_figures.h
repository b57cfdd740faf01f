/*
 * The figures of a comparison (`coldstart compare`): each variant's measured
 * runs summed up (medians, spreads, outliers, failures), each variant
 * against the first (A) with the Mann-Whitney U test and Holm's adjustment,
 * and the modules whose self time differs.  The caller runs the variants
 * and owns their profiles; everything here reads them, and nothing prints
 * (compare_report.h shows them).
 */
#ifndef COLDSTART_COMPARE_FIGURES_H
#define COLDSTART_COMPARE_FIGURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/compare.h"
#include "model/profile.h"
#include "model/stats.h"
#include "util.h"

/* Differences are significant below this (after Holm's adjustment). */
#define COMPARE_ALPHA 0.05

/* What is measured of each run, and compared. */
/*
 * M_LISTENING: the first connection the listener accepted, shown where it
 * differs from ready (http://).  M_REQ_MEDIAN, M_REQ_P95: with --requests,
 * each run's median and 95th percentile of the requests' latency.
 */
enum compare_metric { M_WALL, M_IMPORTS, M_CPU, M_READY, M_LISTENING, M_REQ_MEDIAN, M_REQ_P95, M__COUNT };

struct sample {
	int64_t *v; /* one value a measured run, UNKNOWN skipped */
	size_t nr;
	struct summary s;
};

/* One variant against the first (A). */
struct versus {
	double ratio[M__COUNT]; /* median of this variant / median of A; 0 when unknown */
	struct mw_result mw[M__COUNT];
	double p_adj[M__COUNT]; /* Holm over the variants compared with A */
};

/* One variant as the comparison sees it: its profile and what is worked out from its measured runs. */
struct compare_side {
	char id[2];
	const char *label; /* borrowed */
	const struct profile *p; /* borrowed */
	struct sample metric[M__COUNT];
	bool *outlier; /* per wall sample */
	size_t nr_outliers;
	size_t nr_failed; /* measured runs that failed, or never got ready with --ready */
	char *failure; /* how the first of them failed, or NULL */
	size_t nr_not_cold; /* --cold: measured runs whose eviction did not take */
	size_t requests_asked, requests_failed; /* --requests: over the measured runs */
	bool cold; /* its runs evict the page cache (--cold, or --cache cold) */
	struct versus vs;
};

/* One module's self time per measured run, in each variant. */
struct module_row {
	char *name;
	int64_t **v; /* [variant][run] */
	int64_t *median; /* [variant] */
	size_t *present; /* [variant]: runs it was imported in */
};

/* A module's difference between variant j and A. */
struct module_diff {
	size_t row;
	int64_t delta;
	struct mw_result mw;
	double p_adj;
	bool tested;
};

struct comparison {
	struct compare_side *v; /* the caller's, nr of them */
	size_t nr;
	struct module_row *rows;
	size_t nr_rows, alloc_rows;
	/* For each variant j >= 1: its differences with A, sorted by |delta|. */
	struct module_diff **diffs;
	size_t *nr_tested;
	/* How the runs were made, for the outputs: set by the caller. */
	int runs, warmup, top; /* measured runs and warm-up rounds; modules shown a pair */
	bool cold, ready;
	bool listening; /* some measured run listened at another time than it was ready */
	int requests; /* --requests N, 0 without */
	const char *what; /* "interpreters", "limit sets", "commands", ... */
};

/*
 * Works out every side's figures (medians, spreads, outliers), each side
 * against A (ratios, tests, Holm over the sides), and the modules of each
 * pair.  c->v[*].id, label, p and the run fields must be set.
 */
void comparison_analyze(struct comparison *c);
/* Frees what comparison_analyze made (not the sides array, the labels or the profiles). */
void comparison_release(struct comparison *c);
/* Whether metric m is part of comparison c: readiness with --ready, listening where it differs, ... */
bool compare_metric_shown(const struct comparison *c, size_t m);
/* Metric m of run r, UNKNOWN when the run has none. */
int64_t compare_run_metric(const struct run *r, enum compare_metric m);

#endif
