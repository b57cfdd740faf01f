/*
 * The text report: what `coldstart profile`, `parse` and `report` print.
 */
#ifndef COLDSTART_REPORT_H
#define COLDSTART_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "profile.h"

struct report_opts {
	int top; /* rows in the top-N tables */
	bool tree; /* print the import tree */
	int max_depth; /* tree depth limit, -1 = none */
	int64_t threshold_us; /* tree: hide subtrees with cum below this */
	bool all_processes; /* trees and tables for every process */
	bool color;
};

void report_opts_init(struct report_opts *o);
/* Colour on a TTY unless NO_COLOR is set (https://no-color.org). */
bool report_want_color(int fd);
/* How run r ended, as the report's status line says it ("exited with status 1", ...). */
void describe_status(const struct profile *p, const struct run *r, struct buf *out);
/* Renders the whole report of p into out. */
void report_render(const struct profile *p, const struct report_opts *o, struct buf *out);

#endif
