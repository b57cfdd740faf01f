/*
 * The finding that points at start-up plans: pure-Python library imports
 * that ran before a target's first response, which `coldstart plan` would
 * sort into used and deferrable (docs/plan.md, docs/findings.md).
 */
#ifndef COLDSTART_PLAN_FINDING_H
#define COLDSTART_PLAN_FINDING_H

/* Registers the `startup-plan` rule with findings.c; safe to repeat. */
void plan_register_findings(void);

#endif
