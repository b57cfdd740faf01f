/*
 * The record a planning run keeps when the target forked while it recorded
 * (a pre-fork server: gunicorn's workers): each recording process wrote its
 * own, the one coldstart started at RECORD and each forked child at
 * RECORD.pidN with its code archive at CODE.pidN (plan_record.py).
 * RECORD is in the run's private directory (cmd_plan.c): only this run's
 * processes can write there, so every record read is one of them.
 */
#ifndef COLDSTART_PLAN_PICK_H
#define COLDSTART_PLAN_PICK_H

#include <stdbool.h>

#include "util.h"

/*
 * Keeps at record the record of the process that answered: with by_use,
 * the one whose requests used the most modules (a record of the recorder's
 * failure before any, the started process's on a tie), its code archive
 * moved to the path without ".pidN"; without by_use (a script run to its
 * end, whose answer is the started process's) the started process's.
 * Removes the other records and their archives in every case.  Describes a
 * choice among several in note.  Returns -1 (err) when a kept record cannot
 * be moved into place.
 */
int plan_pick_record(const char *record, bool by_use, struct buf *note, struct buf *err);

#endif
