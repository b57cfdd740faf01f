/*
 * The cgroup v2 backend (see cgroup_fs.h for the handle and the files).
 */
#ifndef COLDSTART_CGROUP_V2_H
#define COLDSTART_CGROUP_V2_H

#include "sys/cgroup_fs.h"
#include "model/profile.h"
#include "model/runlimits.h"

/* True when base offers every controller lim needs; else false with the reason in why (when not NULL). */
bool cg_v2_usable(const char *base, const struct limits *lim, struct buf *why);
/* Makes cg's directory under the first candidate that takes it and applies lim; -1 with why. */
int cg_v2_create(struct cgroup *cg, const struct cg_places *pl, const struct limits *lim, struct buf *why);
void cg_v2_figures(const struct cgroup *cg, struct cg_figures *out);

#endif
