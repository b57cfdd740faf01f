/*
 * Building a process's start-up timeline (model/timeline.h) from the
 * sampler's samples file (model/samples.h), named from the same process's
 * import tree: ingest's step from samples to the model, as the tracer's
 * records become the import tree.
 */
#ifndef COLDSTART_TIMELINE_BUILD_H
#define COLDSTART_TIMELINE_BUILD_H

#include <stdint.h>

#include "model/samples.h"
#include "model/timeline.h"
#include "util.h"

struct proc;

/* What the timeline of a process is cut at. */
struct tl_cut {
	int64_t origin_ns; /* time 0 (absolute); UNKNOWN: the process's own start */
	int64_t end_ns; /* absolute; UNKNOWN: the process's end */
	enum tl_end end; /* what end_ns is */
	int64_t exit_ns; /* when the process exited (absolute), UNKNOWN: its samples file says */
};

/*
 * Builds tl (initialised) from one samples file.  pr is the same process's
 * import tree (may be NULL): it names the modules of the functions' files
 * and the start-up imports.  Returns 0, or -1 with a message in err when the
 * file holds nothing to build from.
 */
int timeline_build(struct timeline *tl, const struct samples_file *sf, const struct proc *pr, const struct tl_cut *cut,
		   struct buf *err);

#endif
