/*
 * Merging a process's trace with the -X importtime rows that process printed
 * (docs/trace-format.md, "Merging"), and naming each process's role among
 * the traced processes of a run.
 */
#ifndef COLDSTART_TRACE_MERGE_H
#define COLDSTART_TRACE_MERGE_H

#include "model/profile.h"
#include "ingest/trace_read.h"

/*
 * Merges a trace into pr, the importtime tree of the same process (may be
 * empty: then the trace alone is the tree), replacing pr's tree; pr takes
 * the trace's pid, ppid, argv, origin and clocks.  match, when not NULL,
 * gives for each of pr's nodes the trace node it is (-1: a row printed
 * before the tracer started); without it rows and trace nodes are paired by
 * name in the order they finished.  tp is not modified.
 */
void trace_merge(struct proc *pr, const struct trace_proc *tp, const int32_t *match);

/*
 * Puts the target's process (the traced process no other traced process of
 * the run started, the earliest such) first, its descendants after it in
 * start order, and gives every traced process its role: the target is
 * "main" ("master" when it forked workers), forks are "worker" or "fork",
 * interpreters started by another one "subprocess", and multiprocessing's
 * helpers are named ("spawn", "forkserver", "resource tracker").
 */
void trace_assign_roles(struct run *run);

#endif
