/*
 * What every part of the text report shares (report.c, report_run.c,
 * report_summary.c, and the reports built on them): the options, the width
 * to fit, colour, headings and duration columns.
 */
#ifndef COLDSTART_REPORT_STYLE_H
#define COLDSTART_REPORT_STYLE_H

#include <stdbool.h>
#include <stdint.h>

#include "model/stats.h"
#include "util.h"

struct report_opts {
	int top; /* rows in the top-N tables */
	bool tree; /* print the import tree */
	int max_depth; /* tree depth limit, -1 = none */
	int64_t threshold_us; /* tree: hide subtrees with cum below this */
	bool all_processes; /* trees and tables for every process */
	bool color;
	size_t width; /* columns to fit (fit_width: the terminal's, else 100) */
	bool wide; /* --wide: nothing shortened or wrapped */
};

void report_opts_init(struct report_opts *o);
/* Colour on a TTY unless NO_COLOR is set (https://no-color.org). */
bool report_want_color(int fd);
/* The columns o asks the report to fit: FIT_UNLIMITED under --wide. */
size_t report_width(const struct report_opts *o);

/* What every table of one report shares: the metric, readiness. */
struct view {
	enum metric m;
	int64_t ready_ns; /* UNKNOWN without --ready */
};

/* ANSI sequences, or empty strings without colour. */
struct style {
	const char *bold, *dim, *red, *yellow, *green, *reset;
};

const struct style *style_of(const struct report_opts *o);
/* "\nTITLE\n", the title in bold. */
void heading(struct buf *out, const struct style *st, const char *title);
/* A duration right-aligned in width columns, "-" when UNKNOWN. */
void add_dur_col(struct buf *out, int64_t us, int width);
/* A duration, "unknown" when UNKNOWN. */
void add_dur(struct buf *out, int64_t us);

#endif
