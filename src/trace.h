/*
 * The in-process tracer, seen from the C tool: preparing a traced child's
 * environment (bootstrap on PYTHONPATH, a private trace directory) and, after
 * the run, reading every process's trace file and merging it with the
 * importtime trees of the run.  The record format is docs/trace-format.md.
 */
#ifndef COLDSTART_TRACE_H
#define COLDSTART_TRACE_H

#include "profile.h"

struct trace_session {
	char *dir; /* private trace directory, removed by release */
	char *boot_dir; /* the bootstrap directory put on PYTHONPATH */
};

/*
 * Creates the trace directory and adds PYTHONPATH / COLDSTART_TRACE_DIR (and
 * whatever the bootstrap needs) to env, which holds a full environment.
 * python is the target interpreter (the tracer extension is built for it on
 * demand and cached; the pure-Python fallback is used where that fails).
 * Returns 0, or -1 with a message in err.
 */
int trace_prepare(struct trace_session *ts, const char *python, struct strvec *env, struct buf *err);
/*
 * Reads the trace files and merges them into run->procs (matching the
 * importtime trees, adding processes and nodes importtime missed).  Warnings
 * go to p.  Returns 0 or -1 with a message in err.
 */
int trace_collect(struct trace_session *ts, struct profile *p, struct run *run, struct buf *err);
void trace_session_release(struct trace_session *ts);

#endif
