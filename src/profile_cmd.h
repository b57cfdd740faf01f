/*
 * What profile, parse and docker share after measuring: extra outputs
 * (--flamegraph, --html, ...), budgets (--budget, --forbid), the report on
 * stdout and the JSON file.
 */
#ifndef COLDSTART_PROFILE_CMD_H
#define COLDSTART_PROFILE_CMD_H

#include <stdbool.h>

#include "profile.h"
#include "report.h"

struct out_request {
	const char *format; /* exporter name */
	const char *path;
};

struct profile_outputs {
	struct out_request *files;
	size_t nr_files, alloc_files;
	struct strvec budgets; /* "NAME=DUR" as given */
	struct strvec forbids;
};

void profile_outputs_init(struct profile_outputs *po);
void profile_outputs_release(struct profile_outputs *po);
/* Adds an export request; the strings are borrowed from argv. */
void profile_outputs_add(struct profile_outputs *po, const char *format, const char *path);
/* Validates and records "--budget NAME=DUR"; -1 with err on bad syntax. */
int profile_outputs_budget(struct profile_outputs *po, const char *spec, struct buf *err);
void profile_outputs_forbid(struct profile_outputs *po, const char *module);

/*
 * Writes the JSON (output path, or stdout with json_stdout), the report on
 * stdout unless no_report or json_stdout, every export, then checks budgets.
 * Returns 0, or EXIT_FAIL when a file could not be written or a budget
 * failed (the explanation is printed on stderr).
 */
int profile_finish_outputs(const struct profile *p, const struct profile_outputs *po,
			   const struct report_opts *ro, const char *output, bool json_stdout, bool no_report);

/*
 * The exit status for the measured runs of p: 0, EXIT_NOT_READY when ready
 * was asked for and a run never got there, or EXIT_TARGET_* for the first
 * run that did not end cleanly.  With passthrough, that run's own status
 * (its code, or 128 + signal) instead.
 */
int profile_exit_status(const struct profile *p, bool ready, bool passthrough);

/*
 * How a command shows a profile.  Commands put this first in their option
 * context so the shared callbacks below (SHOW_OPTIONS) can reach it.
 */
struct show_opts {
	struct report_opts report;
	struct profile_outputs outputs;
	const char *output; /* -o FILE.json */
	bool json_stdout;
	bool no_report;
};

void show_opts_init(struct show_opts *so);
void show_opts_release(struct show_opts *so);
/* profile_finish_outputs with so's settings. */
int show_profile(const struct profile *p, const struct show_opts *so);

int show_opt_output(void *ctx, const char *v, struct buf *err);
int show_opt_json(void *ctx, const char *v, struct buf *err);
int show_opt_no_report(void *ctx, const char *v, struct buf *err);
int show_opt_top(void *ctx, const char *v, struct buf *err);
int show_opt_tree(void *ctx, const char *v, struct buf *err);
int show_opt_depth(void *ctx, const char *v, struct buf *err);
int show_opt_threshold(void *ctx, const char *v, struct buf *err);
int show_opt_all(void *ctx, const char *v, struct buf *err);
int show_opt_color(void *ctx, const char *v, struct buf *err);
int show_opt_flamegraph(void *ctx, const char *v, struct buf *err);
int show_opt_html(void *ctx, const char *v, struct buf *err);
int show_opt_speedscope(void *ctx, const char *v, struct buf *err);
int show_opt_chrome(void *ctx, const char *v, struct buf *err);
int show_opt_folded(void *ctx, const char *v, struct buf *err);
int show_opt_budget(void *ctx, const char *v, struct buf *err);
int show_opt_forbid(void *ctx, const char *v, struct buf *err);

/* Option-table entries for the above (struct opt from args.h). */
#define SHOW_OPTIONS                                                                                            \
	{ "output", 'o', 1, show_opt_output, "FILE", "save the profile as JSON (gzip when FILE ends in .gz)" },     \
	{ "json", 0, 0, show_opt_json, NULL,                                                                       \
	  "print the JSON profile on stdout instead of the report (after the target's own stdout; -o for a clean file)" }, \
	{ "no-report", 0, 0, show_opt_no_report, NULL, "print no report (with -o or exports)" },                   \
	{ "top", 0, 1, show_opt_top, "N", "rows in each top table (default 15)" },                                 \
	{ "tree", 0, 0, show_opt_tree, NULL, "print the import tree" },                                           \
	{ "depth", 0, 1, show_opt_depth, "N", "tree: hide imports deeper than N (implies --tree)" },              \
	{ "threshold", 0, 1, show_opt_threshold, "DUR",                                                            \
	  "tree: hide subtrees cheaper than DUR, e.g. 1ms (implies --tree)" },                                     \
	{ "all-processes", 0, 0, show_opt_all, NULL, "report every Python process, not only the main one" },      \
	{ "color", 0, 1, show_opt_color, "WHEN", "auto (default: on a terminal without NO_COLOR), always, never" }, \
	{ "flamegraph", 0, 1, show_opt_flamegraph, "FILE", "also write an SVG flame graph" },                      \
	{ "html", 0, 1, show_opt_html, "FILE", "also write a single-file HTML report" },                           \
	{ "speedscope", 0, 1, show_opt_speedscope, "FILE", "also write a speedscope profile" },                    \
	{ "chrome", 0, 1, show_opt_chrome, "FILE", "also write a Chrome trace (Perfetto)" },                       \
	{ "folded", 0, 1, show_opt_folded, "FILE", "also write folded stacks" },                                   \
	{ "budget", 0, 1, show_opt_budget, "NAME=DUR",                                                             \
	  "fail (exit 1) when total, startup, target or MODULE exceeds DUR; repeatable" },                         \
	{ "forbid", 0, 1, show_opt_forbid, "MODULE", "fail (exit 1) when MODULE is imported; repeatable" }

#endif
