/*
 * Native extensions in a profile: fills the profile's native set (native.h)
 * with ELF facts for every extension module the profiled process loaded,
 * joined with the measured load time; renders it as a report section and
 * turns it into findings.  Nothing here prints; problems become lines in err.
 */
#ifndef COLDSTART_ELF_REPORT_H
#define COLDSTART_ELF_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "elf/elf_resolve.h"
#include "elf/elffile.h"
#include "analysis/findings.h"
#include "model/profile.h"

/* Thresholds of the findings (documented in docs/inspect.md). */
#define ELF_HEAVY_LOAD_US 5000 /* native-heavy-load: measured load time */
#define ELF_HEAVY_BYTES (8 * 1024 * 1024) /* ... or bytes newly mapped */
#define ELF_HEAVY_RELOCS 20000 /* ... or relocations newly processed */
#define ELF_UNSTRIPPED_BYTES (64 * 1024) /* native-unstripped: strippable bytes */

/*
 * For every node with NODE_NATIVE and a file (imp_timing.file) in every
 * process of the first measured run, reads the .so and resolves what it
 * needs, modelling the process: the interpreter (p->python) and earlier
 * extensions load first, so libraries they brought are "already loaded".
 * Each file that cannot be read, and an interpreter that cannot be inspected,
 * adds one message to problems (the extension is kept with its error).
 * Replaces what p->native held; the profile owns the facts.
 */
void elf_annotate_profile(struct profile *p, struct strvec *problems);
/*
 * Renders the "native extensions" section, the top extensions by load time
 * and how many more there are; nothing when there are none.
 */
void elf_report_section(const struct profile *p, size_t top, struct buf *out);
/*
 * The rules native-heavy-load, native-unstripped and native-duplicate-library,
 * for findings_run: they find nothing in a profile that was not annotated.
 */
extern const struct finding_rules elf_finding_rules;
/* Text helpers shared with `coldstart inspect`. */
/* "7.1 MiB, 4 segments, 12345 relocs (10000 relative), 1234 dynsyms, stripped" */
void elf_render_facts_line(const struct elf_facts *f, struct buf *out);
/* The DT_NEEDED tree below the root, one indented line per object. */
void elf_render_tree(const struct elf_tree *t, const char *indent, struct buf *out);
/* "needs libblas.so.3 (0.5 MiB, 1.2k relocs), libgfortran.so.5 (...)" or "" */
void elf_render_needs_summary(const struct elf_tree *t, size_t max, struct buf *out);

#endif
