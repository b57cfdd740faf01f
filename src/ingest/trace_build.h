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
	char *cache_tag; /* "cpython-311", names its .pyc files; "" when it has none */
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
 * <home>/.cache/coldstart with home from $HOME or, without it (cron,
 * env -i), the effective user's entry in the password database.  NULL when
 * there is no home: never a shared directory such as /tmp, where anyone
 * could have put a library first.  The caller frees the string.
 */
char *trace_build_cache_root(void);

/*
 * Finds or builds <datadir>/coldstart/_tracer.c for python.  On success
 * returns 0 and *so_path (the caller frees it) names a loadable
 * _tracer<EXT_SUFFIX>.  The cache is <root>/tracer/<source hash>/, one file
 * per ABI, written atomically (build into a temporary name, then rename), so
 * concurrent coldstart runs never load a half-written file.
 *
 * Nobody but the effective user (and root) may be able to put a file there:
 * every directory from / to the cache must be owned by root or the user and
 * not writable by others (a root-owned sticky one like /tmp excepted), and
 * the cache's own directories belong to the user and are writable by the
 * user alone (docs/trace-format.md).  The extension is opened without
 * following a link and must be a regular file of the user's, writable by
 * nobody else; one that is not is removed and built again.  When there is
 * no cache or it is refused, the extension is built into scratch (the run's
 * private directory, removed with it) and note says why; with scratch NULL
 * that is an error.
 *
 * Returns -1 with the reason in err when the interpreter is older than 3.7,
 * has no headers, or the compiler fails (its first lines of output are
 * included).
 */
int trace_build_ensure(const char *python, const char *datadir, const char *scratch, char **so_path, char **boot_dir,
		       struct buf *note, struct buf *err);
/*
 * *boot_dir above (the caller frees it; NULL when the source bootstrap is
 * to be used, and note says why when it is not the plain reasons: no cache,
 * Python older than 3.7): the directory to put on PYTHONPATH instead of
 * <datadir>/coldstart/BOOT, where BOOT is "_boot" for the tracer's
 * bootstrap.  It is <root>/_boot/<hash of the bootstrap>/ with a copy of
 * BOOT/sitecustomize.py and, in __pycache__, its bytecode for the
 * interpreter (sitecustomize.<cache_tag>.pyc), compiled by it once, so a
 * process that cannot write bytecode (PYTHONDONTWRITEBYTECODE, a read-only
 * datadir) loads the bootstrap without compiling it.  Interpreters of
 * other versions in the process tree find the copy and compile it as they
 * would the original.  The same trust rules as the extension's: the
 * directories by open_private_dir, the copy and the .pyc regular files of
 * the user's, writable by nobody else, the copy's bytes those of the
 * source and the .pyc's timestamp header that of the copy; anything else
 * is removed and written again.
 */
char *boot_cache_ensure(const char *python, const char *datadir, const char *boot, struct buf *note);
/*
 * The same for another extension of coldstart's: <datadir>/coldstart/EXT.c
 * into EXT<EXT_SUFFIX>, cached in <root>/EXT without its "_"/<hash>/ (EXT
 * starts with "_"; messages call it "the tracer", "the sampler").
 */
int ext_build_ensure(const char *python, const char *datadir, const char *ext, const char *scratch, char **so_path,
		     struct buf *note, struct buf *err);

#endif
