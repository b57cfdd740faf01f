/*
 * The in-process tracer, seen from the run loop: preparing a traced child's
 * environment (bootstrap on PYTHONPATH, a private trace directory), taking
 * the child's stderr while it runs (trace_stream.h), and after the run
 * turning every process's trace and rows into the run's processes.  The
 * record format is docs/trace-format.md; the reader is trace_read.h, the
 * merge trace_merge.h.
 */
#ifndef COLDSTART_TRACE_H
#define COLDSTART_TRACE_H

#include "model/profile.h"

struct trace_stream;

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
	struct trace_stream *stream; /* the child's stderr, once trace_feed was called */
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
 * The child's stderr, as it arrives: importtime rows are taken out and
 * attributed to the processes that printed them, everything else is
 * appended to passthrough unchanged.  Used instead of the importtime parser.
 */
void trace_feed(struct trace_session *ts, const char *data, size_t len, struct buf *passthrough);
/*
 * The child's stderr ended: what was held back and was not a row goes to
 * passthrough.
 */
void trace_feed_end(struct trace_session *ts, struct buf *passthrough);
/* How many importtime rows the child's stderr held (0 before any trace_feed). */
size_t trace_nr_rows(const struct trace_session *ts);
/*
 * Reads the trace files and fills run->procs: one process per trace (merged
 * with the rows it printed), one per interpreter that printed rows without
 * a trace, the target first.  Warnings go to p.  Returns 0 or -1 with a
 * message in err.
 */
int trace_collect(struct trace_session *ts, struct profile *p, struct run *run, struct buf *err);
void trace_session_release(struct trace_session *ts);

#endif
