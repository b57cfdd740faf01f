/*
 * How a command shows a profile once it has one (profile, docker, parse,
 * report): the report on stdout or the JSON, the JSON file, extra exports
 * (--flamegraph, --html, ...) and budgets (--budget, --forbid), with the
 * options that choose them.
 */
#ifndef COLDSTART_SHOW_H
#define COLDSTART_SHOW_H

#include <stdbool.h>

#include "args.h"
#include "output.h"
#include "model/profile.h"
#include "render/report.h"

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

/* What a command's options say about showing its profile. */
struct show_opts {
	struct report_opts report;
	struct profile_outputs outputs;
	const char *output; /* -o FILE.json, "-" for stdout */
	bool json_stdout; /* --json: the same as -o - */
	int json_fd; /* --json-fd N: the JSON on descriptor N; -1 for none */
	bool no_report;
	int stdout_users; /* outputs asked for on stdout ("-", --json): at most one */
	const char *otlp_url; /* --otlp URL: send the run's trace to a collector; NULL */
	const char *push_gateway; /* --push-gateway URL: push its gauges; NULL */
	int send_timeout_s; /* for each send; 0 = 10 */
	/*
	 * The profile was measured now (profile, docker), so its monotonic
	 * clock is this boot's: the trace is placed at its exact time.
	 */
	bool live;
	/*
	 * The option table that sets the fields above (-o, --json, --top,
	 * --flamegraph, --budget, ...), for OPT_INCLUDE.  It points into the
	 * struct, which must therefore stay where show_opts_init put it.
	 */
	struct opt options[22];
};

void show_opts_init(struct show_opts *so);
void show_opts_release(struct show_opts *so);
/*
 * Writes the JSON (-o FILE, stdout for --json or -o -, descriptor N for
 * --json-fd), the report on stdout unless --no-report or stdout carries
 * machine output, every export, sends to --otlp and --push-gateway, then checks budgets.  Returns 0, or
 * EXIT_FAIL when a file could not be written, a send failed or a budget failed (the
 * explanation is printed on stderr).
 */
int show_profile(const struct profile *p, const struct show_opts *so);
/*
 * Sends the profile to --otlp and --push-gateway when given (show_profile
 * does, after the files).  0, or EXIT_FAIL with the reason printed.
 */
int show_send(const struct profile *p, const struct show_opts *so);
/*
 * Whether stdout carries machine output (--json, -o -, an export to "-"):
 * then the report is not printed and a measured target's stdout goes to
 * coldstart's stderr, so stdout holds that output alone.
 */
bool show_stdout_taken(const struct show_opts *so);

#endif
