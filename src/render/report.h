/*
 * The text report: what `coldstart profile`, `parse` and `report` print.
 */
#ifndef COLDSTART_REPORT_H
#define COLDSTART_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "model/profile.h"
#include "render/report_style.h"

/*
 * Renders the whole report of p into out: a three-line summary (what ran,
 * under which limits; wall, ready, first response; the import total and the
 * worst finding), then the sections, each at most top rows, every line
 * within width columns unless wide.
 */
void report_render(const struct profile *p, const struct report_opts *o, struct buf *out);
#endif
