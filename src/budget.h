/*
 * Import-time budgets for CI: "total=300ms", "MODULE=50ms" and forbidden
 * modules, checked against a profile's main process.  With repeated runs the
 * median across measured runs is what must fit the budget.
 *
 * src/show.c (--budget/--forbid of profile, parse, report and docker) and
 * cmd_check.c call exactly these functions.
 */
#ifndef COLDSTART_BUDGET_H
#define COLDSTART_BUDGET_H

#include "profile.h"

struct budget_item {
	char *name; /* "total", "startup" (interpreter start-up) or a module name */
	int64_t limit_us;
};

struct budget {
	struct budget_item *items;
	size_t nr, alloc;
	struct strvec forbid;
};

void budget_init(struct budget *b);
void budget_release(struct budget *b);
/* Adds "NAME=DUR" (DUR like 300ms, 1.5s, 800us); -1 with err on bad syntax. */
int budget_add(struct budget *b, const char *spec, struct buf *err);
void budget_forbid(struct budget *b, const char *module);
/*
 * Checks p; appends one line per budget ("ok"/"FAIL", measured vs limit) and
 * per forbidden module (with the import chain of the first import of it or
 * of a submodule, in any process) to explain.  Returns 0
 * when everything fits, 1 when something failed, -1 when p has no measured
 * run to check.
 */
int budget_check(const struct profile *p, const struct budget *b, struct buf *explain);

#endif
