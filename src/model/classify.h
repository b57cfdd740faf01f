/*
 * What each import of a process is: interpreter start-up, stdlib,
 * third-party, the app's own, or coldstart's; whether importtime's numbers
 * add up; and what each top-level package costs.  Part of the model
 * (profile.h includes this header); implemented in classify.c.
 */
#ifndef COLDSTART_CLASSIFY_H
#define COLDSTART_CLASSIFY_H

#include "model/profile.h"

/*
 * Marks interpreter start-up: every root imported before the target's code
 * (up to and including the top-level "site" row, with its subtree), and
 * classifies the other nodes: stdlib by name (stdlib_names, NULL-terminated,
 * overrides the built-in list), third-party when the module's file (from the
 * trace) lies in a site-packages or dist-packages directory or, without a
 * file, when its top-level package exists in one of site_dirs (may be NULL),
 * app otherwise.
 */
void proc_classify(struct proc *pr, const char *const *stdlib_names, const char *const *site_dirs);
bool is_stdlib_module(const char *name, const char *const *stdlib_names);

/*
 * Checks self == cum - sum(children cum) within tolerance_us per node (plus
 * one microsecond per child and one for self: CPython rounds each printed
 * value up); cached nodes are left out of the sum.  Sets
 * NODE_INCONSISTENT and returns the number of violations.
 */
size_t proc_check_consistency(struct proc *pr, int64_t tolerance_us);

/*
 * proc_classify and proc_check_consistency together, the way the analysis
 * runs them: without a trace in one pass over the nodes, on several threads
 * for big processes.  Returns the number of violations.
 */
size_t proc_analyze(struct proc *pr, const char *const *stdlib_names, const char *const *site_dirs,
		    int64_t tolerance_us);

/* Aggregation by top-level package. */
struct pkg_total {
	char *name;
	int64_t self_us; /* sum of self of every node in the package */
	int64_t cum_us; /* cum of the package's outermost imports */
	size_t modules;
	uint8_t kind;
};
/*
 * Returns an array sorted by cum_us descending, times in metric m (nodes
 * without a measurement in m count nothing); caller frees with
 * pkg_totals_free.
 */
struct pkg_total *proc_package_totals(const struct proc *pr, enum metric m, size_t *nr);
void pkg_totals_free(struct pkg_total *t, size_t nr);

#endif
