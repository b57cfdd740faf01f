/*
 * A small long-option parser shared by the commands: "--name value",
 * "--name=value", short aliases, and flags.  It stops at the first argument
 * that is not an option (or at "--"), so a target's own arguments are never
 * taken for coldstart's.
 */
#ifndef COLDSTART_ARGS_H
#define COLDSTART_ARGS_H

#include "util.h"

struct opt {
	const char *long_name; /* without "--" */
	char short_name; /* 0 for none */
	int takes_value;
	/* Called with the value (NULL for flags); returns 0 or -1 with err filled. */
	int (*fn)(void *ctx, const char *value, struct buf *err);
	const char *help_arg; /* e.g. "PATH" */
	const char *help;
};

/*
 * Parses options from argv[*i] on, advancing *i past them.  Returns 0 when a
 * non-option (or "--", left in place) is reached or argv ends, 1 when
 * --help was given, -1 on a usage error with a message in err.  Arguments
 * listed in stop_at (e.g. "-m", "-c") also end option parsing.
 */
int args_parse(const struct opt *opts, void *ctx, int argc, char **argv, int *i,
	       const char *const *stop_at, struct buf *err);
/*
 * Parses options anywhere among argv[1..]: non-options (and everything after
 * "--") are collected in positional.  Same returns as args_parse.
 */
int args_parse_all(const struct opt *opts, void *ctx, int argc, char **argv, struct strvec *positional,
		   struct buf *err);
/* Writes "  --name VALUE   help" lines for every option. */
void args_help(const struct opt *opts, struct buf *out);

#endif
