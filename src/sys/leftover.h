/*
 * What a run leaves on the system while it lives (its cgroup, its private
 * temporary directories) and how a later run tells a SIGKILLed owner's
 * leftovers from a live one's.
 *
 * The owner-alive rule: each such directory is named after the coldstart
 * that made it (coldstart-<kind>-<pid>-...) and that coldstart holds an
 * exclusive flock on it for as long as it lives.  A leftover is stale only
 * when its lock is free (no live owner holds it, in any pid namespace) and
 * its pid is gone here, or was reused after the directory was made (the
 * rule of coldstarts that took no lock).  Everything else is left alone:
 * other users' directories, and whatever cannot be judged.
 */
#ifndef COLDSTART_LEFTOVER_H
#define COLDSTART_LEFTOVER_H

#include <stdbool.h>
#include <sys/types.h>

#include "util.h"

/* Takes the owner's lock on dir, which this process made; the fd to keep open, or -1. */
int leftover_lock(const char *dir);
/*
 * Whether the leftover dir, named after owner, has no live owner.  On true,
 * *lock_fd holds its lock (close it once the leftover is removed), so that
 * two later runs never clean the same leftover at once.
 */
bool leftover_is_stale(const char *dir, pid_t owner, int *lock_fd);
/*
 * The pid in name when it is "<prefix><pid>-<rest>" with a non-empty rest
 * (all digits when digits_rest), else 0.
 */
pid_t leftover_owner(const char *name, const char *prefix, bool digits_rest);

/* A private directory of this run: $TMPDIR/coldstart-<kind>-<pid>-XXXXXX, mode 0700, locked. */
struct private_dir {
	char *path;
	int lock_fd;
};

/*
 * Creates it under $TMPDIR (an absolute path), else /tmp.  kind is "trace",
 * "fn", "plan", ...: the kinds leftover_cleanup_dirs knows are cleaned after a
 * SIGKILL, any other kind is kept.  0, or -1 with a message in err.
 */
int private_dir_create(struct private_dir *d, const char *kind, struct buf *err);
/* Empties it (files only: it holds no directories), removes it, drops the lock. */
void private_dir_remove(struct private_dir *d);
/* Drops the lock and forgets the path, leaving the directory where it is. */
void private_dir_forget(struct private_dir *d);
/*
 * Removes the stale trace, Fn and plan directories in $TMPDIR (or /tmp) that
 * belong to this user.
 */
void leftover_cleanup_dirs(void);

#endif
