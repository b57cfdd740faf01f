/*
 * JSON of the ELF modules: facts (elffile.h), resolved trees (elf_resolve.h)
 * and interpreter facts (elf_python.h).  Writers append to a buf; readers
 * ignore unknown keys, so older readers accept newer files, and return 0 or
 * -1 with err set.  Facts read back are owned by a struct elf_facts_list.
 */
#ifndef COLDSTART_ELF_JSON_H
#define COLDSTART_ELF_JSON_H

#include "elf/elf_python.h"
#include "elf/elf_resolve.h"
#include "elf/elffile.h"
#include "util.h"

/* Appends the facts as one JSON object. */
void elf_facts_to_json(const struct elf_facts *f, struct buf *out);
/* Reads what elf_facts_to_json wrote into out (released first). */
int elf_facts_from_json(const char *text, size_t len, struct elf_facts *out, struct buf *err);

/* Appends the tree as a JSON array of objects (facts included). */
void elf_tree_to_json(const struct elf_tree *t, struct buf *out);
/*
 * Reads what elf_tree_to_json wrote into out (which must be initialised);
 * the facts it reads are appended to owner, which owns them.  A root without
 * facts leaves out empty.  On error out is left empty.
 */
int elf_tree_from_json(const char *text, size_t len, struct elf_tree *out, struct elf_facts_list *owner,
		       struct buf *err);

/* Appends the interpreter facts as one JSON object. */
void elf_python_to_json(const struct elf_python *py, struct buf *out);
/* Reads what elf_python_to_json wrote into py (released first); facts go to owner. */
int elf_python_from_json(const char *text, size_t len, struct elf_python *py, struct elf_facts_list *owner,
			 struct buf *err);

#endif
