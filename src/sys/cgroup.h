/*
 * Resource limits through cgroups: one interface, a v2 and a v1 backend
 * (cgroup_v2.c, cgroup_v1.c; cgroup_fs.c finds the mounts and touches the
 * files).
 * A fresh cgroup per run, named coldstart-<pid>-<n>, that the child joins
 * before exec (see launch.h join_files); removed on every path.
 */
#ifndef COLDSTART_CGROUP_H
#define COLDSTART_CGROUP_H

#include <stdbool.h>

#include "model/runlimits.h"
#include "model/profile.h"

struct cgroup;

/*
 * Creates a cgroup with lim applied.  Detects the backend (v2 when its
 * controllers are usable, else v1) under the real cgroupfs, or under
 * $COLDSTART_CGROUP_ROOT when set (a plain directory tree that stands in for
 * it in tests; see cgroup_fs.h).  Returns NULL with a message in err
 * that says what to do (run as root, delegate a v2 subtree, or pass
 * --no-limits) when limits cannot be applied (limits_check's message for
 * inconsistent ones).  Sets lim->backend.
 */
struct cgroup *cgroup_create(struct limits *lim, struct buf *err);
/*
 * A cgroup without limits, only so that the run's whole tree can be found
 * and killed (also after a SIGKILLed coldstart, by the next run): a cgroup
 * v2 directory where one can be made (no controller is needed), else one v1
 * hierarchy.  NULL with the reason in err when neither can be made (not
 * root, no cgroupfs): the run then goes ahead without one.
 */
struct cgroup *cgroup_create_unlimited(struct buf *err);
/* NULL-terminated list of files the child writes "0" into. */
const char *const *cgroup_join_files(const struct cgroup *cg);
/* Reads cpu, throttling, peak memory and OOM figures; 0 or -1. */
int cgroup_read_figures(struct cgroup *cg, struct cg_figures *out);
/* Number of processes still inside, -1 on error. */
int cgroup_nr_procs(struct cgroup *cg);
/* SIGKILLs everything inside and waits (bounded) until it is empty. */
int cgroup_kill_all(struct cgroup *cg);
/* Kills what is left, removes the directories, frees cg.  NULL is fine. */
void cgroup_destroy(struct cgroup *cg);
/*
 * Removes coldstart-<pid>-<n> cgroups whose coldstart is gone (it was
 * SIGKILLed), killing what is still inside them; the owner-alive rule of
 * leftover.h decides, so a live coldstart's cgroups are never touched, in
 * whatever pid namespace it runs.  One that stays busy with processes this
 * pid namespace cannot see is left at once for a later run.
 */
void cgroup_cleanup_stale(void);
/* Which backend would be used now: "cgroup-v2", "cgroup-v1" or NULL. */
const char *cgroup_backend_name(void);
/*
 * What could not be applied but did not stop the run, e.g. "no swap limit
 * could be set (...); this host has no swap ...", for the profile's
 * warnings.  NULL when there is nothing to say; owned by cg.
 */
const char *cgroup_note(const struct cgroup *cg);

#endif
