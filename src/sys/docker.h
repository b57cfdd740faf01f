/*
 * The container engine seen through its CLI (docker or podman): the argv of
 * `create` for one profiled run (limits, environment, mounts), the engine
 * control around it (is the engine there, is the image, remove a container,
 * clean up after a SIGKILLed coldstart, ask the image's Python), commands
 * run with a timeout, and the container state read back from `inspect`.
 * Nothing here prints: messages go into a caller's err, warnings into the
 * profile.  No shell ever builds an argv.
 */
#ifndef COLDSTART_DOCKER_H
#define COLDSTART_DOCKER_H

#include <stdbool.h>
#include <stdint.h>

#include "model/runlimits.h"
#include "model/profile.h"
#include "util.h"

/* Where the tracer bootstrap and the trace directory appear in the container. */
#define DOCKER_BOOT_MOUNT "/opt/coldstart/python/coldstart"
#define DOCKER_BOOT_PATH DOCKER_BOOT_MOUNT "/_boot"
#define DOCKER_TRACE_MOUNT "/opt/coldstart/trace"
/* The Fn agent's directory inside a function container. */
#define DOCKER_FN_MOUNT "/tmp/iofs"

/* Everything one `ENGINE create` needs; strings are borrowed. */
struct docker_spec {
	const char *engine; /* "docker" or "podman" (the CLI to run) */
	const char *name; /* container name, e.g. coldstart-<pid>-<n> */
	const char *image;
	const char *const *command; /* COMMAND ARGS... after the image; may be NULL */
	const struct limits *limits; /* NULL or no limits: unconstrained */
	struct strvec env; /* "-e" values as the user gave them, then ours */
	struct strvec volumes; /* "-v" values */
	struct strvec extra; /* further engine arguments, passed verbatim before the image */
	const char *network;
	const char *user;
	const char *entrypoint;
	bool init; /* --init: a real PID 1 that forwards signals and reaps */
	bool importtime; /* -e PYTHONPROFILEIMPORTTIME=1 */
	/* Host directories to mount, NULL for none. */
	const char *boot_dir; /* python/coldstart (read-only, tracer bootstrap) */
	const char *trace_dir; /* the run's trace directory (read-write) */
	const char *fn_dir; /* the private FN_LISTENER directory (read-write) */
	int publish_port; /* > 0: -p 127.0.0.1:PORT:PORT (unless host network) */
};

void docker_spec_init(struct docker_spec *ds);
void docker_spec_release(struct docker_spec *ds);

/*
 * Appends the engine flags for lim: --cpus, --memory with --memory-swap
 * (memory + swap, or -1 for unlimited swap), --pids-limit, --cpuset-cpus.
 * Returns 0, or -1 with limits_check's message in err when the limits cannot
 * be expressed (swap without memory).
 */
int docker_limit_args(const struct limits *lim, struct strvec *argv, struct buf *err);

/*
 * Builds the complete argv of `ENGINE create ...` for ds into argv.  Returns
 * 0, or -1 with a message in err (missing image, bad limits).
 */
int docker_create_argv(const struct docker_spec *ds, struct strvec *argv, struct buf *err);

/* The container's end state, from `inspect` with DOCKER_STATE_FORMAT. */
struct docker_state {
	bool oom_killed;
	int exit_code;
	bool started; /* StartedAt is set: the container's process ran */
	int64_t started_ns; /* CLOCK_REALTIME nanoseconds, 0 when unset */
	int64_t finished_ns;
	char *status; /* "exited", "created", "running", ... */
	char *error; /* the engine's message when it could not start; NULL if none */
};

/* The --format given to `ENGINE inspect` for docker_state_parse. */
extern const char DOCKER_STATE_FORMAT[];

/*
 * Parses the one line `inspect --format DOCKER_STATE_FORMAT` prints.
 * Returns 0, or -1 with a message in err when the text is not that line.
 * Release st with docker_state_release even after an error.
 */
int docker_state_parse(struct docker_state *st, const char *text, struct buf *err);
void docker_state_release(struct docker_state *st);

/*
 * Parses an RFC 3339 UTC time with optional fraction ("2026-11-30T09:45:12.
 * 123456789Z") into nanoseconds since the epoch.  The engines' zero time
 * ("0001-01-01T00:00:00Z") and anything before 1970 give 0.  Returns 0 or -1.
 */
int docker_parse_time(const char *s, int64_t *ns);

/*
 * Runs a control command (version, inspect, rm ...) to completion, with no
 * stdin, capturing stdout into out and stderr into errout (either may be
 * NULL to drop it), killed after timeout_ms.  Returns the exit status (0..255,
 * 128+N for a signal), or -1 with a message in err when the command could not
 * run at all (errno ENOENT: not installed) or timed out (errno ETIMEDOUT).
 */
int docker_exec(const char *const *argv, int timeout_ms, struct buf *out, struct buf *errout, struct buf *err);

/* An engine CLI and how long each of its control commands may take. */
struct docker_engine {
	const char *cli; /* "docker" or "podman" */
	int timeout_ms;
};

/*
 * Runs one control command of e (argv[0] is the CLI) like docker_exec.
 * Returns its exit status, or -1 with a message in err that says what to do
 * (install the CLI, --engine-timeout) when it could not run or timed out.
 */
int docker_engine_run(const struct docker_engine *e, const char *const *argv, struct buf *out, struct buf *errout,
		      struct buf *err);
/* Is the engine there and answering?  0, or -1 with a message in err. */
int docker_check_engine(const struct docker_engine *e, struct buf *err);
/*
 * Is the image present?  0 with the image's own PYTHONPATH (or NULL; the
 * caller frees it) in *pythonpath, or -1 with a message in err.  coldstart
 * never pulls: a pull inside a measured run would be measured.
 */
int docker_check_image(const struct docker_engine *e, const char *image, char **pythonpath, struct buf *err);
/*
 * Removes the container name, killing it first.  0 (also when it is gone
 * already), or -1 with a message in err.
 */
int docker_remove(const struct docker_engine *e, const char *name, struct buf *err);
/*
 * Removes the containers of coldstart processes of this host that died
 * without cleaning up.  0, or -1 with the first failure in err.
 */
int docker_cleanup_stale(const struct docker_engine *e, struct buf *err);
/*
 * Appends the labels that mark a container as this process's
 * ("coldstart.pid", "coldstart.host": a DOCKER_HOST daemon may be shared).
 */
void docker_owner_labels(struct strvec *argv);
/*
 * Runs ds->command in a throw-away container of ds->image with no network,
 * as ds->user, with ds->env and ds->volumes (the interpreter may live in a
 * volume or need the user's environment), python as the entrypoint.  The
 * same returns as docker_engine_run; the container is gone afterwards.
 */
int docker_probe(const struct docker_engine *e, const struct docker_spec *ds, const char *python, struct buf *out,
		 struct buf *errout, struct buf *err);
/*
 * Reads the end state of container name into r after the runner measured
 * it: wall time from the engine's clock, OOM kills, the exit status or
 * signal.  Returns 0 (what could not be read is a warning in p), or -1
 * with a message in err when the container's process never ran (the
 * command is missing in the image, the engine refused the limits, ...).
 */
int docker_read_state(const struct docker_engine *e, const char *name, struct profile *p, struct run *r,
		      struct buf *err);

#endif
