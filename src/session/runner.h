/*
 * One profiled run of a target: launch under optional cgroup limits with
 * importtime and the tracer, forward the target's stderr while parsing it,
 * enforce the timeout, handle Ctrl-C / SIGTERM, probe readiness, and fill a
 * struct run.  Cleans up processes and cgroups on every path.
 */
#ifndef COLDSTART_RUNNER_H
#define COLDSTART_RUNNER_H

#include <stdbool.h>

#include "model/profile.h"

struct ready_spec;
struct runner_child_view;
struct timeline_opts;

struct runner_opts {
	/* The complete argv of the child (interpreter flags included). */
	const char *const *argv;
	/* Extra environment entries ("NAME=value") on top of ours. */
	const char *const *env;
	const char *python; /* interpreter, for the tracer build; may be NULL */
	bool trace;
	/* With trace: the tracer also records the files read besides modules (proc.reads), for --cold. */
	bool trace_reads;
	/* With trace: also sample the Python code into timelines (sampler.h); NULL: off. */
	const struct timeline_opts *timeline;
	bool use_limits; /* create a cgroup with p->limits */
	int64_t timeout_us; /* 0 = none */
	const struct ready_spec *ready; /* readiness probe (ready.h) or NULL */
	int64_t ready_timeout_us; /* how long to wait for readiness */
	/*
	 * With an http:// ready: once ready, this many requests one after
	 * another (http_load.h), each given ready_timeout_us, before the target
	 * is stopped; 0: stop it at once.
	 */
	size_t requests;
	bool quiet; /* drop the target's stderr instead of forwarding it */
	int raw_fd; /* >= 0: every byte of the target's stderr is copied here too */
	int stdout_fd; /* >= 0: the target's stdout goes here (2: coldstart's stderr); -1: coldstart's stdout */
	/*
	 * Called with each warning that says the run went otherwise than asked
	 * (the tracer is unavailable, readiness failed or was not reached) at
	 * the moment it is recorded in the profile; the caller decides whether
	 * to show it.  NULL: recorded only.
	 */
	void (*notify)(void *data, const char *msg);
	void *notify_data;
	/*
	 * Optional: called last before the child starts, after everything the
	 * run prepares (the tracer's build check runs the interpreter, which
	 * reads its files).  The --cold eviction goes here, so that nothing of
	 * coldstart's warms the page cache between it and the target's exec.
	 * Returning -1 with a message in err ends the run as before_start does.
	 */
	int (*before_exec)(void *data, struct buf *err);
	void *before_exec_data;
	/* Optional, for `docker`: see runner_child_view below (NULL: none). */
	int (*before_start)(void *data, struct runner_child_view *cv, struct buf *err);
	void *before_start_data;
};

/* Why runner_run produced no run (it returned -1); zeroed on every call. */
struct runner_failure {
	/*
	 * coldstart received this signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT)
	 * and stopped the target: the caller exits 128 + signo.  What the run
	 * measured until then is in r, but it is not a complete run.
	 */
	int signo;
	bool no_limits; /* limits asked for and unavailable (the message says what to do) */
	bool no_exec; /* the program could not be executed */
	int exec_errno; /* with no_exec: ENOENT when it does not exist, ... */
};

/*
 * Runs the target once into r (added by the caller with profile_add_run).
 * Returns 0 when r describes what happened (whatever the target did), else
 * -1 with a message in err and the reason in *why.  Everything the run
 * started is cleaned up on both paths.
 */
int runner_run(const struct runner_opts *o, struct profile *p, struct run *r, struct buf *err,
	       struct runner_failure *why);

/* Installs the signal handlers runner_run relies on (runner_run calls it too). */
void runner_setup_signals(void);
/*
 * After the last run: from now on (the analysis, the report, the files) a
 * SIGINT, SIGTERM, SIGHUP or SIGQUIT ends coldstart at once with 128 + N,
 * as one during a run does; there is nothing left to clean up.  Returns a
 * signal that already arrived since the last run looked (the caller exits
 * 128 + N), else 0.
 */
int runner_after_runs(void);

/*
 * For callers whose child is not the target itself (`docker` runs the engine
 * CLI, which starts the target in a container), so its process tree is not
 * the target's (readiness then cannot look for the listener there, see
 * ready_started): before_start is called once
 * the trace session and the readiness probe exist and before the child
 * starts.  argv and env are the child's and may be rewritten; trace_dir and
 * boot_dir are the host directories of the trace session (NULL when the
 * tracer is off or unavailable); ready is the probe (NULL without --ready,
 * see ready_fn_dir).  Returning -1 with a message in err ends the run:
 * runner_run returns -1 with that message.
 */
struct runner_child_view {
	struct strvec *argv;
	struct strvec *env;
	const char *trace_dir;
	const char *boot_dir;
	const struct ready *ready;
};

#endif
