/*
 * A resolver that follows DT_NEEDED the way glibc's dynamic loader does:
 * RPATH/RUNPATH with $ORIGIN, LD_LIBRARY_PATH, /etc/ld.so.cache, then the
 * default directories, into one modelled process (what is already loaded is
 * not loaded again).  Its answer for one file is a tree of the objects it
 * brings.  Nothing here prints; errors go to the caller's err.
 */
#ifndef COLDSTART_ELF_RESOLVE_H
#define COLDSTART_ELF_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf/elf_ldcache.h"
#include "elf/elffile.h"
#include "util.h"

/* Caps that keep hostile trees bounded; exceeding one is a warning in the tree. */
#define ELF_MAX_OBJECTS 4096 /* objects one resolver will load */
#define ELF_MAX_DEPTH 64 /* DT_NEEDED chain length followed */

/*
 * One object in a resolved DT_NEEDED graph.  The root (index 0) is the file
 * asked about; every other entry is a library, listed once, in the loader's
 * breadth-first order.
 */
struct elf_lib {
	char *name; /* the DT_NEEDED string (the path for the root) */
	char *path; /* where it was found, NULL when not found */
	const char *how; /* "root", "rpath", "runpath", "LD_LIBRARY_PATH",
			    "ld.so.cache", "default", "path", "loaded" */
	int parent; /* index of the first object that needed it, -1 for the root */
	unsigned depth; /* 0 for the root */
	/*
	 * Already in the process before this tree was resolved (loaded by
	 * the interpreter or an earlier extension): costs nothing now and is
	 * not followed further.
	 */
	bool preloaded;
	const struct elf_facts *facts; /* owned by the resolver (or where it detached them); NULL when not found */
	char *error; /* why it was not found or not readable */
};

struct elf_tree {
	struct elf_lib *libs;
	size_t nr, alloc;
	struct strvec warnings; /* caps hit, loops cut, candidates skipped */
};

void elf_tree_init(struct elf_tree *t);
void elf_tree_release(struct elf_tree *t);
/* Totals over the objects this tree newly loads (root included, preloaded not). */
struct elf_totals {
	size_t objects;
	size_t missing;
	int64_t file_bytes;
	uint64_t mapped_bytes;
	size_t relocs;
	size_t dynsyms;
};
void elf_tree_totals(const struct elf_tree *t, bool include_root, struct elf_totals *out);

/*
 * The resolver: the search configuration, an inspection cache (each file is
 * read once) and the set of objects already loaded in the modelled process.
 */
struct elf_cached;
struct elf_loaded;

struct elf_resolver {
	/* Configuration; set after elf_resolver_init, before resolving. */
	struct strvec ld_library_path; /* from $LD_LIBRARY_PATH by default */
	char *ldcache_path; /* "/etc/ld.so.cache"; NULL to skip the cache */
	char *sysroot; /* prefix for the cache and default dirs, "" by default */
	/* Private. */
	struct elf_ldcache ldcache;
	int ldcache_state; /* 0 not loaded, 1 loaded, -1 unreadable */
	struct elf_cached *cached;
	size_t nr_cached, alloc_cached;
	struct elf_loaded *loaded;
	size_t nr_loaded, alloc_loaded;
};

void elf_resolver_init(struct elf_resolver *r);
void elf_resolver_release(struct elf_resolver *r);
/* Forgets which objects are loaded (the inspection cache stays). */
void elf_resolver_unload(struct elf_resolver *r);
/*
 * Hands every struct elf_facts the resolver has read to into, which takes
 * ownership: the trees and interpreter facts filled so far keep pointing at
 * them.  The resolver is left with nothing loaded and an empty inspection
 * cache (resolving again reads the files anew).
 */
void elf_resolver_detach_facts(struct elf_resolver *r, struct elf_facts_list *into);
/*
 * Inspects path through the cache.  Returns the facts (owned by r) or NULL
 * with err set.
 */
const struct elf_facts *elf_resolver_inspect(struct elf_resolver *r, const char *path, struct buf *err);
/*
 * Loads path and everything it needs into the modelled process and fills
 * out (which must be initialised).  Libraries already loaded appear once,
 * marked preloaded, and are not followed.  Returns 0 (missing libraries are
 * entries with path == NULL, not errors), or -1 when path itself cannot be
 * read, with err set.
 */
int elf_resolve(struct elf_resolver *r, const char *path, struct elf_tree *out, struct buf *err);

#endif
