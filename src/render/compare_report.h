/*
 * A comparison of variants (`coldstart compare`) shown: the table, the
 * Markdown and the JSON of the figures compare_figures.h works out.
 * Nothing here prints: each renderer appends to the caller's buffer.
 */
#ifndef COLDSTART_COMPARE_REPORT_H
#define COLDSTART_COMPARE_REPORT_H

#include "render/compare_figures.h"
#include "util.h"

/* The table a terminal shows. */
void compare_render_table(const struct comparison *c, struct buf *out);
/* Markdown for a pull-request comment. */
void compare_render_markdown(const struct comparison *c, struct buf *out);
/* The JSON document (docs/compare.md); the caller frees it. */
char *compare_render_json(const struct comparison *c);

#endif
