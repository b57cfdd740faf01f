/*
 * Facts about ELF files (native extensions, their libraries, the interpreter)
 * read with libelf, and a resolver that follows DT_NEEDED the way glibc's
 * dynamic loader does: RPATH/RUNPATH with $ORIGIN, LD_LIBRARY_PATH,
 * /etc/ld.so.cache, then the default directories.
 *
 * Nothing here prints or exits.  Functions that can fail return -1 and put a
 * lowercase message quoting the file into the caller's struct buf err, e.g.
 * "cannot read 'x.so': not an ELF file".  Every offset, count and string
 * index taken from a file is checked against the file's size before use, so
 * hostile files give an error (or a warning in elf_facts.warnings), never a
 * crash, a hang or an unbounded allocation.
 *
 * (Named elffile, not elf: src/ is on the include path, and a src/elf.h would
 * shadow the system <elf.h> that <libelf.h> and <gelf.h> include.)
 */
#ifndef COLDSTART_ELFFILE_H
#define COLDSTART_ELFFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util.h"

/* Caps that keep hostile files bounded; exceeding one is a warning. */
#define ELF_MAX_NEEDED 1024 /* DT_NEEDED entries kept per object */
#define ELF_MAX_STRING 4096 /* longest name or path kept from a file */
#define ELF_MAX_OBJECTS 4096 /* objects one resolver will load */
#define ELF_MAX_DEPTH 64 /* DT_NEEDED chain length followed */

/*
 * What one ELF file says about itself.  Every string is owned by the struct
 * and freed by elf_facts_release; NULL means absent.  Counts are 0 when the
 * file has no such thing.
 */
struct elf_facts {
	char *path; /* as given to elf_inspect_file */
	int64_t file_size; /* bytes on disk */
	int elf_class; /* 32 or 64 */
	bool big_endian;
	unsigned machine; /* e_machine, EM_* */
	unsigned type; /* e_type, ET_* */

	size_t nr_load; /* PT_LOAD segments */
	uint64_t load_filesz; /* sum of their p_filesz (saturating) */
	uint64_t load_memsz; /* sum of their p_memsz: what is mapped */
	char *interp; /* PT_INTERP, executables only */

	char *soname; /* DT_SONAME */
	char *rpath; /* DT_RPATH (colon-separated, unexpanded) */
	char *runpath; /* DT_RUNPATH */
	struct strvec needed; /* DT_NEEDED in file order */

	size_t nr_relocs; /* entries in allocated SHT_REL/SHT_RELA sections */
	size_t nr_plt_relocs; /* of which in .rela.plt / .rel.plt */
	size_t nr_relative; /* DT_RELACOUNT or DT_RELCOUNT (cheap ones) */
	size_t nr_dynsyms; /* .dynsym entries, the null symbol included */
	size_t nr_symtab; /* .symtab entries; 0 when stripped */
	uint64_t symtab_bytes; /* .symtab plus its string table */
	size_t nr_debug_sections; /* .debug_* and .zdebug_* */
	uint64_t debug_bytes; /* their size in the file */
	bool has_debuglink; /* .gnu_debuglink: debug info shipped apart */
	char *build_id; /* NT_GNU_BUILD_ID as lowercase hex */

	/* Interpreter facts. */
	char *libpython; /* the DT_NEEDED entry naming libpython */
	bool defines_python; /* defines Py_Initialize: libpython is in here */
	char *py_version; /* "3.11.2" from read-only data, when defines_python */

	struct strvec warnings; /* oddities that did not stop the reading */
};

void elf_facts_init(struct elf_facts *f);
void elf_facts_release(struct elf_facts *f);

/*
 * Facts that trees and interpreter facts point at, held by whoever keeps
 * those (a profile's native extensions): filled from a resolver
 * (elf_resolver_detach_facts) or from JSON.
 */
struct elf_facts_list {
	struct elf_facts **v;
	size_t nr, alloc;
};
/* Frees every struct elf_facts in l and the list itself (l can be reused). */
void elf_facts_list_release(struct elf_facts_list *l);

/*
 * Reads path (regular files only; FIFOs and devices are refused without
 * blocking).  Returns 0 with out filled, or -1 with err set and out left
 * initialised.  out must be initialised (or released) before the call.
 */
int elf_inspect_file(const char *path, struct elf_facts *out, struct buf *err);
/*
 * The same over memory, for tests and the fuzzer; name is used in messages
 * and stored as out->path.  data is not modified and not kept.
 */
int elf_inspect_mem(const char *name, const void *data, size_t size,
		    struct elf_facts *out, struct buf *err);

/* True when the facts describe something that has symbols or debug info. */
bool elf_facts_unstripped(const struct elf_facts *f);
/* Bytes a strip would remove (symbol table and debug sections). */
uint64_t elf_facts_strippable_bytes(const struct elf_facts *f);
/* "x86-64", "AArch64", ... or "machine 183". */
const char *elf_machine_name(unsigned machine, char *scratch, size_t len);

/* Appends the facts as one JSON object. */
void elf_facts_to_json(const struct elf_facts *f, struct buf *out);
/*
 * Reads what elf_facts_to_json wrote.  Unknown keys are ignored, so older
 * readers accept newer files.  Returns 0, or -1 with err set.
 */
int elf_facts_from_json(const char *text, size_t len, struct elf_facts *out, struct buf *err);

/*
 * /etc/ld.so.cache in the "glibc-ld.so.cache1.1" format (also after an old
 * "ld.so-1.7.0" table).  Entries keep the file's order, which is the order
 * the loader prefers.
 */
struct elf_ldcache_entry {
	const char *key; /* soname, points into data */
	const char *value; /* path, points into data */
	int32_t flags;
	uint64_t hwcap;
};

struct elf_ldcache {
	struct buf data;
	struct elf_ldcache_entry *entries;
	size_t nr, alloc;
};

void elf_ldcache_init(struct elf_ldcache *c);
void elf_ldcache_release(struct elf_ldcache *c);
/* Returns 0, or -1 with err set; c is left empty on error. */
int elf_ldcache_load(struct elf_ldcache *c, const char *path, struct buf *err);
/* Parses a copy of data (for tests and the fuzzer). */
int elf_ldcache_parse(struct elf_ldcache *c, const void *data, size_t len, struct buf *err);

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
	const struct elf_facts *facts; /* owned by the resolver; NULL when not found */
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
/* Appends the tree as a JSON array of objects (facts included). */
void elf_tree_to_json(const struct elf_tree *t, struct buf *out);
/*
 * Reads what elf_tree_to_json wrote into out (which must be initialised);
 * the facts it reads are appended to owner, which owns them.  A root without
 * facts leaves out empty.  Returns 0, or -1 with err set and out empty.
 */
int elf_tree_from_json(const char *text, size_t len, struct elf_tree *out,
		       struct elf_facts_list *owner, struct buf *err);

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
const struct elf_facts *elf_resolver_inspect(struct elf_resolver *r, const char *path,
					     struct buf *err);
/*
 * Loads path and everything it needs into the modelled process and fills
 * out (which must be initialised).  Libraries already loaded appear once,
 * marked preloaded, and are not followed.  Returns 0 (missing libraries are
 * entries with path == NULL, not errors), or -1 when path itself cannot be
 * read, with err set.
 */
int elf_resolve(struct elf_resolver *r, const char *path, struct elf_tree *out, struct buf *err);

/*
 * Interpreter facts: follows a symlinked interpreter, reads it, and when it
 * needs libpython, resolves and reads that too.
 */
struct elf_python {
	char *exe; /* the real path of the interpreter binary */
	char *libpython; /* real path of libpython, NULL when static */
	bool shared; /* libpython is a shared library */
	char *version; /* "3.11.2", or "3.13" from the soname, NULL */
	const struct elf_facts *exe_facts; /* owned by the resolver */
	const struct elf_facts *lib_facts; /* NULL when static */
};

void elf_python_init(struct elf_python *py);
void elf_python_release(struct elf_python *py);
/*
 * Fills py for the interpreter at path, loading it (and its libraries) into
 * the resolver's modelled process so later extensions see them as
 * preloaded.  Returns 0, or -1 with err set when path is not a readable ELF
 * executable.
 */
int elf_python_inspect(struct elf_resolver *r, const char *path, struct elf_python *py,
		       struct buf *err);
void elf_python_to_json(const struct elf_python *py, struct buf *out);
/*
 * Reads what elf_python_to_json wrote into py (released first); the facts go
 * to owner, as for elf_tree_from_json.  Returns 0, or -1 with err set.
 */
int elf_python_from_json(const char *text, size_t len, struct elf_python *py,
			 struct elf_facts_list *owner, struct buf *err);

#endif
