/*
 * The start-up windows of the shared stderr (trace_window.c): from an
 * interpreter's importtime header to its "site" row, the rows no trace
 * waits for, paired with that interpreter's trace once one matches.  For
 * trace_stream.c.
 */
#ifndef COLDSTART_TRACE_WINDOW_H
#define COLDSTART_TRACE_WINDOW_H

#include "ingest/trace_rows.h"

/* importtime's header line: an interpreter starts, its start-up window opens. */
void window_open(struct trace_stream *s);
/* Whether an interpreter is starting: some window is open. */
bool windows_starting(const struct trace_stream *s);
/* A start-up row (one no trace waits for): into its window, or an untraced interpreter's; false if none. */
bool window_take(struct trace_stream *s, const struct row_text *rt);
/* Row row was matched to trace li: pairs the trace with its window, which goes on around it. */
void window_matched(struct trace_stream *s, long li, size_t row);
/* The stream ended, the traces are read: windows paired again, checked, strays given back to pass. */
void windows_end(struct trace_stream *s, struct buf *pass);
/* Warnings about interpreters that started together. */
void windows_warn(struct trace_stream *s, struct profile *p);
void windows_free(struct trace_stream *s);

#endif
