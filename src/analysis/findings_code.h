/*
 * The findings about what module code does when it is imported:
 * import-side-effect (network, subprocesses, file writes, sleeps at module
 * scope, from the tracer's audit events) and compiled-at-startup (modules
 * compiled from source because no usable bytecode was there).
 */
#ifndef COLDSTART_FINDINGS_CODE_H
#define COLDSTART_FINDINGS_CODE_H

#include "analysis/findings.h"

/* The rules import-side-effect, compiled-at-startup, in that order (docs/findings.md). */
extern const struct finding_rules findings_code_rules;

#endif
