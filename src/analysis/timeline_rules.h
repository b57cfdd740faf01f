/*
 * The findings of the timeline (--timeline), a rule table for findings_run
 * (docs/findings.md).
 */
#ifndef COLDSTART_TIMELINE_RULES_H
#define COLDSTART_TIMELINE_RULES_H

#include "analysis/findings.h"

/* startup-work, startup-boto-client: at least this share of the time to ready, and this much. */
#define TL_RULE_SHARE_PCT 10
#define TL_RULE_MIN_US 10000
/* startup-django-admin and startup-regex fire from half of TL_RULE_MIN_US, whatever the share. */

extern const struct finding_rules timeline_finding_rules;

#endif
