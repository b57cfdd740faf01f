/*
 * Inside the cgroup module: where cgroups can be made (the mounts, or the
 * plain tree that stands in for them in tests), how their files are
 * touched, and the handle of a run's cgroup that the backends fill
 * (cgroup_v2.c, cgroup_v1.c) and cgroup.c owns.  Other modules use
 * cgroup.h only.
 */
#ifndef COLDSTART_CGROUP_FS_H
#define COLDSTART_CGROUP_FS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/profile.h"
#include "util.h"

enum v1_ctl { V1_CPU, V1_CPUACCT, V1_MEMORY, V1_PIDS, V1_CPUSET, V1__COUNT };
extern const char *const cg_v1_names[V1__COUNT];

/*
 * How cgroup directories are touched.  The kernel's cgroupfs gives a new
 * cgroup its files, refuses writes to files that do not exist, and holds
 * real processes.  A plain directory tree under $COLDSTART_CGROUP_ROOT
 * stands in for it in tests: there the same calls create and emulate those
 * files, and the pids listed are fiction that is never signalled.  Which
 * one is chosen once, by cg_places_find; everything else only calls these.
 */
struct cgfs_ops {
	/* Writes value into dir/file; -1 with a message in err (when not NULL). */
	int (*write)(const char *dir, const char *file, const char *value, struct buf *err);
	/* Makes the directory of a new cgroup; -1 with errno. */
	int (*make)(const char *dir);
	/* Removes the directory of an empty cgroup; -1 with errno (EBUSY: still accounted). */
	int (*remove)(const char *dir);
	/* SIGKILLs a process listed in a cgroup; -1 when it cannot be signalled at all. */
	int (*kill)(pid_t pid);
	/* Whether a cgroup coldstart made offers the control file (a controller's knob). */
	bool (*has_control)(const char *dir, const char *file);
};

extern const struct cgfs_ops cgfs_kernel;
extern const struct cgfs_ops cgfs_plain_tree;

/* A run's cgroup: one directory on v2, one per hierarchy on v1. */
struct cgroup {
	int version; /* 1 or 2 */
	const struct cgfs_ops *fs;
	char *name; /* coldstart-<pid>-<n> */
	char *dir; /* v2: the run's directory */
	char *v1_dir[V1__COUNT]; /* v1: one directory per controller, or NULL */
	struct strvec joins; /* <dir>/cgroup.procs for each directory */
	struct buf note; /* what could not be applied but does not matter */
	/* The owner's lock on each directory (leftover.h), -1 where none. */
	int locks[V1__COUNT + 1];
	bool stale; /* a leftover of a dead owner, being removed */
	long seen; /* stale: how many processes the kill passes found listed */
};

/*
 * Where cgroups can be made: the cgroup2 candidates (our own cgroup, then
 * its parent) and, per v1 controller, our own cgroup then the hierarchy
 * root; with the way to touch them.
 */
struct cg_places {
	const struct cgfs_ops *fs;
	const char *root; /* $COLDSTART_CGROUP_ROOT for a plain tree, NULL for the mounted cgroupfs */
	struct strvec v2; /* candidate parent directories */
	struct strvec v1[V1__COUNT];
};

void cg_places_init(struct cg_places *pl);
void cg_places_release(struct cg_places *pl);
/*
 * Finds the cgroup mounts in /proc/self/mountinfo, or the plain tree under
 * $COLDSTART_CGROUP_ROOT: a cgroup2 tree when ROOT/cgroup.controllers
 * exists, else a v1 layout of ROOT/<controller>/ directories.
 */
void cg_places_find(struct cg_places *pl);

/* Files: a small file into sb (-1 with errno), and dir/file likewise. */
int cg_read_small(const char *path, struct buf *sb);
int cg_read(const char *dir, const char *file, struct buf *sb);
bool cg_file_in(const char *dir, const char *file);
void cg_trim(struct buf *sb);
/* "key <number>" in a flat-keyed text such as cpu.stat; UNKNOWN when absent. */
int64_t cg_keyed_value(const char *text, const char *key);
/* The same in dir/file; a NULL dir gives UNKNOWN. */
int64_t cg_keyed(const char *dir, const char *file, const char *key);
/* A file holding one number ("max" and junk give UNKNOWN). */
int64_t cg_number(const char *dir, const char *file);
/* True when the space-separated list has word. */
bool cg_has_word(const char *list, const char *word);
/* Appends the pids in dir/cgroup.procs (none when it does not exist); -1 when unreadable. */
int cg_read_procs(const char *dir, pid_t **pids, size_t *nr, size_t *alloc);
/* Appends to note that no swap limit could be set because file is missing, and whether that matters here. */
void cg_swap_note(struct buf *note, const char *file);

#endif
