/*
 * What `coldstart plan` does with a recorded plan and its runs of the
 * target: reading the plan back, the exit status and message of a run that
 * failed, and --verify: replaying the requests with and without the plan and,
 * when a response differs, bisecting the deferred modules (and the lazy
 * from-imports) for every one to keep eager (docs/plan.md).
 */
#ifndef COLDSTART_PLAN_VERIFY_H
#define COLDSTART_PLAN_VERIFY_H

#include <jansson.h>
#include <regex.h>
#include <stddef.h>

#include "plan/plan_target.h"
#include "plan/plan_files.h"
#include "util.h"

#define PLAN_FORMAT "coldstart-plan"
#define PLAN_VERSION 1

/* The parts of a plan the command reads back. */
struct plan_doc {
	json_t *root;
	json_t *modules;
};

/* The string (or "") and integer (or 0) field key of a plan's module m. */
const char *plan_mod_str(json_t *m, const char *key);
int64_t plan_mod_int(json_t *m, const char *key);

/*
 * Reads the plan at path into d.  Returns -1 for a file that is not a plan,
 * -2 when the bootstrap wrote why the interpreter cannot be planned (the
 * message in err either way).
 */
int plan_load(const char *path, struct plan_doc *d, struct buf *err);

/*
 * Writes root to path, a new file (O_EXCL|O_NOFOLLOW: a file or link
 * already there is removed first, never written through).  For the files
 * of a run's private directory.  0, or -1 with a message in err.
 */
int plan_write_json(json_t *root, const char *path, struct buf *err);

/* The target of `coldstart plan` and the three environments it runs in. */
struct plan_run {
	struct plan_target t;
	struct strvec argv;
	struct strvec env_plain; /* the target's own environment */
	struct strvec env_record;
	struct strvec env_apply;
	struct plan_body *bodies;
	size_t nr_bodies;
	/* --mask: what is replaced by "<masked>" in responses before they are compared. */
	regex_t *masks;
	size_t nr_masks;
	/*
	 * --verify: the working directory as the recording found it; every
	 * run that does not record starts from it, and what it wrote there is
	 * part of its answer.  NULL: not compared.
	 */
	struct plan_files *files;
	char host[256];
	char path[1024];
};

/* The exit status for a run that ended with st. */
int plan_exit_for(enum plan_status st);

/*
 * Appends to out "what: err" and, unless interrupted, the target's last
 * stderr: the message a command prints for a run that failed.
 */
void plan_failure_message(struct buf *out, const char *what, enum plan_status st, const struct plan_outcome *o,
			  const struct buf *err);

/*
 * The status a caller of the target sees in a normalised response: the
 * HTTP status, or an Fn function's Fn-Http-Status; 0 for a run-to-exit
 * target's output.
 */
int plan_response_status(const struct buf *resp);

/* Runs the target once with env (recording to record, or NULL); fills o. */
enum plan_status plan_run_once(struct plan_run *r, const struct strvec *env, const char *record, struct plan_outcome *o,
			       struct buf *err);

/*
 * Verifies the plan in tmp against runs without it.  Returns EXIT_OK when
 * every response is the same, or once the modules whose laziness changed
 * one are kept eager (each named on stdout; tmp and d are that plan then);
 * EXIT_FAIL when no such plan is found (output is the plan file that was
 * not written), or the exit status of a run that failed; then err says why
 * (empty when interrupted) and the command prints it.  A plan verified
 * at once then loads at once the deferred modules that a run with it
 * forces before the first response anyway, when that plan verifies too
 * (d and tmp updated).
 */
int plan_verify(struct plan_run *r, const char *tmp, const char *output, struct plan_doc *d, struct buf *err);

#endif
