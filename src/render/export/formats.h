/*
 * The export formats, one file each (svg.c, folded.c, ...), as the table in
 * render/export/export.c lists them.  Each writer appends the whole document
 * to out and returns 0, or returns -1 with a one-line message in err (the
 * profile has no such run, nothing to draw); it never prints.  No code of its
 * own: the formats share render/export/frames.h, never the table.
 */
#ifndef COLDSTART_EXPORT_FORMATS_H
#define COLDSTART_EXPORT_FORMATS_H

#include <stdbool.h>

#include "model/profile.h"
#include "render/export/frames.h"
#include "util.h"

int export_svg(const struct profile *p, const struct export_opts *o, struct buf *out, struct buf *err);
int export_folded(const struct profile *p, const struct export_opts *o, struct buf *out, struct buf *err);
int export_speedscope(const struct profile *p, const struct export_opts *o, struct buf *out, struct buf *err);
int export_chrome(const struct profile *p, const struct export_opts *o, struct buf *out, struct buf *err);
int export_html(const struct profile *p, const struct export_opts *o, struct buf *out, struct buf *err);
int export_pprof(const struct profile *p, const struct export_opts *o, struct buf *out, struct buf *err);
int export_otlp(const struct profile *p, const struct export_opts *o, struct buf *out, struct buf *err);
int export_otlp_json(const struct profile *p, const struct export_opts *o, struct buf *out, struct buf *err);
int export_prometheus(const struct profile *p, const struct export_opts *o, struct buf *out, struct buf *err);

/*
 * SVG body without the XML prolog and with or without the inline script, so
 * the HTML report can embed it; the script is exported separately.
 */
int svg_render(const struct profile *p, const struct export_opts *o, bool standalone, struct buf *out, struct buf *err);
extern const char svg_script[];

#endif
