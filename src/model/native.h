/*
 * The native extensions of a profile, part of the model (struct profile's
 * field native): for every extension module a process of the first measured
 * run loaded, its measured load time, its ELF facts and the libraries it
 * brought into the process (elffile.h), and the interpreter's own facts.
 * elf_report.c fills it from the files on disk; the profile JSON carries it
 * (docs/profile-format.md).  Nothing here reads a .so or prints.
 */
#ifndef COLDSTART_NATIVE_H
#define COLDSTART_NATIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "elf/elf_python.h"
#include "elf/elf_resolve.h"
#include "elf/elffile.h"
#include "util.h"

/* One extension module loaded in one process of the profile. */
struct native_ext {
	size_t run, proc; /* indexes into p->runs and run->procs */
	int32_t node; /* index into proc->nodes */
	char *module; /* "numpy.core._multiarray_umath" */
	char *file; /* the .so */
	int64_t load_us; /* measured load time, -1 (UNKNOWN) when not measured */
	struct elf_tree tree; /* libs[0] is the extension itself; empty on error */
	char *error; /* why the file could not be read, or NULL */
};

struct native_set {
	/* Filled by an analysis or read back; a profile never analysed writes null. */
	bool annotated;
	struct elf_python py; /* valid when has_python */
	bool has_python;
	struct native_ext *exts;
	size_t nr, alloc;
	/* Every struct elf_facts that py and the trees point at. */
	struct elf_facts_list facts;
};

void native_set_init(struct native_set *n);
/* Frees everything n holds and leaves it as native_set_init does. */
void native_set_release(struct native_set *n);
/* Appends an extension: strings NULL, load_us -1, tree initialised. */
struct native_ext *native_set_add(struct native_set *n);

/* Appends {"python":...,"extensions":[...]}, or null when not annotated. */
void native_set_to_json(const struct native_set *n, struct buf *out);
/*
 * Replaces n with what native_set_to_json wrote ("null" leaves it empty).
 * Returns 0, or -1 with err set and n left empty.
 */
int native_set_from_json(struct native_set *n, const char *text, size_t len, struct buf *err);

#endif
