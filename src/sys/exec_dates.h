/*
 * The start of each exec'd process of a run, from the kernel's exec events
 * (sys/procwatch.h) rather than from its trace's estimate.
 */
#ifndef COLDSTART_EXEC_DATES_H
#define COLDSTART_EXEC_DATES_H

#include <stdint.h>
#include <sys/types.h>

#include "model/profile.h"
#include "sys/procwatch.h"

/*
 * Dates the run's exec'd interpreters from the exec events (CLOCK_MONOTONIC,
 * the wall's clock) instead of their trace's estimate (/proc/PID/stat: the
 * fork, in clock ticks of 10 ms): the last exec of its pid before its tracer
 * started.  The target's own process (pid target, exec'd by coldstart at
 * exec_ns) keeps that start unless it exec'd again (a launcher such as a
 * pyenv shim exec'd the interpreter): then it starts at the interpreter's
 * exec, and the time before is r->launcher_us.  Lost events: a warning in p,
 * and every process keeps its estimate.
 */
void exec_dates_apply(struct procwatch *pw, struct profile *p, struct run *r, pid_t target, int64_t exec_ns);

#endif
