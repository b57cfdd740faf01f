/*
 * What every command does to a fresh profile before showing it: classify
 * nodes, check consistency, and run the findings rules.
 */
#ifndef COLDSTART_ANALYZE_H
#define COLDSTART_ANALYZE_H

#include "model/profile.h"

/*
 * Classifies every process of every run (start-up, stdlib, third-party, app),
 * records consistency violations as warnings, and (re)computes findings.
 * stdlib_names may be NULL (the built-in list is used).
 */
void profile_analyze(struct profile *p, const char *const *stdlib_names);
/* The same, with the interpreter's site-packages directories for classification. */
void profile_analyze_with(struct profile *p, const char *const *stdlib_names, const char *const *site_dirs);
/*
 * profile_analyze without reading the native extensions and the interpreter
 * the profile names (elf_annotate_profile opens and parses them): for the
 * fuzzers, where that reading of the machine's libraries cost a third of
 * every input and made the result depend on the machine.
 */
void profile_analyze_offline(struct profile *p, const char *const *stdlib_names);

#endif
