/*
 * Exporters: one table of output formats (SVG flamegraph, folded stacks,
 * speedscope, Chrome trace, HTML, pprof, OTLP, Prometheus) that commands look
 * up by name, and writing a document to a file.  The formats themselves are
 * declared in render/export/formats.h, what they share (struct export_opts
 * among it) in render/export/frames.h; nothing in render/export/ but this
 * table uses this header.
 */
#ifndef COLDSTART_EXPORT_H
#define COLDSTART_EXPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "model/profile.h"
#include "render/export/frames.h"
#include "util.h"

/*
 * One output format.  write() appends the whole document to out and returns
 * 0, or returns -1 with a one-line message in err (the profile has no such
 * run, nothing to draw).  It never prints.
 */
struct exporter {
	const char *name; /* "svg", "folded", ... as given to --format */
	const char *ext; /* file-name ending without the dot, e.g. "svg" */
	const char *summary;
	int (*write)(const struct profile *p, const struct export_opts *o, struct buf *out, struct buf *err);
	/* The document is bytes, not text (pprof, OTLP/protobuf). */
	bool binary;
	/* The document is binary and compressed already (pprof): written as it is, whatever the name. */
	bool gzipped;
};

/* The table, in the order --help lists it; nr set to its length. */
const struct exporter *exporter_list(size_t *nr);
/* NULL when no format has this name. */
const struct exporter *exporter_find(const char *name);
/*
 * The format whose ext ends path (".gz" ignored), NULL when none does.
 * ".json" alone is ambiguous and gives NULL; ".speedscope.json" and
 * ".trace.json" are recognised.
 */
const struct exporter *exporter_for_path(const char *path);

/*
 * Renders p with e and writes it to path: "-" is stdout, a name ending in
 * ".gz" is gzip-compressed through zlib, anything else is written plain.
 * Returns 0, or -1 with err set ("cannot write 'x.svg': ...").
 */
int export_to_path(const struct profile *p, const struct exporter *e, const struct export_opts *o, const char *path,
		   struct buf *err);
/* Writes len bytes of data to path the same way (used for diff reports too). */
int export_write_data(const char *path, const char *data, size_t len, struct buf *err);

#endif
