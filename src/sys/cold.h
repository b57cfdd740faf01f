/*
 * Truly cold runs (--cold): the files a target reads (the interpreter and
 * its shared libraries, the modules the tracer saw with their cached
 * bytecode, extensions and the libraries they need) are learnt run by run
 * and dropped from the page cache before the next run with
 * posix_fadvise(POSIX_FADV_DONTNEED), which needs no privilege.  DONTNEED is
 * advice: pages that another process maps, or that are dirty, stay.  So
 * every eviction is checked with mincore() and its outcome recorded in the
 * run (struct cold_figures in profile.h), which the report and the JSON show.
 * Only the module files decide whether a run was cold (cold_figures_took):
 * the interpreter and libc are mapped by every running Python and shell,
 * so their pages stay whatever coldstart advises, and that is said apart.
 *
 * Nothing here prints; the caller decides what a failed eviction means.
 */
#ifndef COLDSTART_COLD_H
#define COLDSTART_COLD_H

#include <stdbool.h>

#include "model/profile.h"
#include "util.h"

/* The most files one check looks at with mincore (an even sample beyond). */
#define COLD_CHECK_MAX 4096

struct cold_set;

struct cold_set *cold_set_new(void);
void cold_set_free(struct cold_set *cs);

/*
 * How module names without a file (imports before the tracer started,
 * --no-trace) are found: the interpreter's search path (stdlib, lib-dynload,
 * site-packages), its bytecode cache tag ("cpython-311") and its extension
 * suffixes (".cpython-311-x86_64-linux-gnu.so", ".so").  Copies them.
 */
void cold_set_search(struct cold_set *cs, const char *const *dirs, const char *cache_tag,
		     const char *const *ext_suffixes);
/* A file the target reads (a script); a missing one is ignored. */
void cold_add_file(struct cold_set *cs, const char *path);
/*
 * An executable or shared object and every library it needs (DT_NEEDED);
 * a file that is not ELF (a script) is added as the target's own.
 */
void cold_add_binary(struct cold_set *cs, const char *path);
/*
 * The .pth files of the site directories dirs (NULL-terminated): site reads
 * every one of them at each start, before any import the tracer sees.
 */
void cold_add_pth_files(struct cold_set *cs, const char *const *dirs);
/*
 * What run r read: every module of every process, by its file or its name,
 * and the module a process ran with -m.  Returns how many of those files
 * the set did not hold yet (so they were not evicted before r), the first
 * of them appended to first_new (may be NULL).
 */
size_t cold_learn_run(struct cold_set *cs, const struct run *r, struct buf *first_new);
/* Files known so far. */
size_t cold_nr_files(const struct cold_set *cs);

/*
 * Drops every known file from the page cache, then checks how much of it
 * is still resident, into out (asked is set).  Returns 0, or -1 with a
 * message in err when nothing could be evicted (no file could be opened).
 */
int cold_evict(struct cold_set *cs, struct cold_figures *out, struct buf *err);

/*
 * One line for the report: "yes: 1,204 files (41.2 MiB) evicted, 0.3% of
 * the modules' pages still cached; interpreter and libraries 38% (mapped by
 * running processes)", or why not.
 */
void cold_describe(const struct cold_figures *c, struct buf *out);

#endif
