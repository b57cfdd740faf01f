/*
 * The cgroup v1 backend (see cgroup_fs.h for the handle and the files).
 */
#ifndef COLDSTART_CGROUP_V1_H
#define COLDSTART_CGROUP_V1_H

#include "sys/cgroup_fs.h"
#include "model/profile.h"
#include "model/runlimits.h"

/*
 * Makes cg's directory in every hierarchy lim needs (and cpu, cpuacct,
 * memory for the figures) and applies lim; -1 with why.
 */
int cg_v1_create(struct cgroup *cg, const struct cg_places *pl, const struct limits *lim, struct buf *why);
void cg_v1_figures(const struct cgroup *cg, struct cg_figures *out);

#endif
