/*
 * Putting the plan `coldstart plan` made where the user asked for it.  The
 * plan and its code archive are written only in the run's private
 * directory (cmd_plan.c) until the plan is done; then each is moved to its
 * place, replacing what was there whole or not at all.
 */
#ifndef COLDSTART_PLAN_PLACE_H
#define COLDSTART_PLAN_PLACE_H

#include <jansson.h>

#include "util.h"

/*
 * Puts the recorded plan (root, read from tmp in the run's private
 * directory) at output with its code archive: the archive the recorder
 * wrote to code_tmp (none there: no archive) becomes code_out, and the
 * plan's "code" names it relative to the plan's directory, tmp rewritten
 * first.  Each file is renamed into place on the same file system, else
 * copied into a new file beside it (mkstemp: nothing planted there is
 * written through) with the source's mtime and renamed over it; its mode
 * is 0666 less the umask, as a file the command creates.  0, or -1 with
 * the first failure in err.
 */
int plan_place_finish(json_t *root, const char *tmp, const char *output, const char *code_tmp, const char *code_out,
		      struct buf *err);

#endif
