/*
 * The text report: what `coldstart profile`, `parse` and `report` print.
 */
#ifndef COLDSTART_REPORT_H
#define COLDSTART_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "model/profile.h"

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
/* How run r ended, as the report's status line says it ("exited with status 1", ...). */
void describe_status(const struct profile *p, const struct run *r, struct buf *out);
/*
 * Renders the whole report of p into out: a three-line summary (what ran,
 * under which limits; wall, ready, first response; the import total and the
 * worst finding), then the sections, each at most top rows, every line
 * within width columns unless wide.
 */
void report_render(const struct profile *p, const struct report_opts *o, struct buf *out);
/* The columns o asks the report to fit: FIT_UNLIMITED under --wide. */
size_t report_width(const struct report_opts *o);
/* The report's first three lines (report_summary.c). */
void report_summary(const struct profile *p, const struct report_opts *o, struct buf *out);

#endif
