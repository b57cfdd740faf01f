/*
 * What profile, parse and docker share after measuring: extra outputs
 * (--flamegraph, --html, ...), budgets (--budget, --forbid), the report on
 * stdout and the JSON file.
 */
#ifndef COLDSTART_PROFILE_CMD_H
#define COLDSTART_PROFILE_CMD_H

#include <stdbool.h>

#include "profile.h"
#include "ready.h"
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
 * was asked for and a run never got there, EXIT_TARGET_* for the first run
 * that did not end cleanly, else EXIT_NO_IMPORTS when no measured run
 * recorded an import.  With passthrough, the target's own status (its
 * code, or 128 + signal) instead.
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

/* Options of the commands that run a target (profile, docker). */
struct measure_opts {
	struct limits limits;
	bool no_limits;
	bool no_trace;
	bool quiet;
	bool passthrough_exit;
	int runs;
	int warmup;
	int64_t timeout_us; /* 0 = none */
	const char *ready;
	const char *ready_status;
	struct ready_spec ready_spec; /* ready and ready_status, parsed by measure_opts_finish */
	int64_t ready_timeout_us;
};

/*
 * The option context of a measuring command starts with this, so both the
 * SHOW_OPTIONS and the MEASURE_OPTIONS callbacks can reach their part.
 */
struct measure_ctx {
	struct show_opts show;
	struct measure_opts m;
};

void measure_ctx_init(struct measure_ctx *c);
void measure_ctx_release(struct measure_ctx *c);
/*
 * After parsing: drops the limits for --no-limits, else checks them together
 * (--swap needs --memory), and hands them to *out (the profile's; m keeps
 * none); parses --ready and --ready-status into m->ready_spec.  -1 with a
 * message in err: a usage error.
 */
int measure_opts_finish(struct measure_opts *m, struct limits *out, struct buf *err);

/* Parses a positive number of seconds up to max into microseconds; -1 with err. */
int measure_parse_seconds(const char *v, const char *opt, double max, int64_t *us, struct buf *err);

int measure_opt_no_trace(void *ctx, const char *v, struct buf *err);
int measure_opt_quiet(void *ctx, const char *v, struct buf *err);
int measure_opt_runs(void *ctx, const char *v, struct buf *err);
int measure_opt_warmup(void *ctx, const char *v, struct buf *err);
int measure_opt_timeout(void *ctx, const char *v, struct buf *err);
int measure_opt_cpus(void *ctx, const char *v, struct buf *err);
int measure_opt_memory(void *ctx, const char *v, struct buf *err);
int measure_opt_swap(void *ctx, const char *v, struct buf *err);
int measure_opt_pids(void *ctx, const char *v, struct buf *err);
int measure_opt_cpuset(void *ctx, const char *v, struct buf *err);
int measure_opt_preset(void *ctx, const char *v, struct buf *err);
int measure_opt_no_limits(void *ctx, const char *v, struct buf *err);
int measure_opt_ready(void *ctx, const char *v, struct buf *err);
int measure_opt_ready_timeout(void *ctx, const char *v, struct buf *err);
int measure_opt_ready_status(void *ctx, const char *v, struct buf *err);
int measure_opt_exit_code(void *ctx, const char *v, struct buf *err);

#define MEASURE_OPTIONS                                                                                         \
	{ "no-trace", 0, 0, measure_opt_no_trace, NULL, "importtime only: do not load the in-process tracer" },    \
	{ "quiet", 'q', 0, measure_opt_quiet, NULL, "do not forward the target's stderr" },                       \
	{ "runs", 'n', 1, measure_opt_runs, "N", "measure N runs and report medians and spreads" },                \
	{ "warmup", 0, 1, measure_opt_warmup, "N", "unmeasured runs before the measured ones (page cache, .pyc)" }, \
	{ "timeout", 0, 1, measure_opt_timeout, "SECONDS", "kill the target and all it started after SECONDS" },   \
	{ "cpus", 0, 1, measure_opt_cpus, "F", "CPU limit in CPUs, e.g. 0.1" },                                    \
	{ "memory", 0, 1, measure_opt_memory, "SIZE", "memory limit, e.g. 128m, 1g" },                             \
	{ "swap", 0, 1, measure_opt_swap, "SIZE",                                                                  \
	  "swap allowed beyond --memory (default 0, as docker's memory = memory-swap)" },                          \
	{ "pids", 0, 1, measure_opt_pids, "N", "process count limit" },                                            \
	{ "cpuset", 0, 1, measure_opt_cpuset, "LIST", "CPUs to run on, e.g. 0 or 0-1" },                           \
	{ "preset", 0, 1, measure_opt_preset, "NAME", "fn (0.1 CPU, 128 MiB) or lambda:MB (MB/1769 CPUs, MB MiB)" }, \
	{ "no-limits", 0, 0, measure_opt_no_limits, NULL, "ignore limit options and presets (run unconstrained)" }, \
	{ "ready", 0, 1, measure_opt_ready, "SPEC",                                                                \
	  "measure readiness: fn, tcp:PORT, http://127.0.0.1:PORT/path, unix:PATH" },                              \
	{ "ready-timeout", 0, 1, measure_opt_ready_timeout, "SECONDS", "give up waiting for readiness (default 60)" }, \
	{ "ready-status", 0, 1, measure_opt_ready_status, "LIST",                                                  \
	  "http:// readiness: the answers that count, e.g. 200 or 2xx,404 (default 200-399)" },                    \
	{ "exit-code", 0, 0, measure_opt_exit_code, NULL, "exit with the target's own status instead of coldstart's codes" }

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
