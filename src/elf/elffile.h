/*
 * Facts about one ELF file (a native extension, a library, the interpreter)
 * read with libelf.  The modules around it: elf_ldcache (/etc/ld.so.cache),
 * elf_resolve (DT_NEEDED followed as glibc's loader does), elf_python (the
 * interpreter's facts) and elf_json (all of them as JSON).
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
int elf_inspect_mem(const char *name, const void *data, size_t size, struct elf_facts *out, struct buf *err);

/* True when the facts describe something that has symbols or debug info. */
bool elf_facts_unstripped(const struct elf_facts *f);
/* Bytes a strip would remove (symbol table and debug sections). */
uint64_t elf_facts_strippable_bytes(const struct elf_facts *f);
/* "x86-64", "AArch64", ... or "machine 183". */
const char *elf_machine_name(unsigned machine, char *scratch, size_t len);

/*
 * Replaces control bytes and bytes that are not valid UTF-8 with '?', so
 * that what a file says can be printed and written to JSON (which must be
 * UTF-8) and read back.  Every string taken from a file goes through it.
 */
void elf_sanitize(char *s, size_t len);

/* a + b, saturating at UINT64_MAX: sizes from hostile files are summed. */
static inline uint64_t elf_add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

#endif
