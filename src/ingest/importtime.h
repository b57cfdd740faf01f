/*
 * Streaming parser of CPython's `-X importtime` output.  It is fed raw stderr
 * bytes in chunks of any size, splits lines itself, turns rows into process
 * trees inside a struct run, and hands every byte that is not importtime's
 * back to the caller unchanged, so the target's own stderr can be forwarded.
 * It never prints and never exits: problems become warnings with line numbers.
 */
#ifndef COLDSTART_IMPORTTIME_H
#define COLDSTART_IMPORTTIME_H

#include <stddef.h>
#include <stdint.h>

#include "ingest/it_lexer.h" /* it_read_fn */
#include "model/profile.h"

struct it_warning {
	long line;
	char *msg;
};

struct it_parser;

/*
 * Rows go into run: each header line starts a new struct proc in run->procs.
 * Rows seen before any header (a log cut at the top) start a process too.
 * The run is borrowed, not owned, and must outlive the parser.
 */
struct it_parser *it_parser_new(struct run *run);

/*
 * Feeds len bytes.  Text that is not importtime output is appended to
 * passthrough (may be NULL to drop it) exactly as it arrived, including a
 * prefix glued before a row on the same line ("WARN: partial" in
 * "WARN: partialimport time: ...").  Lines are buffered until their newline;
 * a line longer than the parser's limit (16 MiB) is passed through in
 * pieces with a warning once it is known not to be a row.
 */
void it_feed(struct it_parser *ps, const char *data, size_t len, struct buf *passthrough);

/*
 * Ends the stream: parses a final line without newline, links nodes left
 * open (a process that died mid-import) as roots with a warning, and fills
 * each process's first_root/last_root.  Call once, before reading the run.
 */
void it_finish(struct it_parser *ps, struct buf *passthrough);

/*
 * Feeds a whole stream from read.  With more than one CPU (see
 * parallel_cpus), a second thread reads the stream and recognises the common
 * rows while this one builds the trees; every other byte still goes through
 * it_feed, so the result, warnings and passthrough included, is what it_feed
 * gives for the same bytes.  Returns 0, or -1 when read failed (whatever came
 * before the failure has been fed).  it_finish is still the caller's.
 */
int it_feed_from(struct it_parser *ps, it_read_fn read, void *ctx, struct buf *passthrough);

/* Warnings recorded so far; owned by the parser. */
const struct it_warning *it_warnings(const struct it_parser *ps, size_t *nr);
/* Number of rows and header lines recognised. */
size_t it_rows(const struct it_parser *ps);
size_t it_headers(const struct it_parser *ps);

void it_parser_free(struct it_parser *ps);

/*
 * Appends a cached row as CPython 3.14 prints it at import level level: the
 * name right-justified in a field of 2 * level, so bare when it fills it.
 */
void it_cached_row(struct buf *out, uint32_t level, const char *name);

/*
 * Convenience for whole logs (e.g. `coldstart parse`): parses text into run,
 * copies warnings into p.  Non-importtime text is dropped.
 */
void it_parse_buffer(struct profile *p, struct run *run, const char *text, size_t len);

#endif
