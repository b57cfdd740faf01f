/*
 * Measuring a target: the options every measuring command takes (--runs,
 * --warmup, --timeout, the limits, --ready, ...), and the exit status a
 * measured profile ends with.
 */
#ifndef COLDSTART_MEASURE_H
#define COLDSTART_MEASURE_H

#include <stdbool.h>
#include <stdint.h>

#include "args.h"
#include "profile.h"

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
	int64_t ready_timeout_us;
	/*
	 * The option table that sets the fields above, for OPT_INCLUDE.  It
	 * points into the struct, which must stay where measure_opts_init put it.
	 */
	struct opt options[16];
};

void measure_opts_init(struct measure_opts *m);
void measure_opts_release(struct measure_opts *m);
/*
 * After parsing: drops the limits for --no-limits, else checks them together
 * (--swap needs --memory), and hands them to *out (the profile's; m keeps
 * none).  -1 with a message in err: a usage error.
 */
int measure_opts_finish(struct measure_opts *m, struct limits *out, struct buf *err);

/*
 * The exit status for the measured runs of p: 0, EXIT_NOT_READY when ready
 * was asked for and a run never got there, or EXIT_TARGET_* for the first
 * run that did not end cleanly.  With passthrough, that run's own status
 * (its code, or 128 + signal) instead.
 */
int profile_exit_status(const struct profile *p, bool ready, bool passthrough);

#endif
