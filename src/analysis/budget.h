/*
 * Import-time budgets for CI: "total=300ms", "MODULE=50ms" and forbidden
 * modules, checked against a profile's main process.  With repeated runs the
 * median across measured runs is what must fit the budget.
 *
 * src/session/show.c (--budget/--forbid of profile, parse, report and docker) and
 * cmd_check.c call exactly these functions.
 */
#ifndef COLDSTART_BUDGET_H
#define COLDSTART_BUDGET_H

#include "model/profile.h"

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
 * of a submodule, in any process) to explain, then a warning line per
 * budget that names a module no measured run imported.  Returns 0
 * when everything fits, 1 when something failed, -1 when p has no measured
 * run to check.
 */
int budget_check(const struct profile *p, const struct budget *b, struct buf *explain);

/* The verdict on one rule, for commands that show it their own way. */
struct budget_verdict {
	const char *name; /* "total", a module; borrowed from the budget */
	bool forbid; /* a --forbid rule, else a --budget */
	bool failed;
	bool seen; /* imported by the main process (a forbidden module: anywhere) */
	/*
	 * A module budget whose module no process of any measured run
	 * imported: it cannot fail, which is most often a typo.
	 */
	bool unknown;
	struct buf text; /* "13.4 ms <= 300.0 ms", "not imported", "asyncio imported via app > asyncio" */
};

struct budget_verdicts {
	struct budget_verdict *v; /* budgets in order, then forbidden modules */
	size_t nr, alloc;
	size_t failed, unknown; /* how many failed; how many budgets name no module seen */
};

#define BUDGET_VERDICTS_INIT                                                                                           \
	{                                                                                                              \
		0                                                                                                      \
	}

/*
 * Judges every rule of b against p into out (BUDGET_VERDICTS_INIT); 0, or
 * -1 with err when p holds no measured run.
 */
int budget_judge(const struct profile *p, const struct budget *b, struct budget_verdicts *out, struct buf *err);
void budget_verdicts_release(struct budget_verdicts *vs);
/* The warning for an unknown budget (v->unknown), without a newline. */
void budget_warning(const struct budget_verdict *v, struct buf *out);

#endif
