/*
 * The kernel's process events (the netlink proc connector) for one target's
 * process tree: when each of its processes exec'd, on CLOCK_MONOTONIC.
 *
 * Life cycle: procwatch_open before the target is started (events queue in
 * the socket from then on), procwatch_follow(pid) once its pid is known,
 * procwatch_drain at every turn of the run loop and once after the exit,
 * then procwatch_exec_ns to ask, and procwatch_release.
 *
 * Listening needs CAP_NET_ADMIN: without it procwatch_open returns -1 with
 * the reason in err, and callers keep their own estimates.  Events the
 * socket could not hold are lost; procwatch_lost() then says so, and an
 * answer may miss an exec (callers must not trust it for "the last exec").
 */
#ifndef COLDSTART_PROCWATCH_H
#define COLDSTART_PROCWATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "util.h"

struct procwatch_exec {
	pid_t pid; /* the process (thread group) that exec'd */
	int64_t ns; /* CLOCK_MONOTONIC of the exec */
};

struct procwatch {
	int fd; /* -1: not listening */
	bool lost; /* the socket overflowed: some events are missing */
	pid_t *tree; /* the followed pids: the root and its descendants seen forking */
	size_t nr_tree, alloc_tree;
	struct procwatch_exec *execs; /* in the order the kernel sent them */
	size_t nr_execs, alloc_execs;
};

void procwatch_init(struct procwatch *pw);
/* Starts listening; -1 with the reason in err (pw stays usable, answering nothing). */
int procwatch_open(struct procwatch *pw, struct buf *err);
/* Follows pid and every process it or its descendants fork from now on. */
void procwatch_follow(struct procwatch *pw, pid_t pid);
/* Reads the queued events without blocking. */
void procwatch_drain(struct procwatch *pw);
bool procwatch_lost(const struct procwatch *pw);
/*
 * The last exec of pid in [from_ns, to_ns], and in *nr (may be NULL) how
 * many execs of pid that interval holds; UNKNOWN (-1) when none.
 */
int64_t procwatch_exec_ns(const struct procwatch *pw, pid_t pid, int64_t from_ns, int64_t to_ns, size_t *nr);
/* Closes the socket and frees the events. */
void procwatch_release(struct procwatch *pw);

#endif
