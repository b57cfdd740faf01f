/*
 * The timeline in the text report: the split of the time to the timeline's
 * end into interpreter start-up, imports and other Python work, and the
 * costliest functions outside imports.
 */
#ifndef COLDSTART_TIMELINE_REPORT_H
#define COLDSTART_TIMELINE_REPORT_H

#include "model/profile.h"

/*
 * Appends the section for run r of p (nothing when its processes have no
 * timeline): the target's process, and with all_processes every other one
 * that has a timeline.  top is the number of functions listed.
 */
void timeline_report_section(const struct profile *p, const struct run *r, int top, bool all_processes,
			     struct buf *out);

#endif
