/*
 * One profiled run of a target: launch under optional cgroup limits with
 * importtime and the tracer, forward the target's stderr while parsing it,
 * enforce the timeout, handle Ctrl-C / SIGTERM, probe readiness, and fill a
 * struct run.  Cleans up processes and cgroups on every path.
 */
#ifndef COLDSTART_RUNNER_H
#define COLDSTART_RUNNER_H

#include <stdbool.h>

#include "profile.h"

struct runner_child_view;
struct timeline_opts;

struct runner_opts {
	/* The complete argv of the child (interpreter flags included). */
	const char *const *argv;
	/* Extra environment entries ("NAME=value") on top of ours. */
	const char *const *env;
	const char *python; /* interpreter, for the tracer build; may be NULL */
	bool trace;
	/* With trace: also sample the Python code into timelines (sampler.h); NULL: off. */
	const struct timeline_opts *timeline;
	bool use_limits; /* create a cgroup with p->limits */
	int64_t timeout_us; /* 0 = none */
	const char *ready; /* readiness spec (ready.h) or NULL */
	int64_t ready_timeout_us; /* how long to wait for readiness */
	bool quiet; /* drop the target's stderr instead of forwarding it */
	int raw_fd; /* >= 0: every byte of the target's stderr is copied here too */
	bool progress; /* unused by the runner; for callers */
	/* Optional, for `docker`: see runner_child_view below (NULL: none). */
	int (*before_start)(void *data, struct runner_child_view *cv, struct buf *err);
	void *before_start_data;
};

/* Why the runner could not produce a run at all. */
enum runner_error {
	RUNNER_OK = 0,
	RUNNER_FAILED, /* internal failure (pipes, files) */
	RUNNER_NO_LIMITS, /* limits asked for and unavailable */
	RUNNER_NO_EXEC, /* the program could not be executed */
	RUNNER_INTERRUPTED, /* coldstart got SIGINT/SIGTERM/SIGHUP */
};

/*
 * Runs the target once into r (added by the caller with profile_add_run).
 * Returns RUNNER_OK when r describes what happened (whatever the target
 * did), else an error with a message in err.  On RUNNER_INTERRUPTED,
 * *signo holds the signal received; everything was cleaned up.
 */
enum runner_error runner_run(const struct runner_opts *o, struct profile *p, struct run *r,
			     struct buf *err, int *signo);

/* Installs the signal handlers runner_run relies on; call once. */
void runner_setup_signals(void);

/*
 * For callers whose child is not the target itself (`docker` runs the engine
 * CLI, which starts the target in a container): before_start is called once
 * the trace session and the readiness probe exist and before the child
 * starts.  argv and env are the child's and may be rewritten; trace_dir and
 * boot_dir are the host directories of the trace session (NULL when the
 * tracer is off or unavailable); ready is the probe (NULL without --ready,
 * see ready_fn_dir).  Returning -1 with a message in err ends the run with
 * RUNNER_FAILED.
 */
struct runner_child_view {
	struct strvec *argv;
	struct strvec *env;
	const char *trace_dir;
	const char *boot_dir;
	const struct ready *ready;
};

#endif
