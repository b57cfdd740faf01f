/*
 * A process of the profile's JSON, its imports and its timeline, read
 * (profile_read_proc.c), for profile_read.c.
 */
#ifndef COLDSTART_PROFILE_READ_PROC_H
#define COLDSTART_PROFILE_READ_PROC_H

#include "model/profile_reader.h"

/* One element of a run's "processes". */
int read_proc(struct reader *rd, void *ctx, size_t i);
/* A "timeline" object into tl. */
int read_timeline_object(struct reader *rd, struct timeline *tl);

#endif
