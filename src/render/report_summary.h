/*
 * The three lines a text report opens with (report_summary.c).
 */
#ifndef COLDSTART_REPORT_SUMMARY_H
#define COLDSTART_REPORT_SUMMARY_H

#include "model/profile.h"
#include "render/report_style.h"

/* The report's first three lines (report_summary.c). */
void report_summary(const struct profile *p, const struct report_opts *o, struct buf *out);

#endif
