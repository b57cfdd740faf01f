/*
 * Readiness probes: when is a started server ready, and how long until its
 * first response.  "fn" plays the Fn agent (private FN_LISTENER directory,
 * waits for the lsnr.sock symlink, checks the socket rules, sends the first
 * POST /call); "tcp:PORT", "http://127.0.0.1:PORT/path" (first 2xx; a 5xx is
 * false readiness) and "unix:PATH" connect until they succeed.
 */
#ifndef COLDSTART_READY_H
#define COLDSTART_READY_H

#include <stdint.h>
#include <sys/types.h>

#include "util.h"

struct ready;

/*
 * Parses spec and prepares the probe; env is the child's full environment
 * and gets FN_LISTENER and friends for "fn".  NULL with a message in err on
 * a bad spec.
 */
struct ready *ready_new(const char *spec, struct strvec *env, struct buf *err);
/* Tells the probe the target was started (exec_ns: CLOCK_MONOTONIC). */
void ready_started(struct ready *rd, pid_t pid, int64_t exec_ns);
/*
 * The descriptor the run loop should poll for the probe (-1 for none) and
 * the longest it may sleep before calling ready_step again.
 */
int ready_pollfd(struct ready *rd, int *timeout_ms);
/*
 * Advances the probe without blocking for long: 0 still waiting, 1 when
 * ready and the first response were measured, -1 on failure (message in
 * err, e.g. a 5xx answer or a symlink that breaks the Fn rules).
 */
int ready_step(struct ready *rd, struct buf *err);
/* exec -> ready and ready -> first response, UNKNOWN (-1) when not reached. */
int64_t ready_ready_us(const struct ready *rd);
int64_t ready_response_us(const struct ready *rd);
/* Removes the private directory, closes sockets. */
void ready_free(struct ready *rd);

/*
 * fn: the private FN_LISTENER directory on this host (for `docker`, which
 * mounts it as /tmp/iofs); NULL for the other probes.  Owned by rd.
 */
const char *ready_fn_dir(const struct ready *rd);

#endif
