/*
 * The tracer extension for a target interpreter: found prebuilt (the
 * Makefile's build beside the source), found in the cache, or compiled on
 * demand with the interpreter's own headers and cached per ABI.
 */
#ifndef COLDSTART_TRACE_BUILD_H
#define COLDSTART_TRACE_BUILD_H

#include "util.h"

/* What the interpreter says about itself (python -S -E). */
struct py_info {
	char *version; /* "3.11.2" */
	int major, minor;
	char *ext_suffix; /* ".cpython-311-x86_64-linux-gnu.so"; the ABI */
	char *include_dir; /* where Python.h should be */
};

/*
 * Runs python to fill info.  Returns 0, or -1 with a message in err
 * ("cannot run '/x/python': No such file or directory").  Release with
 * py_info_release.
 */
int py_info_query(const char *python, struct py_info *info, struct buf *err);
void py_info_release(struct py_info *info);

/*
 * The cache root: $COLDSTART_CACHE_DIR, else $XDG_CACHE_HOME/coldstart, else
 * $HOME/.cache/coldstart.  The caller frees the string.
 */
char *trace_build_cache_root(void);

/*
 * Finds or builds <datadir>/coldstart/_tracer.c for python.  On success
 * returns 0 and *so_path (the caller frees it) names a loadable
 * _tracer<EXT_SUFFIX>.  The cache is <root>/tracer/<source hash>/, one file
 * per ABI, written atomically (build into a temporary name, then rename), so
 * concurrent coldstart runs never load a half-written file.  Returns -1 with
 * the reason in err when the interpreter is older than 3.7, has no headers,
 * or the compiler fails (its first lines of output are included).
 */
int trace_build_ensure(const char *python, const char *datadir, char **so_path, struct buf *err);
/*
 * The same for another extension of coldstart's: <datadir>/coldstart/NAME.c
 * into NAME<EXT_SUFFIX>, cached in <root>/NAME without its "_"/<hash>/.
 */
int ext_build_ensure(const char *python, const char *datadir, const char *name, char **so_path, struct buf *err);

#endif
