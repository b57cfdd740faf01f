/*
 * The finding that points at start-up plans: pure-Python library imports
 * that ran before a target's first response, which `coldstart plan` would
 * sort into used and deferrable (docs/plan.md, docs/findings.md).
 */
#ifndef COLDSTART_PLAN_FINDING_H
#define COLDSTART_PLAN_FINDING_H

#include "analysis/findings.h"

/* The `startup-plan` rule, as a table for findings_run (analyze.c runs it). */
extern const struct finding_rules plan_finding_rules;

#endif
