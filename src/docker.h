/*
 * The container engine seen through its CLI (docker or podman): the argv of
 * `create` for one profiled run (limits, environment, mounts), control
 * commands run with a timeout, and the container state read back from
 * `inspect`.  No shell ever builds an argv.
 */
#ifndef COLDSTART_DOCKER_H
#define COLDSTART_DOCKER_H

#include <stdbool.h>
#include <stdint.h>

#include "runlimits.h"
#include "profile.h"
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

/* The last non-empty line of text, trimmed, for one-line error messages. */
void docker_last_line(const char *text, struct buf *out);

#endif
