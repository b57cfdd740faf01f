/*
 * The start-up sampler seen from the C tool (--timeline): the extension
 * built for the target's interpreter and switched on in its environment,
 * then, after the run, every process's samples file read into that
 * process's timeline (timeline.h), cut where the profile's time ends.
 */
#ifndef COLDSTART_SAMPLER_H
#define COLDSTART_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

struct profile;
struct run;

/* Where the timeline of a run ends (--until). */
enum tl_until {
	TL_UNTIL_DEFAULT = 0, /* at readiness with --ready, else at the exit */
	TL_UNTIL_READY,
	TL_UNTIL_FIRST_RESPONSE,
	TL_UNTIL_EXIT,
};
/* Parses "ready", "first-response" or "exit"; -1 for anything else. */
int tl_until_from_name(const char *s);

#define SAMPLER_DEFAULT_INTERVAL_US 1000

struct timeline_opts {
	bool on;
	int64_t interval_us; /* the main thread's sampling interval of wall time */
	enum tl_until until;
};

/*
 * Builds (or finds) the sampler for python and adds what switches it on to
 * env, which already holds the tracer's bootstrap (trace_prepare): the
 * samples files go to trace_dir, which is also where the sampler is built
 * when the build cache is refused (note says why, as ext_build_ensure).
 * Returns 0, or -1 with the reason in err (no timeline then; the run goes
 * on).
 */
int sampler_prepare(const char *trace_dir, const char *python, const struct timeline_opts *o, struct strvec *env,
		    struct buf *note, struct buf *err);

/* The moments of the run the runner knows (CLOCK_MONOTONIC ns, UNKNOWN where not known). */
struct sampler_times {
	long pid; /* the process the runner started */
	int64_t exec_ns; /* its exec: where the run's wall time and readiness are measured from */
	int64_t exit_ns; /* its exit */
};

/*
 * Reads the samples files of trace_dir and gives each traced process of r
 * its timeline, cut as o says.  Everything that went wrong becomes a warning
 * of p.
 */
void sampler_collect(const char *trace_dir, struct profile *p, struct run *r, const struct sampler_times *t,
		     const struct timeline_opts *o);

#endif
