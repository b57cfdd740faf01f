/*
 * Native extensions in a profile: ELF facts for every extension module the
 * profiled process loaded, joined with the measured load time, rendered as
 * a report section, turned into findings, and written as JSON.
 *
 * struct profile has no field for these facts yet, so they live in a side
 * table keyed by the profile's address: elf_annotate_profile fills it,
 * elf_native_forget frees it (call it before profile_release).  Nothing here
 * prints; problems become profile warnings or lines in err.
 */
#ifndef COLDSTART_ELF_REPORT_H
#define COLDSTART_ELF_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "elffile.h"
#include "findings.h"
#include "profile.h"

/* Thresholds of the findings (documented in docs/inspect.md). */
#define ELF_HEAVY_LOAD_US 5000 /* native-heavy-load: measured load time */
#define ELF_HEAVY_BYTES (8 * 1024 * 1024) /* ... or bytes newly mapped */
#define ELF_HEAVY_RELOCS 20000 /* ... or relocations newly processed */
#define ELF_UNSTRIPPED_BYTES (64 * 1024) /* native-unstripped: strippable bytes */

/* One extension module loaded in one process of the profile. */
struct elf_native_ext {
	size_t run, proc; /* indexes into p->runs and run->procs */
	int32_t node; /* index into proc->nodes */
	char *module; /* "numpy.core._multiarray_umath" */
	char *file; /* the .so */
	int64_t load_us; /* measured load time, UNKNOWN when not measured */
	struct elf_tree tree; /* libs[0] is the extension itself */
	char *error; /* why the file could not be read, or NULL */
};

struct elf_native {
	const struct profile *owner;
	struct elf_resolver resolver;
	struct elf_python py; /* valid when has_python */
	bool has_python;
	struct elf_native_ext *exts;
	size_t nr, alloc;
	/* Facts read back from JSON (elf_native_from_json); owned here. */
	struct elf_facts **owned;
	size_t nr_owned, alloc_owned;
};

/* The side table entry of p, NULL when p was never annotated. */
struct elf_native *elf_native_get(const struct profile *p);
/* Frees p's side table entry, if any. */
void elf_native_forget(const struct profile *p);

/*
 * For every node with NODE_NATIVE and a file (imp_timing.file) in every
 * process of the first measured run, reads the .so and resolves what it
 * needs, modelling the process: the interpreter (p->python) and earlier
 * extensions load first, so libraries they brought are "already loaded".
 * Unreadable files are noted in err (one line each) and kept with an error.
 */
void elf_annotate_profile(struct profile *p, struct buf *err);
/* Renders the "native extensions" section; nothing when there are none. */
void elf_report_section(const struct profile *p, struct buf *out);
/*
 * The rules native-heavy-load, native-unstripped and native-duplicate-library,
 * for findings_run: they find nothing in a profile that was not annotated.
 */
extern const struct finding_rules elf_finding_rules;
/* Appends {"python":...,"extensions":[...]} or null when not annotated. */
void elf_native_to_json(const struct profile *p, struct buf *out);
/*
 * Restores what elf_native_to_json wrote as p's side table entry (replacing
 * any).  Returns 0, or -1 with err set.
 */
int elf_native_from_json(struct profile *p, const char *text, size_t len, struct buf *err);

/* Text helpers shared with `coldstart inspect`. */
/* "7.1 MiB, 4 segments, 12345 relocs (10000 relative), 1234 dynsyms, stripped" */
void elf_render_facts_line(const struct elf_facts *f, struct buf *out);
/* The DT_NEEDED tree below the root, one indented line per object. */
void elf_render_tree(const struct elf_tree *t, const char *indent, struct buf *out);
/* "needs libblas.so.3 (0.5 MiB, 1.2k relocs), libgfortran.so.5 (...)" or "" */
void elf_render_needs_summary(const struct elf_tree *t, size_t max, struct buf *out);

#endif
