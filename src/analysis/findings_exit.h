/*
 * The findings about how the run ended during import: config-rejected (the
 * target exited with EX_CONFIG from an import) and oom-during-import (the
 * kernel killed it for memory while it imported).
 */
#ifndef COLDSTART_FINDINGS_EXIT_H
#define COLDSTART_FINDINGS_EXIT_H

#include "analysis/findings.h"

/* The rules config-rejected, oom-during-import, in that order (docs/findings.md). */
extern const struct finding_rules findings_exit_rules;

#endif
