/*
 * Fitting report text to a width: the terminal's width, text measured in
 * columns (UTF-8 characters, colour escapes not counted), strings and import
 * chains shortened in the middle, and words wrapped with a hanging indent.
 * The text report, `why` and `compare` share these.
 */
#ifndef COLDSTART_FIT_H
#define COLDSTART_FIT_H

#include <stddef.h>
#include <stdint.h>

#include "model/profile.h"

/* The width when the output is not a terminal and COLUMNS is not set. */
#define FIT_DEFAULT_WIDTH 100
/* No width at all (--wide): nothing is shortened or wrapped. */
#define FIT_UNLIMITED 0

/*
 * The width to render for on fd: COLUMNS when it is a number from 20 to
 * 10000, else the terminal's (TIOCGWINSZ) when fd is one, else 100.
 */
size_t fit_width(int fd);
/* Columns s takes: UTF-8 characters, ANSI colour sequences not counted. */
size_t fit_cols(const char *s);
/*
 * Appends s, shortened in the middle ("pandas.core.gr…ic") to at most width
 * columns; whole when width is FIT_UNLIMITED.
 */
void fit_add(struct buf *out, const char *s, size_t width);
/*
 * Appends a command line as fit_add does, but the end it keeps is whole
 * arguments ("/usr/bin/python3 /srv/ap… --workers 4 --the-last"): those
 * within half the width, else the last one alone within two thirds; as
 * fit_add when it does not fit either.
 */
void fit_add_command(struct buf *out, const char *s, size_t width);
/*
 * Appends the chain of node i's ancestors, root first ("a > b > c"), within
 * width columns: the root, an ellipsis and as many of the last links as fit
 * ("a > … > y > z"); else the last links alone.  Nothing when i is a root.
 */
void fit_add_chain(struct buf *out, const struct proc *pr, int32_t i, size_t width);
/*
 * Appends text wrapped at width, out being at column col already; lines
 * after the first start with indent spaces (a hanging indent).  A word longer
 * than a line is shortened.  Ends with a newline.
 */
void fit_add_wrapped(struct buf *out, const char *text, size_t col, size_t indent, size_t width);

/*
 * Appends s within width columns, cut at the end with an ellipsis
 * ("'pandas' takes 100% of the tar…"): for sentences, where the middle
 * would read worse.
 */
void fit_add_head(struct buf *out, const char *s, size_t width);
/*
 * Appends text with every line longer than width wrapped: its continuation
 * lines start under its text column (after the first run of two or more
 * spaces past the indent, when that is in the left half; else two columns
 * right of the indent), so "  label     value ..." and table rows keep their
 * shape.  Lines that fit are copied unchanged.
 */
void fit_reflow(struct buf *out, const char *text, size_t width);

#endif
