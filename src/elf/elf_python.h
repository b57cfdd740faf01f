/*
 * Facts about a Python interpreter, read through the resolver: its binary,
 * libpython shared or static, its version.  Nothing here prints.
 */
#ifndef COLDSTART_ELF_PYTHON_H
#define COLDSTART_ELF_PYTHON_H

#include <stdbool.h>

#include "elf/elf_resolve.h"
#include "elf/elffile.h"
#include "util.h"

/*
 * Interpreter facts: follows a symlinked interpreter, reads it, and when it
 * needs libpython, resolves and reads that too.
 */
struct elf_python {
	char *exe; /* the real path of the interpreter binary */
	char *libpython; /* real path of libpython, NULL when static */
	bool shared; /* libpython is a shared library */
	char *version; /* "3.11.2", or "3.13" from the soname, NULL */
	const struct elf_facts *exe_facts; /* owned by the resolver (or where it detached them) */
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
int elf_python_inspect(struct elf_resolver *r, const char *path, struct elf_python *py, struct buf *err);

#endif
