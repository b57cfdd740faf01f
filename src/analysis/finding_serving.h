/*
 * heavy-import's advice for a server or framework that serves the requests
 * (uvicorn, gunicorn, flask, django, fastapi, fdk, ...): start-up cannot
 * defer it, so "import it inside the function that uses it" would only move
 * its cost to the first request (docs/findings.md).
 */
#ifndef COLDSTART_FINDING_SERVING_H
#define COLDSTART_FINDING_SERVING_H

#include <stdbool.h>

#include "model/profile.h"

/*
 * When module (a dotted name) belongs to such a package, appends the fix a
 * server can follow to fix and returns true; else false, fix untouched.
 */
bool finding_serving_fix(struct buf *fix, const struct profile *p, const char *module);

#endif
