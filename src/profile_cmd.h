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

/* Option callbacks shared by the commands' option tables (ctx is a struct profile_outputs). */
int profile_opt_flamegraph(void *ctx, const char *v, struct buf *err);
int profile_opt_html(void *ctx, const char *v, struct buf *err);
int profile_opt_speedscope(void *ctx, const char *v, struct buf *err);
int profile_opt_chrome(void *ctx, const char *v, struct buf *err);
int profile_opt_folded(void *ctx, const char *v, struct buf *err);
int profile_opt_budget(void *ctx, const char *v, struct buf *err);
int profile_opt_forbid(void *ctx, const char *v, struct buf *err);

#endif
