/*
 * The files under a working directory, for `coldstart plan --verify`
 * (docs/plan.md): a snapshot of the tree (regular files with a copy of
 * their contents, directories, symbolic links), the tree put back as a
 * snapshot has it before each replay, and what a run wrote compared with
 * it, so that replays start from the state the recording started from and
 * the files a command writes are part of its answer.  __pycache__
 * directories are left out (a run with a plan writes no bytecode).
 */
#ifndef COLDSTART_PLAN_FILES_H
#define COLDSTART_PLAN_FILES_H

#include "util.h"

struct plan_files;

/*
 * Snapshot of the tree at dir (absolute), the contents copied into the
 * directory store as flat files named prefix-N.  Paths under skip (the
 * run's private directory, NULL: none) are left out.  NULL with the reason
 * in err when the tree holds more than 20000 entries or 256 MiB of file
 * contents, or cannot be read.
 */
struct plan_files *plan_files_snapshot(const char *dir, const char *store, const char *prefix, const char *skip,
				       struct buf *err);
/*
 * Puts the tree back as snap has it: removes what it does not have,
 * rewrites the files that differ, makes what is missing.  0, or -1 with
 * the first failure in err.
 */
int plan_files_restore(const struct plan_files *snap, struct buf *err);
/*
 * Appends to out, one line each in path order, what differs between the
 * tree now and snap: "created|changed|removed PATH SIZE HASH".
 */
void plan_files_diff(const struct plan_files *snap, struct buf *out);
void plan_files_free(struct plan_files *snap);

#endif
