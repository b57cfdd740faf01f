/*
 * heavy-import: the modules that take a large share of a process's import
 * time, with a fix that fits where they are imported from (a server's own
 * packages get finding_serving.h's advice).
 */
#ifndef COLDSTART_FINDINGS_HEAVY_H
#define COLDSTART_FINDINGS_HEAVY_H

#include "analysis/findings.h"

/* The rules heavy-import and gc-pauses, in that order (docs/findings.md). */
extern const struct finding_rules findings_heavy_rules;

#endif
