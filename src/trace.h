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
	/*
	 * The private trace directory (leftover.h: $TMPDIR/coldstart-trace-<pid>-*,
	 * locked while this coldstart lives, so a SIGKILLed run's is cleaned by
	 * a later one), removed by release; COLDSTART_KEEP_TRACE keeps it, named
	 * coldstart-trace-kept-<pid>-*, which no cleaning touches.
	 */
	char *dir;
	int lock_fd;
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

/*
 * The reader and the merge, exposed for tests and for `coldstart parse` of
 * kept trace files.
 */

/* One trace file, read on its own. */
struct trace_proc {
	/*
	 * The tree of the trace alone: pid, ppid, argv, start_ns (the process
	 * start as the tracer estimated it), end_ns (last record), nodes with
	 * cum/self from the trace, timing and events.
	 */
	struct proc proc;
	char impl[8]; /* "c" or "py" */
	char version[32]; /* the interpreter's version */
	bool audit; /* false on 3.7: imports only */
	bool clean_exit; /* a Q record: the interpreter finalised */
	char *stopped; /* the tracer's own error (R record), or NULL */
	size_t records; /* records read */
	size_t bad_records; /* malformed lines skipped */
	size_t unmatched_ends; /* E/F without their S (e.g. imports running at fork) */
};

/*
 * Parses one trace file's text (stops at the first NUL; a last line without
 * newline is ignored).  Returns 0, or -1 with a message in err when the text
 * is not a coldstart trace (no header).  Malformed records are skipped and
 * counted.  Release tp with trace_proc_release even after an error.
 */
int trace_parse(struct trace_proc *tp, const char *text, size_t len, struct buf *err);
/* Reads and parses one file; -1 with "cannot read 'x': ..." in err. */
int trace_read_file(struct trace_proc *tp, const char *path, struct buf *err);
void trace_proc_release(struct trace_proc *tp);

/*
 * Merges a trace into pr, the importtime process of the same interpreter
 * (may be empty: then every node is NODE_TRACE_ONLY), replacing pr's tree:
 * see docs/trace-format.md, "Merging".  tp is not modified.
 */
void trace_merge(struct proc *pr, const struct trace_proc *tp);

/*
 * Pairs trace files with run's importtime processes, merges each pair, adds
 * the processes importtime never printed, and moves the root of the traced
 * tree (the target) to run->procs[0].  Problems become warnings in p.
 */
void trace_merge_run(struct profile *p, struct run *run, const struct trace_proc *tps, size_t nr);
