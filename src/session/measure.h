/*
 * A measuring session: what `profile` and `docker` share once the command
 * line is read.  The interpreter probe, the unconstrained baseline, warm-up
 * and measured runs with their progress line, the analysis, and the exit
 * status, written once; where the target runs (this host's processes, a
 * container) is a struct measure_target.
 *
 *	struct measure_session s;
 *
 *	measure_session_init(&s, &p, "profile", &o.m, &o.show, &measure_local);
 *	p.python = ...; p.cwd = ...;                (the command's metadata)
 *	measure_probe(&s, python, "at '/usr/bin/python3'", &err);   (optional)
 *	s.ro.argv = ...; s.ro.env = ...; s.ro.trace = ...;    (what to run)
 *	s.baseline = ...;
 *	ret = measure_run(&s);                      (every run)
 *	if (!ret) ret = measure_finish(&s, &o.show);  (analysis, output, status)
 *	measure_session_release(&s);
 *
 * `compare` runs several sessions interleaved, one run at a time, with
 * measure_run_one.
 *
 * A run-time feature that every measuring command gets (a new figure per
 * run, a new kind of run) goes into measure_run or the runner; one that
 * depends on where the target runs goes behind struct measure_target.
 */
#ifndef COLDSTART_MEASURE_H
#define COLDSTART_MEASURE_H

#include <stdbool.h>
#include <stdint.h>

#include "args.h"
#include "model/profile.h"
#include "sys/ready.h"
#include "session/runner.h"

struct show_opts;

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
	bool cold; /* evict the target's files from the page cache before each run (cold.h) */
	/*
	 * The option table that sets the fields above, for OPT_INCLUDE.  It
	 * points into the struct, which must stay where measure_opts_init put it.
	 */
	struct opt options[18];
};

void measure_opts_init(struct measure_opts *m);
void measure_opts_release(struct measure_opts *m);
/*
 * After parsing: drops the limits for --no-limits, else checks them together
 * (--swap needs --memory), and hands them to *out (the profile's; m keeps
 * none); parses --ready and --ready-status into m->ready_spec.  -1 with a
 * message in err: a usage error.
 */
int measure_opts_finish(struct measure_opts *m, struct limits *out, struct buf *err);

/*
 * Where the target runs.  Each hook may be NULL (nothing to do); self is
 * handed back to every one of them.
 */
struct measure_target {
	/*
	 * Runs the target's interpreter python with args to completion, stdout
	 * into out and stderr into errout.  Returns its exit status (128+N for
	 * signal N), or -1 with a message in err when it could not be run.
	 */
	int (*probe)(void *self, const char *python, const char *const *args, struct buf *out, struct buf *errout,
		     struct buf *err);
	/* Before run r (index counts the session's runs from 0); -1 with a message in err ends the session. */
	int (*run_begin)(void *self, struct run *r, size_t index, struct buf *err);
	/*
	 * After the runner filled r (why: NULL, or why it made no run; its
	 * message is printed already): the target's own account of the run,
	 * and cleanup of what run_begin made.  Returns 0, or the exit code that
	 * ends the session after a message.
	 */
	int (*run_end)(void *self, struct profile *p, struct run *r, const struct runner_failure *why);
	void *self;
	/* The target applies p->limits itself (an engine's flags); else each run gets a cgroup. */
	bool applies_limits;
	/* A probe that cannot tell means importtime only, with a warning; else it is an error. */
	bool probe_optional;
	/* The interpreter's paths (site-packages) are this host's, so classification may look at them. */
	bool paths_on_host;
};

/* This host's processes: the runner runs the target itself. */
extern const struct measure_target measure_local;

struct cold_set;

struct measure_session {
	struct profile *p;
	const struct measure_opts *opts;
	const struct show_opts *show; /* where the profile goes; NULL when the command shows it its own way */
	const struct measure_target *target;
	/*
	 * The runner's options.  The command sets what to run: argv, env,
	 * python, trace, raw_fd, before_start; measure_run sets the rest from
	 * opts (timeout, readiness, quiet, use_limits per run).
	 */
	struct runner_opts ro;
	/*
	 * Unconstrained runs first, as many as the measured ones, so the report
	 * can compare the medians of both (profile under limits).
	 */
	bool baseline;
	/* From measure_probe; empty when there was no probe or it could not tell. */
	struct strvec stdlib_names;
	struct strvec site_dirs;
	char *executable; /* sys.executable */
	char *cache_tag; /* sys.implementation.cache_tag, "cpython-311" */
	struct strvec ext_suffixes; /* importlib.machinery.EXTENSION_SUFFIXES */
	struct strvec search_dirs; /* sys.path under -E -s: the stdlib, lib-dynload, site-packages */
	/*
	 * Evict the target's files before each run even without opts->cold:
	 * the command's choice for this session (compare --cache cold).
	 */
	bool evict;
	/* With evict: the files the runs so far read (cold.h); NULL until the first run. */
	struct cold_set *cold;
	bool checked; /* the checks of the first run are done */
};

/*
 * For "-- command": the interpreter that runs, when the command is one
 * (python3 -m ..., python3.11 app.py) or its #! line names one; NULL
 * otherwise.  The caller frees it.
 */
char *measure_command_python(const char *cmd);
/*
 * The child's argv for the target at argv[i..]: with python, a script, -m
 * module or -c code under `python -X importtime`; without (after "--"), a
 * command as it is, with PYTHONPROFILEIMPORTTIME=1 in env.  Records the
 * target in p.  Returns 0, or the exit code after a message.
 */
int measure_target_argv(int argc, char **argv, int i, const char *python, struct profile *p, struct strvec *child_argv,
			struct strvec *env);

/*
 * Starts a session for profile p (which stays the caller's), measured as
 * opts say, shown as show says (may be NULL), on target.  Stamps p with
 * coldstart's version, the command and the time.  When show puts machine
 * output on stdout (--json, -o -), the target's stdout goes to coldstart's
 * stderr, so stdout carries nothing else.
 */
void measure_session_init(struct measure_session *s, struct profile *p, const char *command,
			  const struct measure_opts *opts, const struct show_opts *show,
			  const struct measure_target *target);
void measure_session_release(struct measure_session *s);

/*
 * Asks python, run as the target runs it, for its version, standard-library
 * names and site-packages directories (where: "at '/usr/bin/python3'", "in
 * image 'x'", for messages).  Returns 0 with p->python_version set, -1 when
 * it could not tell and the target goes on without it (probe_optional: a
 * warning, recorded and printed, says importtime only), or EXIT_NO_PYTHON
 * with err saying why the interpreter cannot be profiled (missing, not
 * Python, older than 3.7); EXIT_USAGE with err saying why for --cold on a
 * target whose files are not this host's.
 */
int measure_probe(struct measure_session *s, const char *python, const char *where, struct buf *err);

/*
 * Every run: the baseline (--runs of them, when asked), --warmup and --runs,
 * with a progress line on a terminal; the runner's alerts are printed as
 * they happen.  With --cold the warm-up runs come first, at least one: it
 * learns which files the target reads.  Returns 0, or the exit code after a
 * message: 128+N when coldstart got signal N (during a run, or after the
 * last one: from then on a signal ends coldstart at once, see
 * measure_runs_done), EXIT_LIMITS, EXIT_NO_PYTHON, EXIT_FAIL, EXIT_USAGE
 * (--cold where the target's files are not on this host), or what the
 * target's run_end said.
 */
int measure_run(struct measure_session *s);

enum measure_kind { MEASURE_BASELINE, MEASURE_WARMUP, MEASURE_MEASURED };
/*
 * One run of the given kind, added to the profile (what measure_run does
 * for each): the checks that need the target first (a --cpuset CPU that
 * does not exist, --cold on a container), the eviction with --cold, the
 * run itself.  Returns as measure_run.
 */
int measure_run_one(struct measure_session *s, enum measure_kind kind);
/*
 * After a session's last run (compare: after the last round): from here a
 * signal ends coldstart at once (runner_after_runs).  Returns 0, or 128+N
 * after a message when signal N came in the meantime.
 */
int measure_runs_done(void);
/* How many warm-up runs measure_run makes: --warmup, and at least one with --cold (evict true). */
int measure_warmups(const struct measure_opts *m, bool evict);

/* Classifies the profile's imports with what the probe said, and runs the findings. */
void measure_analyze(struct measure_session *s);
/*
 * Analyses the profile, shows it as so says, and returns the exit status:
 * the target's (profile_exit_status), else the output's (a file that could
 * not be written, a broken budget).
 */
int measure_finish(struct measure_session *s, const struct show_opts *so);

/*
 * The exit status for the measured runs of p: 0, EXIT_NOT_READY when ready
 * was asked for and a run never got there, EXIT_TARGET_* for the first run
 * that did not end cleanly, else EXIT_NO_IMPORTS when no measured run
 * recorded an import.  With passthrough, the target's own status (its
 * code, or 128 + signal) instead.
 */
int profile_exit_status(const struct profile *p, bool ready, bool passthrough);

#endif
