/*
 * The target's stderr while the tracer runs: one stream carries the -X
 * importtime rows of every Python process of the target (with no pid) and
 * the processes' own output.  Each row is attributed to the process that
 * printed it, as it arrives, by the trace files those processes are writing:
 * a process records the end of an import (E/F) before CPython prints its row.
 * Rows printed before a process's tracer started (its interpreter start-up,
 * from importtime's header line to its "site" row) are attributed by the
 * modules the tracer found imported when it started.  Every other line,
 * including the app's own lines that merely contain "import time:", passes
 * through unchanged.  docs/trace-format.md, "The shared stderr".
 */
#ifndef COLDSTART_TRACE_STREAM_H
#define COLDSTART_TRACE_STREAM_H

#include "model/profile.h"

struct trace_stream;

/* Reads the trace files in dir (borrowed, must outlive the stream) as they appear. */
struct trace_stream *trace_stream_new(const char *dir);

/*
 * Feeds bytes of the target's stderr, in chunks of any size.  Text that is
 * not a row (a prefix glued before a row on the same line included) is
 * appended to passthrough exactly as it arrived, as soon as it is known not
 * to be a row.
 */
void trace_stream_feed(struct trace_stream *s, const char *data, size_t len, struct buf *passthrough);

/*
 * The stream ended and every process is gone: reads the traces to their end
 * and appends to passthrough what was held back and turned out not to be a
 * row (a line that arrived while an interpreter was starting and named no
 * module it had imported).
 */
void trace_stream_end(struct trace_stream *s, struct buf *passthrough);

/*
 * Adds one process to run for each trace (merged with the rows it printed)
 * and one for each interpreter that printed rows without a trace, ordered
 * and named by trace_assign_roles.  Problems become warnings in p.  Call
 * once, after trace_stream_end.
 */
void trace_stream_collect(struct trace_stream *s, struct profile *p, struct run *run);

/* How many importtime rows the stream took out of the stderr so far. */
size_t trace_stream_nr_rows(const struct trace_stream *s);

void trace_stream_free(struct trace_stream *s);

#endif
