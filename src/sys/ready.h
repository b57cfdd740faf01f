/*
 * Readiness probes: when is a started server ready, and how long until its
 * first response.  Readiness is an event of the target:
 *
 *   fn                 plays the Fn agent: a private FN_LISTENER directory,
 *                      waits for the lsnr.sock symlink, checks the socket
 *                      rules, and the first POST /call must be answered 200
 *   tcp:PORT           a connection to 127.0.0.1:PORT accepted by a listener
 *                      of the target's process tree
 *   http://HOST:PORT/PATH  the same listener answering GET PATH with an
 *                      accepted status (2xx and 3xx unless --ready-status
 *                      says otherwise); HOST must be a loopback address
 *   unix:PATH          a connection to the unix socket PATH accepted by a
 *                      listener of the target's process tree
 *
 * A port held by another process is not readiness: the probe fails with
 * "port PORT is in use by pid N".
 */
#ifndef COLDSTART_READY_H
#define COLDSTART_READY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util.h"

#include "sys/ready_spec.h"

struct ready;

/*
 * Prepares the probe for spec (which must outlive it); env is the child's
 * full environment and gets FN_LISTENER and friends for "fn".  NULL with a
 * message in err when the probe cannot be set up.
 */
struct ready *ready_new(const struct ready_spec *spec, struct strvec *env, struct buf *err);
/*
 * Tells the probe the target was started (exec_ns: CLOCK_MONOTONIC).
 * tree_root is the process whose descendants may hold the target's
 * listener (the runner passes itself: a subreaper, orphans come back to
 * it), or 0 when the target runs elsewhere (docker): then only a listener
 * that did not exist when ready_new ran can be the target's.
 */
void ready_started(struct ready *rd, pid_t tree_root, int64_t exec_ns);
/*
 * The descriptor the run loop should poll for the probe (-1 for none), the
 * events to poll it for (POLLOUT while a connect or the request is under
 * way, so that its completion wakes the loop at once) and the longest it
 * may sleep before calling ready_step again, in microseconds: a loop that
 * rounds it up to whole milliseconds (poll) makes the next retry up to a
 * millisecond late.
 */
int ready_pollfd(struct ready *rd, short *events, int64_t *timeout_us);
/*
 * Advances the probe without blocking for long: 0 still waiting, 1 when
 * ready and the first response were measured, -1 when readiness cannot
 * come (message in err, e.g. the port is another process's, an answer that
 * is not accepted, a symlink that breaks the Fn rules, a first call
 * answered 502).
 */
int ready_step(struct ready *rd, struct buf *err);
/*
 * exec -> ready and ready -> first response, UNKNOWN (-1) when not reached.
 * Ready is, for tcp: and unix:, when the target's listener first accepted a
 * connection; for http://, when the first accepted answer came (so a server
 * that listens at once and answers only once its app is loaded is ready
 * when it answers, and its first response is ready itself: 0); for fn, when
 * lsnr.sock appeared, if the first call was then answered 200, which is the
 * first response (the Fn agent's deadline starts at the symlink).
 */
int64_t ready_ready_us(const struct ready *rd);
int64_t ready_response_us(const struct ready *rd);
/*
 * exec -> the first connection the target's listener accepted (tcp, http,
 * unix), UNKNOWN when none was or for fn.  For http it may come long
 * before ready: gunicorn's master listens before its workers load the app.
 */
int64_t ready_listening_us(const struct ready *rd);
/* The same moment of readiness on CLOCK_MONOTONIC (the trace's clock), UNKNOWN. */
int64_t ready_ready_ns(const struct ready *rd);
/*
 * While not ready: appends to out what the probe saw last that was not
 * readiness, e.g. "GET / answered 500 Internal Server Error (4 times)", for
 * the message when --ready-timeout passes; nothing when nothing answered.
 */
void ready_why_not(const struct ready *rd, struct buf *out);
/* Removes the private directory, closes sockets.  NULL is fine. */
void ready_free(struct ready *rd);

/*
 * fn: the private FN_LISTENER directory on this host (for `docker`, which
 * mounts it as /tmp/iofs); NULL for the other probes.  Owned by rd.
 */
const char *ready_fn_dir(const struct ready *rd);

#endif
