/*
 * One run of a target for `coldstart plan`: start it, wait until it is
 * ready, send the sample requests one after the other and keep every
 * response, then (when recording) tell the planning bootstrap to write the
 * plan and wait for it, and stop the target.  The target's stderr is kept
 * (its last 8 KiB) for error messages, not forwarded.  Processes, sockets
 * and the private Fn directory are removed on every path, also on Ctrl-C.
 */
#ifndef COLDSTART_PLAN_TARGET_H
#define COLDSTART_PLAN_TARGET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util.h"

enum plan_probe {
	PLAN_PROBE_EXIT, /* a script or CLI: the response is its stdout, stderr and exit status */
	PLAN_PROBE_FN, /* an Fn function: FN_LISTENER, lsnr.sock, POST /call per request */
	PLAN_PROBE_HTTP, /* an HTTP server on 127.0.0.1: GET (no request) or POST per request */
};

/*
 * A request body: a regular file, opened once (fd) and sent from it in
 * chunks at every run (size bytes, its size when opened), never read whole.
 */
struct plan_body {
	const char *path;
	int fd;
	uint64_t size;
};

struct plan_target {
	const char *const *argv; /* the complete argv */
	const char *const *env; /* the complete environment */
	enum plan_probe probe;
	/* PLAN_PROBE_HTTP: where to send; host is a loopback name or address. */
	const char *host;
	int port;
	const char *path;
	/* Request bodies, nr_requests of them (PLAN_PROBE_EXIT: none). */
	const struct plan_body *requests;
	size_t nr_requests;
	int64_t timeout_us; /* for the whole run; > 0 */
	/* Recording: the planning bootstrap writes this file; NULL when not recording. */
	const char *record_path;
};

enum plan_status {
	PLAN_RUN_OK = 0,
	PLAN_RUN_NO_EXEC, /* the program could not be started */
	PLAN_RUN_EXITED, /* it ended before answering every request */
	PLAN_RUN_NOT_READY, /* no readiness before the timeout */
	PLAN_RUN_TIMEOUT, /* a response or the plan did not come in time */
	PLAN_RUN_FAILED, /* a protocol or system error (message in err) */
	PLAN_RUN_INTERRUPTED, /* coldstart got SIGINT, SIGTERM or SIGHUP */
};

struct plan_outcome {
	/* One normalised response per request: status line, headers but Date, body. */
	struct buf *responses;
	size_t nr_responses;
	int64_t ready_us; /* exec -> ready, -1 unknown */
	int64_t first_us; /* exec -> first response, -1 unknown */
	struct buf stderr_tail; /* the target's last stderr bytes */
	/*
	 * The server answered request early_request (from 1) before it had
	 * read all of its body (a 413): early_sent of the body's bytes went
	 * out.  0: every body was sent whole.
	 */
	size_t early_request;
	uint64_t early_sent;
	int exit_code; /* -1 unless it exited */
	int term_signal; /* 0 unless a signal ended it before we stopped it */
	/*
	 * Recording a server: the Python processes the target started (not
	 * forked) that were running with the planning environment at the last
	 * response, one "PID COMMAND" a line.  They record nothing: when one of
	 * them answered, the plan is of a process that did not.
	 */
	struct buf unrecorded;
	/*
	 * --verify: what the run wrote under the working directory, compared
	 * with the state the recording started from (plan_files_diff).
	 */
	struct buf files;
};

void plan_outcome_init(struct plan_outcome *o);
void plan_outcome_release(struct plan_outcome *o);

/*
 * Runs the target once.  Returns PLAN_RUN_OK when every request was
 * answered (and, when recording, the plan file exists), else a status with
 * a message in err.  o is filled as far as the run got.
 */
enum plan_status plan_target_run(const struct plan_target *t, struct plan_outcome *o, struct buf *err);

/* Installs SIGINT/SIGTERM/SIGHUP handlers that make runs stop; call once. */
void plan_target_setup_signals(void);
/* The signal that interrupted a run, 0 for none. */
int plan_target_interrupted(void);

#endif
