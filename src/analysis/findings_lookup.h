/*
 * The findings about the import system's lookups: slow-finders (finding
 * modules on sys.path costs a large share of import time) and
 * failed-imports (imports that raised and were caught, and what they cost).
 */
#ifndef COLDSTART_FINDINGS_LOOKUP_H
#define COLDSTART_FINDINGS_LOOKUP_H

#include "analysis/findings.h"

/* The rules slow-finders, failed-imports, in that order (docs/findings.md). */
extern const struct finding_rules findings_lookup_rules;

#endif
