/*
 * heavy-import's advice for the packages that serve the requests (servers,
 * web and function frameworks): what a server can do about them.
 */
#include "analysis/finding_serving.h"

#include <string.h>

/*
 * Packages that serve the requests themselves (servers, web and function
 * frameworks): start-up cannot defer them, so "import it inside the function
 * that uses it" would only move their cost to the first request.
 */
static const char *const serving_packages[] = {
	"aiohttp", "bottle",   "cherrypy",  "django",	"falcon",   "fastapi", "fdk",
	"flask",   "gunicorn", "hypercorn", "pyramid",	"quart",    "sanic",   "starlette",
	"tornado", "twisted",  "uvicorn",   "waitress", "werkzeug",
};

static bool serves_requests(const char *module)
{
	size_t len = strcspn(module, "."), i;

	for (i = 0; i < ARRAY_SIZE(serving_packages); i++)
		if (strlen(serving_packages[i]) == len && !strncmp(module, serving_packages[i], len))
			return true;
	return false;
}

/* Whether the target is run by gunicorn (its argv names it), where --preload is the lever. */
static bool under_gunicorn(const struct profile *p)
{
	size_t i;

	for (i = 0; i < p->target.nr && i < 3; i++)
		if (strstr(p->target.v[i], "gunicorn"))
			return true;
	return false;
}

/*
 * Whether the target served: a run became ready or listened (--ready), or ran
 * until coldstart stopped it or --timeout ended it.  A command that did its
 * work and exited (`manage.py check`, a migration) serves no request, whatever
 * framework it imports.
 */
static bool target_served(const struct profile *p)
{
	size_t i;

	for (i = 0; i < p->nr_runs; i++) {
		const struct run *r = &p->runs[i];

		if (r->ready_us >= 0 || r->listening_us >= 0 || r->status == RUN_STOPPED || r->status == RUN_TIMEOUT ||
		    r->status == RUN_NOT_RUN)
			return true;
	}
	return under_gunicorn(p);
}

bool finding_serving_fix(struct buf *fix, const struct profile *p, const char *nm)
{
	int len = (int)strcspn(nm, ".");

	if (!serves_requests(nm) || !target_served(p))
		return false;
	if (len == 3 && !strncmp(nm, "fdk", 3)) {
		buf_addf(fix,
			 "the function cannot answer without '%s', so do not defer it; run the function behind "
			 "coldstart-fdk (docs/fdk.md), which is ready before it imports the function and the parts "
			 "of the FDK a call needs",
			 nm);
		return true;
	}
	buf_addf(fix,
		 "'%s' serves the requests, so start-up needs it (imported later, it would only move its cost "
		 "to the first request); trim what it brings instead ('coldstart why %.*s PROFILE' lists what "
		 "only it imports) and import what only some handlers need inside those handlers",
		 nm, len, nm);
	if (under_gunicorn(p))
		buf_adds(fix, "; gunicorn --preload imports the app once in the master, so every worker forks with it "
			      "loaded");
	return true;
}
